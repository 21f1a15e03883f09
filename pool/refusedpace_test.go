package pool

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"pool/forge"
	"pool/forgejo"
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
