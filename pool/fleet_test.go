package pool

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"pool/fleet"
	"pool/forge"
)

// fleetClock is a fleet's clock that a test moves on.
type fleetClock struct {
	mu   sync.Mutex
	skew time.Duration
}

func (c *fleetClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.skew)
}

func (c *fleetClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.skew += d
}

// newTestFleet makes a fleet of fake servers.
func newTestFleet(clock *fleetClock, servers ...fleet.Server) *fleet.Fleet {
	return fleet.New(servers, fleet.Options{Now: clock.now})
}

func (a *fakeAgent) promptsStarting(prefix string) int {
	return a.promptsWhere(func(p string) bool { return strings.HasPrefix(p, prefix) })
}

// promptsWhere counts the prompts the agent received that match.
func (a *fakeAgent) promptsWhere(match func(string) bool) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, p := range a.prompts {
		if match(p) {
			n++
		}
	}
	return n
}

// TestSessionsSpreadOverTheAgentServers: two servers of two slots each.
// Two PRs at once get one server each, though either server could run
// both; of six, the first four get two each, and no server runs more than
// its two at once.
func TestSessionsSpreadOverTheAgentServers(t *testing.T) {
	for _, tt := range []struct{ prs, each int }{{2, 1}, {6, 2}} {
		var numbers []int
		for n := 1; n <= tt.prs; n++ {
			numbers = append(numbers, n)
		}
		f := newFakeForge(numbers...)
		a, b := newFakeAgent(approver(f, 200*time.Millisecond)), newFakeAgent(approver(f, 200*time.Millisecond))
		a.name, b.name = "a", "b"
		fl := newTestFleet(&fleetClock{}, fleet.Server{Name: "a", Agent: a, Workers: 2, Review: true, Fix: true},
			fleet.Server{Name: "b", Agent: b, Workers: 2, Review: true, Fix: true})
		rep := runPool(t, testConfig(4), f, fl)
		_, promptsA, peakA := a.count()
		_, promptsB, peakB := b.count()
		if promptsA < tt.each || promptsB < tt.each || promptsA+promptsB != tt.prs || peakA > 2 || peakB > 2 {
			t.Errorf("%d PRs: server a ran %d sessions, at most %d at once; b %d, %d; want at least %d each, at most 2 at once",
				tt.prs, promptsA, peakA, promptsB, peakB, tt.each)
		}
		if rep.Merged != tt.prs {
			t.Errorf("%d PRs: report: %d merged", tt.prs, rep.Merged)
		}
	}
}

// TestTheFixerRunsOnTheFixServerOnly: a review server and a fix server; an
// approved PR whose checks fail gets its fixer on the fix server, and the
// reviews all run on the review server.
func TestTheFixerRunsOnTheFixServerOnly(t *testing.T) {
	f := newFakeForge(1, 2, 3)
	head := f.prs[1].HeadSHA
	f.review(1, "reviewer", forge.ReviewApproved)
	f.statuses[head] = []forge.Status{{ID: 1, Context: "ci", State: "failure"}}
	// The reviews approve, as their reports say: a session that left no
	// review is tried again after a backoff of a poll interval. The two
	// reviews end far apart, in different cycles of the pool. When they
	// reported "commented" and filed nothing, the test passed only if
	// both ended in one cycle; on a slow host the first PR was reviewed
	// again while the second's ran (.ci/run at 0.65 of a core, 2026-12-05:
	// "review server: 4 sessions").
	reply := func(pr int) (time.Duration, func(), string) {
		switch pr {
		case 1: // the fixer's
			return 50 * time.Millisecond, nil, "REVIEW-RESULT: {\"decision\": \"commented\", \"merge_status\": \"none\"}"
		case 3:
			return approver(f, 300*time.Millisecond)(pr)
		}
		return approver(f, 50*time.Millisecond)(pr)
	}
	rev, fix := newFakeAgent(reply), newFakeAgent(reply)
	rev.name, fix.name = "rev", "fix"
	fl := newTestFleet(&fleetClock{}, fleet.Server{Name: "rev", Agent: rev, Workers: 2, Review: true},
		fleet.Server{Name: "fix", Agent: fix, Workers: 1, Fix: true})
	cfg := testConfig(3)
	cfg.Once = true
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := New(ctx, cfg, Deps{Forge: f, Agent: fl, Trees: newFakeTrees(), Fixes: &fakeFixes{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v, %v", err, ctx.Err())
	}
	const fixer = "This PR is approved, but checks fail"
	fixesThere := func(a *fakeAgent) int {
		return a.promptsWhere(func(p string) bool { return strings.Contains(p, fixer) })
	}
	_, onRev, _ := rev.count()
	_, onFix, _ := fix.count()
	if fixesThere(fix) != 1 || onFix != 1 || fixesThere(rev) != 0 || onRev != 2 {
		t.Errorf("fix server: %d sessions, %d fixers; review server: %d sessions, %d fixers; want 1 fixer alone on the fix server and the 2 reviews on the other",
			onFix, fixesThere(fix), onRev, fixesThere(rev))
	}
}

// TestSessionsOfADeadServerStartAgainElsewhere: server a stops answering
// under PR 1's session. After fleet.DownAfter failed checks no session
// starts on it; fleet.LostAfter later its session counts lost, and PR 1,
// still claimed, is reviewed again on server b and merged. When a answers
// again, the session it kept is deleted, not run on, and a is used again.
func TestSessionsOfADeadServerStartAgainElsewhere(t *testing.T) {
	f := newFakeForge(1, 2)
	clock := &fleetClock{}
	hang := func(pr int) (time.Duration, func(), string) { return time.Hour, nil, "" }
	a, b := newFakeAgent(hang), newFakeAgent(approver(f, 10*time.Millisecond))
	a.name, b.name = "a", "b"
	fl := newTestFleet(clock, fleet.Server{Name: "a", Agent: a, Workers: 1, Review: true, Fix: true},
		fleet.Server{Name: "b", Agent: b, Workers: 1, Review: true, Fix: true})
	cfg := testConfig(2)
	cfg.IdleExit = 20
	statuses := make(chan []fleet.ServerStatus, 1)
	rep := runPoolWith(t, cfg, f, fl, func(ctx context.Context, p *Pool) {
		for ctx.Err() == nil {
			if _, prompts, _ := a.count(); prompts == 1 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		a.mu.Lock()
		a.dead = true
		a.mu.Unlock()
		for i := 0; i < fleet.DownAfter; i++ {
			fl.Check(ctx)
		}
		clock.add(fleet.LostAfter)
		fl.Check(ctx)
		statuses <- fl.Status()
	})
	lost := <-statuses
	if !f.isMerged(1) || !f.isMerged(2) {
		t.Fatalf("merged: #1 %v, #2 %v; want both", f.isMerged(1), f.isMerged(2))
	}
	_, onA, _ := a.count()
	_, onB, _ := b.count()
	if onA != 1 || onB != 2 {
		t.Errorf("sessions on a %d, on b %d; want 1 on a (lost) and 2 on b (PR 2's and PR 1's again)", onA, onB)
	}
	if c := f.claimsOn(1); c != 1 {
		t.Errorf("PR #1 has %d claims, want the one it kept", c)
	}
	if len(lost) != 2 || lost[0].Up || lost[0].Lost != 1 || !lost[1].Up {
		t.Errorf("fleet status once a was down: %+v, want a down with 1 lost, b up", lost)
	}
	if rep.Merged != 2 {
		t.Errorf("report: %d merged, want 2", rep.Merged)
	}

	a.mu.Lock()
	a.dead = false
	a.mu.Unlock()
	fl.Check(context.Background())
	if left, _, _ := a.count(); left != 0 {
		t.Errorf("a answers again holding %d sessions, want the lost one deleted", left)
	}
	if st := fl.Status(); !st[0].Up {
		t.Errorf("a answers again but is not used: %+v", st[0])
	}
	if !fl.Free(false) {
		t.Error("no free slot for a review on a, back up")
	}
}
