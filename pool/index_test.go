package pool

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"pool/forge"
	"pool/internal/syncbuf"
	"pool/lifecycle"
)

// TestSameSecondChangesAreNotMissed: the forge stamps updates in whole
// seconds. A PR read in the same second as a later change carries the same
// stamp; the index must read it again rather than trust its copy.
func TestSameSecondChangesAreNotMissed(t *testing.T) {
	second := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f := newFakeForge(1, 2)
	f.now = func() time.Time { return second } // every stamp and the forge clock: one second
	for _, pr := range f.prs {
		pr.Updated = second
	}
	p, err := New(context.Background(), testConfig(1), Deps{Forge: f, Agent: newFakeAgent(nil), Now: f.now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := p.listPRs(ctx); err != nil {
		t.Fatal(err)
	}
	// Within the same second: #1 gets a new head, #2 is merged.
	f.push(1, fakeSHA("sha-1-b"))
	f.mu.Lock()
	f.prs[2].Merged, f.prs[2].State = true, "closed"
	f.mu.Unlock()

	prs, err := p.listPRs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 || prs[0].Number != 1 || prs[0].HeadSHA != fakeSHA("sha-1-b") {
		t.Errorf("open PRs after same-second changes = %+v, want only #1 at sha-1-b", prs)
	}

	// Once the forge's clock has moved on, an unchanged PR is not read again.
	second = second.Add(2 * time.Second)
	before := f.calls["pr"]
	if _, err := p.listPRs(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.listPRs(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.calls["pr"] - before; got > 1 {
		t.Errorf("quiet deltas read %d PRs, want at most 1 (the last re-read of the settled second)", got)
	}
}

// TestFullListingTurns: a pool lists every open PR on its first cycle and
// then on the cycles of its turn; pools given consecutive phases (as one
// process serving several repositories gives them) never list in the same
// round.
func TestFullListingTurns(t *testing.T) {
	ctx := context.Background()
	listed := func(turn ListTurn, cycles int) []int {
		f := newFakeForge(1)
		p, err := New(ctx, testConfig(1), Deps{Forge: f, Agent: newFakeAgent(nil), Now: f.now, FullList: turn})
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for c := 1; c <= cycles; c++ {
			before := f.calls["list"]
			if _, err := p.listPRs(ctx); err != nil {
				t.Fatal(err)
			}
			if f.calls["list"] > before {
				out = append(out, c)
			}
		}
		return out
	}
	if got, want := listed(ListTurn{}, 41), []int{1, 20, 40}; !slices.Equal(got, want) {
		t.Errorf("default turn: full listings on cycles %v, want %v", got, want)
	}
	if got, want := listed(ListTurn{Every: 5, Phase: 3}, 14), []int{1, 3, 8, 13}; !slices.Equal(got, want) {
		t.Errorf("every 5, phase 3: full listings on cycles %v, want %v", got, want)
	}
	refusals := 1
	gate := func() bool { refusals--; return refusals < 0 }
	if got, want := listed(ListTurn{Every: 5, Phase: 3, Gate: gate}, 14), []int{1, 4, 8, 13}; !slices.Equal(got, want) {
		t.Errorf("every 5, phase 3, the first turn refused by the gate: full listings on cycles %v, want %v", got, want)
	}
	rounds := map[int]int{}
	for phase := range 5 {
		for _, c := range listed(ListTurn{Every: 5, Phase: phase}, 30)[1:] {
			rounds[c]++
		}
	}
	for c, n := range rounds {
		if n > 1 {
			t.Errorf("round %d held %d full listings, want at most 1", c, n)
		}
	}
	if len(rounds) != 29 {
		t.Errorf("rounds 2..30 with a full listing: %d, want 29 (one pool in each, in turn)", len(rounds))
	}
}

// TestAHeadTheQueueSawIsTheLoopsNext: the loop decides to merge head a;
// before the merge queue reads the PR mergeable, the head moves to b
// without a new update time (the forge stamps a push when it has processed
// it). The queue leaves the PR; the loop's next decision is on b (a
// review, then its merge), not on a again. A loop that kept its own copy
// decided to merge a again, and the queue left it again, until its next
// full listing: 21 decisions to merge in this test.
func TestAHeadTheQueueSawIsTheLoopsNext(t *testing.T) {
	f := newFakeForge(1)
	f.review(1, "reviewer", forge.ReviewApproved)
	f.mu.Lock()
	f.checkedAt = time.Now().Add(time.Hour) // the forge is still checking: the queue waits
	f.mu.Unlock()
	var logs syncbuf.Buffer
	cfg := testConfig(1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := New(ctx, cfg, Deps{Forge: f, Agent: newFakeAgent(approver(f, time.Millisecond)),
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		waitFor(ctx, func() bool { return p.queue.has(1) })
		f.mu.Lock()
		f.prs[1].HeadSHA = fakeSHA("sha-1-b") // no touch: the update time stays
		f.checkedAt = time.Time{}
		f.mu.Unlock()
	}()
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	merges := 0
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "msg=decision") && strings.Contains(line, " pr=1 action=merge ") {
			merges++
		}
	}
	if !f.prs[1].Merged || f.prs[1].HeadSHA != fakeSHA("sha-1-b") || merges > 3 {
		t.Errorf("merged %v at %s, %d decisions to merge; want b merged after at most 3 (a once, b by the loop and the queue)\n%s",
			f.prs[1].Merged, f.prs[1].HeadSHA, merges, logs.String())
	}
}

// TestAnOlderReadNeverReplacesTheIndexsCopy: the merge queue gives a PR
// back with its read of it, but the loop may have read the PR again since
// (the pool's own update moved its head). An older read must not replace
// the newer copy: the loop would decide the head the PR has left, which
// also forgets the update the pool made (its approval no longer carries).
func TestAnOlderReadNeverReplacesTheIndexsCopy(t *testing.T) {
	f := newFakeForge(1)
	p, err := New(context.Background(), testConfig(1), Deps{Forge: f, Agent: newFakeAgent(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.listPRs(context.Background()); err != nil {
		t.Fatal(err)
	}
	current := p.index.open[1].HeadSHA
	old := *f.prs[1]
	old.HeadSHA = fakeSHA("before-the-update")
	p.fresherRead(old, time.Now().Add(-time.Minute))
	p.takeFresher()
	if got := p.index.open[1].HeadSHA; got != current {
		t.Errorf("the loop's copy is at %s after an older read was handed back, want %s", got, current)
	}
	p.fresherRead(old, time.Now())
	p.takeFresher()
	if got := p.index.open[1].HeadSHA; got != old.HeadSHA {
		t.Errorf("the loop's copy is at %s after a newer read was handed back, want %s", got, old.HeadSHA)
	}
}

// TestAQueuesReadAtTheListingsInstantReplacesItsCopy: the loop lists a PR
// and queues it; the queue reads it again at the same instant of the
// pool's clock (a coarse clock, or the simulation's), after a push, and
// gives it back. The queue's read was asked after the listing, so it is
// the loop's copy from then on: kept, the loop decided the old head again,
// queued it again, and the queue gave it back again, without a pause.
func TestAQueuesReadAtTheListingsInstantReplacesItsCopy(t *testing.T) {
	instant := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	f := newFakeForge(1)
	f.now = func() time.Time { return instant }
	p, err := New(context.Background(), testConfig(1), Deps{Forge: f, Agent: newFakeAgent(nil), Now: f.now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := p.listPRs(ctx); err != nil {
		t.Fatal(err)
	}
	p.queue.add(1, p.index.open[1].HeadSHA, p.now())
	f.push(1, fakeSHA("sha-1-b"))
	pr, err := p.merger.read(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	p.merger.handBack(pr)
	p.takeFresher()
	if got := p.index.open[1].HeadSHA; got != pr.HeadSHA {
		t.Errorf("the loop's copy is at %s after the queue gave back its read at %s, asked after the listing at the same instant",
			got, pr.HeadSHA)
	}
}

// open adds PR n, as an author opening it does.
func (f *fakeForge) open(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prs[n] = &forge.PR{Number: n, State: "open", Mergeable: true, HeadSHA: fakeSHA(fmt.Sprintf("sha-%d-a", n)), BaseRef: "main",
		Author: "author", Updated: f.now(), HeadRepo: "o/r", HeadRef: fmt.Sprintf("feature-%d", n), MergeBase: f.base}
}

// TestOneUnreadablePRStopsNoOther: the read of PR 1 fails every time,
// after it changed (its review) and after it closed while tracked. The
// pool skips it, reading it again after a back-off, and PR 2, opened
// meanwhile, is reviewed and merged; the cycles go on (30 more of them).
func TestOneUnreadablePRStopsNoOther(t *testing.T) {
	for _, closed := range []bool{false, true} {
		t.Run(fmt.Sprintf("closed=%v", closed), func(t *testing.T) {
			f := newFakeForge(1)
			f.review(1, "reviewer", forge.ReviewRequestChanges)
			cfg := testConfig(1)
			cfg.IdleExit = 0
			var cycles func() int64
			runUntil(t, cfg, f, newFakeAgent(approver(f, time.Millisecond)), func(ctx context.Context, p *Pool) {
				cycles = func() int64 { return int64(p.report().Cycles) }
				waitFor(ctx, func() bool { return p.track(1).State == lifecycle.ChangesRequested })
				reads := func() int {
					return len(slices.DeleteFunc(f.readTrail(), func(e string) bool { return e != "read #1" }))
				}
				before := reads()
				f.mu.Lock()
				f.unreadable[1] = true
				if closed {
					f.prs[1].State = "closed"
				}
				f.touch(1)
				f.mu.Unlock()
				waitFor(ctx, func() bool { return reads() >= before+2 })
				f.open(2)
				from, read := cycles(), reads()
				cycles = func() int64 {
					if n := reads() - read; n > 8 {
						t.Errorf("PR 1 read %d times in %d cycles: no back-off", n, int64(p.report().Cycles)-from)
					}
					return int64(p.report().Cycles) - from
				}
			}, func() bool { return f.isMerged(2) && cycles() >= 30 })
		})
	}
}

// readTrail is the trail of reads and merges.
func (f *fakeForge) readTrail() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.trail)
}
