package pool

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"pool/forge"
	"pool/forgejo"
	"pool/lifecycle"
)

// TestARefusedPRIsNotReadAtThePaceAfterAMerge: PR 1's merge is refused for
// a rule (not enough approvals) whenever it is tried, and the forge takes
// two minutes to test the open PRs after a merge. PR 1 re-enters the merge
// queue after its refusal's hold, behind PR 2, which merges. The
// queue then reads PR 1 at its own doubling waits, not every pace (200
// ms) for queuePaceFor as the next PR after a merge: a PR the forge keeps
// refusing is no PR about to merge.
func TestARefusedPRIsNotReadAtThePaceAfterAMerge(t *testing.T) {
	clock := &virtualClock{at: time.Date(2026, 12, 4, 2, 0, 0, 0, time.UTC)}
	f := newFakeForge(1, 2)
	f.now = clock.now
	f.recheck = 2 * time.Minute
	refusal := forge.MergeResult{Status: 405, Message: "Not allowed to merge: not enough approvals"}
	refusal.Outcome, refusal.Rule = forgejo.ClassifyMerge(refusal.Status, refusal.Message), forge.RefusalRule(refusal.Status, refusal.Message)
	f.mergeAnswer = map[int]forge.MergeResult{1: refusal}
	f.review(1, "reviewer", forge.ReviewApproved)
	f.review(2, "reviewer", forge.ReviewApproved)
	cfg := testConfig(1)
	cfg.PollInterval = 5 * time.Second // the pace, 200 ms, is shorter than the poll
	p, err := New(context.Background(), cfg, Deps{Forge: f, Agent: newFakeAgent(nil), Now: clock.now,
		Log: slog.New(slog.NewTextHandler(&lockedBuffer{}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cycle := func() {
		t.Helper()
		if _, err := p.cycle(ctx, ctx); err != nil {
			t.Fatalf("cycle: %v", err)
		}
	}
	cycle()            // both queued
	p.merger.turn(ctx) // PR 1, the first: refused
	if p.queue.has(1) || !p.queue.has(2) || f.calls["merge"] != 1 {
		t.Fatalf("queued: PR 1 %v, PR 2 %v after %d merge calls; want PR 1 refused once and out of the queue", p.queue.has(1), p.queue.has(2), f.calls["merge"])
	}
	clock.add(time.Hour) // PR 1's hold is over
	cycle()              // PR 1 queued again, after PR 2
	if !p.queue.has(1) || !p.queue.has(2) {
		t.Fatalf("queued: PR 1 %v, PR 2 %v; want both", p.queue.has(1), p.queue.has(2))
	}
	p.merger.turn(ctx) // PR 2 merges; the forge tests PR 1 for two minutes
	if _, ok := f.merged[2]; !ok {
		t.Fatalf("PR 2 did not merge: %v", f.trail)
	}
	reads := 0
	for end := clock.now().Add(queuePaceFor); clock.now().Before(end); clock.add(100 * time.Millisecond) {
		before := len(f.trail)
		p.merger.turn(ctx)
		for _, e := range f.trail[before:] {
			if e == "read #1" {
				reads++
			}
		}
	}
	if reads > 10 {
		t.Errorf("PR 1 read %d times in the %s after PR 2's merge, want at most 10 (its own doubling waits, not every %s)", reads, queuePaceFor, queuePace)
	}
}

// TestAServerErrorKeepsAPRPaced: the loop queues a head whose merge the
// forge refused for a rule as one not read alone after a merge, and a head
// whose merge answered a server error (a 502 of a proxy) as any other: its
// next call may pass, and the pace is what merges it soonest.
func TestAServerErrorKeepsAPRPaced(t *testing.T) {
	for _, c := range []struct {
		name  string
		res   forge.MergeResult
		ruled bool
	}{
		{"not enough approvals", forge.MergeResult{Status: 405, Message: "Not allowed to merge: not enough approvals"}, true},
		{"bad gateway", forge.MergeResult{Status: 502, Message: "bad gateway"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeForge(1)
			p, err := New(context.Background(), testConfig(1), Deps{Forge: f, Agent: newFakeAgent(nil),
				Log: slog.New(slog.NewTextHandler(&lockedBuffer{}, nil))})
			if err != nil {
				t.Fatal(err)
			}
			pr, _ := f.PR(context.Background(), "o", "r", 1)
			res := c.res
			res.Outcome, res.Rule = forgejo.ClassifyMerge(res.Status, res.Message), forge.RefusalRule(res.Status, res.Message)
			tr, _ := p.mergeAnswered(1, pr.HeadSHA, res)
			if tr.Refusals != 1 {
				t.Fatalf("the track counts %d refusals, want 1", tr.Refusals)
			}
			if err := p.perform(context.Background(), pr, tr, lifecycle.Action{Kind: lifecycle.Merge}); err != nil {
				t.Fatal(err)
			}
			p.queue.mu.Lock()
			ruled := p.queue.entries[1].ruled
			p.queue.mu.Unlock()
			if ruled != c.ruled {
				t.Errorf("queued as refused for a rule: %v, want %v", ruled, c.ruled)
			}
		})
	}
}
