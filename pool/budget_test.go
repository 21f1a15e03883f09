package pool

import (
	"sync"
	"testing"
	"time"

	"pool/forge"
)

// counting counts the sessions behave is asked to run, per PR.
type counting struct {
	mu     sync.Mutex
	n      map[int]int
	behave func(int) (time.Duration, func(), string)
}

func (c *counting) run(pr int) (time.Duration, func(), string) {
	c.mu.Lock()
	c.n[pr]++
	c.mu.Unlock()
	return c.behave(pr)
}

func (c *counting) on(pr int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[pr]
}

// withheldNotes are the pool's notes on n that it withholds sessions.
func withheldNotes(f *fakeForge, n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	notes := 0
	for _, c := range f.comments[n] {
		var v struct{ Head, Reason string }
		if c.Author == f.me && forge.ParseMarker(c.Body, forge.MarkWithheld, &v) {
			notes++
		}
	}
	return notes
}

// TestOutsidersAndDraftsGetNoSession: of three PRs, a collaborator's is
// reviewed and merged; an outsider's gets one note and no session, and a
// draft no session, also after a restart; once a maintainer labels the
// outsider's PR and the draft is marked ready, both are reviewed and merged.
func TestOutsidersAndDraftsGetNoSession(t *testing.T) {
	f := newFakeForge(1, 2, 3)
	f.outsiders = map[string]bool{"stranger": true}
	f.prs[2].Author = "stranger"
	f.prs[3].Draft = true
	c := &counting{n: map[int]int{}, behave: approver(f, time.Millisecond)}
	for run := 0; run < 2; run++ {
		runPool(t, testConfig(2), f, newFakeAgent(c.run))
		if !f.isMerged(1) || c.on(2) != 0 || c.on(3) != 0 {
			t.Fatalf("run %d: #1 merged %v; sessions on the outsider's PR %d, on the draft %d; want merged, 0, 0",
				run, f.isMerged(1), c.on(2), c.on(3))
		}
		if n := withheldNotes(f, 2); n != 1 {
			t.Errorf("run %d: %d notes on the outsider's PR, want 1", run, n)
		}
	}
	f.mu.Lock()
	f.prs[2].Labels = []string{"OK to review"}
	f.prs[3].Draft = false
	f.touch(2)
	f.touch(3)
	f.mu.Unlock()
	runPool(t, testConfig(2), f, newFakeAgent(c.run))
	if !f.isMerged(2) || !f.isMerged(3) || c.on(2) != 1 || c.on(3) != 1 {
		t.Errorf("after the label and ready: merged #2 %v #3 %v, sessions %d and %d; want both merged after one session each",
			f.isMerged(2), f.isMerged(3), c.on(2), c.on(3))
	}
}

// TestTheBudgetStopsSessions: a reviewer that never leaves a review gets
// sessions until the PR's budget (2) and then its author's (3) are spent;
// each PR then gets one note and waits.
func TestTheBudgetStopsSessions(t *testing.T) {
	f := newFakeForge(1, 2)
	c := &counting{n: map[int]int{}, behave: func(int) (time.Duration, func(), string) {
		return time.Millisecond, nil, "I looked at it."
	}}
	cfg := testConfig(1)
	cfg.Reviews.PerPR, cfg.Reviews.PerAuthor = 2, 3
	cfg.IdleExit = 20
	runPool(t, cfg, f, newFakeAgent(c.run))
	if c.on(1) > 2 || c.on(2) > 2 || c.on(1)+c.on(2) != 3 {
		t.Errorf("sessions: #1 %d, #2 %d; want at most 2 each and 3 in all", c.on(1), c.on(2))
	}
	for _, n := range []int{1, 2} {
		if notes := withheldNotes(f, n); notes != 1 {
			t.Errorf("#%d: %d notes that the budget is spent, want 1", n, notes)
		}
	}
	if f.isMerged(1) || f.isMerged(2) {
		t.Error("a PR without a review merged")
	}
}
