package pool

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"pool/forge"
)

// runWithHistory runs a pool with history as its clone, to its idle exit,
// or until stop holds if stop is set.
func runWithHistory(t *testing.T, f *fakeForge, h *fakeHistory, stop func() bool) Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := New(ctx, testConfig(1), Deps{Forge: f, Agent: newFakeAgent(approver(f, 0)), History: h})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	if stop != nil {
		go func() {
			waitFor(ctx, stop)
			stopRun()
		}()
	}
	rep, err := p.Run(runCtx)
	if err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v, %v", err, ctx.Err())
	}
	return rep
}

// landedButOpen is a forge as a merge cut off mid-call leaves it: PR #1's
// head is on the base, the PR reads open and mergeable, and every merge
// call is answered "try again later".
func landedButOpen() (*fakeForge, *fakeHistory) {
	f := newFakeForge(1)
	f.mergeAnswer[1] = forge.MergeResult{Outcome: forge.MergeNotReady, Status: 405, Message: "Please try again later"}
	return f, &fakeHistory{landed: map[string]string{f.prs[1].HeadSHA: "c0ffee"}}
}

func TestAHeadOnTheBaseIsMarkedMerged(t *testing.T) {
	f, h := landedButOpen()
	f.manualMerges = true
	rep := runWithHistory(t, f, h, nil)
	if !f.prs[1].Merged || rep.Merged != 1 {
		t.Errorf("PR #1 merged %v, report counts %d merged; want it marked merged and counted", f.prs[1].Merged, rep.Merged)
	}
	if !slices.Contains(f.Effects(), "#1: mark merged by c0ffee") {
		t.Errorf("effects %q: want PR #1 marked merged by the base's commit", f.Effects())
	}
	if f.calls["merge"] != onBaseCheckEvery {
		t.Errorf("%d merge calls; want %d, then a look in the clone", f.calls["merge"], onBaseCheckEvery)
	}
}

func TestAHeadOnTheBaseTheForgeWillNotMarkWaitsForAPerson(t *testing.T) {
	f, h := landedButOpen()
	rep := runWithHistory(t, f, h, nil)
	if f.prs[1].Merged || rep.Merged != 0 {
		t.Fatalf("PR #1 merged %v, report %d merged; the forge refused to mark it", f.prs[1].Merged, rep.Merged)
	}
	var notes []string
	for _, c := range f.comments[1] {
		if strings.Contains(c.Body, "already on the base branch (in commit c0ffee)") {
			notes = append(notes, c.Body)
		}
	}
	if len(notes) != 1 {
		t.Errorf("%d notes saying the head is on the base; want 1:\n%s", len(notes), strings.Join(notes, "\n---\n"))
	}
	if f.calls["merge"] != onBaseCheckEvery || f.calls["mark merged"] != 1 {
		t.Errorf("%d merge calls, %d marks; want %d and 1, then a wait for a person",
			f.calls["merge"], f.calls["mark merged"], onBaseCheckEvery)
	}
}

// TestAHeadNotOnTheBaseKeepsWaiting: a PR the forge keeps refusing whose
// head is not on the base stays in the queue, and the clone is looked in
// once every onBaseCheckEvery refusals.
func TestAHeadNotOnTheBaseKeepsWaiting(t *testing.T) {
	f, h := landedButOpen()
	h.landed = nil
	runWithHistory(t, f, h, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.calls["merge"] >= 3*onBaseCheckEvery
	})
	f.mu.Lock()
	merges, marks := f.calls["merge"], f.calls["mark merged"]
	f.mu.Unlock()
	h.mu.Lock()
	looks := h.looks
	h.mu.Unlock()
	if looks != merges/onBaseCheckEvery || marks != 0 || f.prs[1].Merged {
		t.Errorf("%d merge calls, %d looks in the clone, %d marks; want a look every %d refusals and no mark",
			merges, looks, marks, onBaseCheckEvery)
	}
}
