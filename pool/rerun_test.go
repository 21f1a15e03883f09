package pool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pool/forge"
	"pool/store"
)

// RerunFailedJobs runs the failed jobs of Actions run `run` again, as
// Gitea 1.26 does: it reports them pending on the commit at once (the
// stand-in CI's delay), then passing or failing as rerunPasses says.
// rerunStatus, when set, is the forge's answer instead (404: Forgejo, which
// has no such endpoint); rerunIdle answers 201 and runs nothing, as Gitea
// does for a run with no failed job. Each call is recorded in reran.
func (f *fakeForge) RerunFailedJobs(_ context.Context, owner, repo string, run int64) (forge.RerunResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reran = append(f.reran, run)
	if f.rerunStatus != 0 {
		return forge.RerunResult{Outcome: forge.ClassifyRerun(f.rerunStatus, "not found"), Status: f.rerunStatus, Message: "not found"}, nil
	}
	if f.rerunIdle {
		return forge.RerunResult{Outcome: forge.RerunStarted, Status: 201}, nil
	}
	state := "failure"
	if f.rerunPasses {
		state = "success"
	}
	for sha, history := range f.statuses {
		var again []forge.Status
		for _, st := range history {
			if r, ok := forge.ActionsRun(st.TargetURL, owner, repo); ok && r == run && st.State == "failure" {
				st.ID += 10000
				st.State = state
				again = append(again, st)
			}
		}
		if len(again) > 0 {
			f.statuses[sha] = append(f.statuses[sha], again...)
			f.ciAt[sha] = f.now().Add(f.ciDelay)
		}
	}
	f.record("run %d run again", run)
	return forge.RerunResult{Outcome: forge.RerunStarted, Status: 201}, nil
}

// ejectionNotes are the notes on PR n that say it left the merge train.
func ejectionNotes(f *fakeForge, n int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.comments[n] {
		if strings.Contains(c.Body, "left the merge train") {
			out = append(out, c.Body)
		}
	}
	return out
}

// approveInOrder approves the PRs in order, which queues them so: each
// PR's car has the next one's behind it.
func approveInOrder(f *fakeForge, prs ...int) {
	for _, n := range prs {
		f.review(n, "reviewer", forge.ReviewApproved)
	}
}

func reranRuns(f *fakeForge) []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reran)
}

// TestAFlakyCarIsRunAgainAndLands: PR 2's first car fails, reported after
// the car behind it, which holds PR 2 too, passed; its check is the
// forge's Actions run's. The pool has the forge run its failed jobs again,
// once, and the car waits for them instead of leaving: they pass, and all
// three PRs land at their first cars (three CI runs, none formed again),
// with no note on PR 2.
func TestAFlakyCarIsRunAgainAndLands(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	f.ciDelay, f.rerunPasses = 30*time.Millisecond, true
	approveInOrder(f, 1, 2, 3) // PR 2's car has PR 3's behind it
	cars := newFakeCars(f)
	cars.flaky[2], cars.actions = true, true
	runTrain(t, f, cars, func() bool {
		return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) || len(ejectionNotes(f, 2)) > 0
	})
	if notes := ejectionNotes(f, 2); len(notes) != 0 {
		t.Fatalf("PR 2 was ejected: %v (runs run again: %v)", notes, reranRuns(f))
	}
	if runs := reranRuns(f); len(runs) != 1 {
		t.Errorf("runs run again: %v, want the one of PR 2's car", runs)
	}
	if cars.formed != 3 || cars.made[2] != 1 {
		t.Errorf("%d cars formed, %d of PR 2; want 3 and 1: the train waits for the rerun, nothing is re-formed", cars.formed, cars.made[2])
	}
	for _, c := range updatesAndMerges(f) {
		var n int
		var at string
		if _, err := fmt.Sscanf(c, "#%d: merge at %s", &n, &at); err == nil && n == 2 && cars.holds[at][len(cars.holds[at])-1] != 2 {
			t.Errorf("%s: PR 2 merged, not at its car", c)
		}
	}
}

// TestAFlakyCarFailingAgainIsEjected: PR 2's first car fails where the
// car behind it passed, is run again once, and fails again. PR 2 leaves
// the train with one note, which says its failed jobs were run again and
// failed again; it is not tried on its own at that head (the same tree
// failed twice): no update, no merge, and no second rerun. PRs 1 and 3
// land.
func TestAFlakyCarFailingAgainIsEjected(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	f.ciDelay = 30 * time.Millisecond
	approveInOrder(f, 1, 2, 3) // PR 2's car has PR 3's behind it
	cars := newFakeCars(f)
	cars.flaky[2], cars.actions = true, true
	var settled time.Time
	runTrainOn(t, f, cars, store.NewMemory(), func() bool {
		if settled.IsZero() && f.isMerged(1) && f.isMerged(3) && len(ejectionNotes(f, 2)) > 0 {
			settled = time.Now()
		}
		return !settled.IsZero() && time.Since(settled) > 300*time.Millisecond
	})
	notes := ejectionNotes(f, 2)
	if len(notes) != 1 || !strings.Contains(notes[0], "failed again") {
		t.Errorf("notes on PR 2: %q; want one saying the rerun failed again", notes)
	}
	if runs := reranRuns(f); len(runs) != 1 {
		t.Errorf("runs run again: %v, want the one of PR 2's car, once", runs)
	}
	for _, c := range updatesAndMerges(f) {
		if strings.HasPrefix(c, "#2:") {
			t.Errorf("%s: PR 2 updated or merged after its car failed twice", c)
		}
	}
}

// TestNoRerunOnAForgeWithoutTheEndpoint: the forge answers the rerun 404,
// as Forgejo does (it has no such endpoint). PR 2's flaky car is ejected
// with the evidence in its note (a car behind passed: a flake, maybe; the
// forge cannot run it again) and merges on its own. The pool learned it:
// PR 4, ready later, whose flaky car fails the same way, is ejected with
// the same note and no second ask.
func TestNoRerunOnAForgeWithoutTheEndpoint(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3, 4, 5)
	f.ciDelay, f.rerunStatus = 30*time.Millisecond, 404
	f.prs[4].Draft, f.prs[5].Draft = true, true
	approveInOrder(f, 1, 2, 3) // PR 2's car has PR 3's behind it
	cars := newFakeCars(f)
	cars.flaky[2], cars.flaky[4], cars.actions = true, true, true
	later := func(ctx context.Context, _ *Pool) {
		// once PR 2, tried on its own, merged: the base stays under PR 4's car
		waitFor(ctx, func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) && len(ejectionNotes(f, 2)) > 0 })
		f.mu.Lock()
		f.prs[4].Draft, f.prs[5].Draft = false, false
		f.mu.Unlock()
		approveInOrder(f, 4, 5) // PR 4's car has PR 5's behind it
	}
	runTrainWith(t, f, cars, nil, later, func() bool {
		return f.isMerged(1) && f.isMerged(3) && f.isMerged(5) && len(ejectionNotes(f, 2)) > 0 && len(ejectionNotes(f, 4)) > 0
	})
	for _, n := range []int{2, 4} {
		notes := ejectionNotes(f, n)
		if len(notes) != 1 || !strings.Contains(notes[0], "may be a flake") || !strings.Contains(notes[0], "no rerun endpoint") {
			t.Errorf("notes on PR %d: %q; want one with the evidence, saying the forge cannot run it again", n, notes)
		}
	}
	if runs := reranRuns(f); len(runs) != 1 {
		t.Errorf("reruns asked: %v; want one, then none (learned)", runs)
	}
}

// TestNoRerunOfAnExternalCheck: PR 2's flaky car fails a check an external
// CI reported (its status points at no Actions run of the forge): nothing
// to run again. PR 2 is ejected with the evidence, the note saying why it
// was not run again, and the forge is asked no rerun.
func TestNoRerunOfAnExternalCheck(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	f.ciDelay, f.rerunPasses = 30*time.Millisecond, true
	approveInOrder(f, 1, 2, 3) // PR 2's car has PR 3's behind it
	cars := newFakeCars(f)
	cars.flaky[2] = true
	runTrain(t, f, cars, func() bool { return f.isMerged(1) && f.isMerged(3) && len(ejectionNotes(f, 2)) > 0 })
	notes := ejectionNotes(f, 2)
	if len(notes) != 1 || !strings.Contains(notes[0], "may be a flake") || !strings.Contains(notes[0], "not from an Actions run") {
		t.Errorf("notes on PR 2: %q; want one with the evidence, saying the check is not from an Actions run", notes)
	}
	if runs := reranRuns(f); len(runs) != 0 {
		t.Errorf("reruns asked: %v, want none", runs)
	}
}

// TestARerunThatRunsNothingIsNoRerun: the forge takes the rerun of PR 2's
// flaky car (201) but runs nothing, as Gitea does for a run with no failed
// job: the car's failing check stays the one from before. PR 2 is ejected
// as one whose car did not run again (the note says the forge did not run
// it, not that it failed again), and, a flake maybe, merges on its own.
func TestARerunThatRunsNothingIsNoRerun(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	f.ciDelay, f.rerunIdle = 30*time.Millisecond, true
	approveInOrder(f, 1, 2, 3) // PR 2's car has PR 3's behind it
	cars := newFakeCars(f)
	cars.flaky[2], cars.actions = true, true
	var noted time.Time
	runTrain(t, f, cars, func() bool {
		if noted.IsZero() && len(ejectionNotes(f, 2)) > 0 {
			noted = time.Now()
		}
		return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) || !noted.IsZero() && time.Since(noted) > 2*time.Second
	})
	notes := ejectionNotes(f, 2)
	if len(notes) != 1 || !strings.Contains(notes[0], "did not run the car's failed jobs again") || strings.Contains(notes[0], "failed again") {
		t.Errorf("notes on PR 2: %q; want one saying the forge did not run it again", notes)
	}
	if !f.isMerged(1) || !f.isMerged(2) || !f.isMerged(3) {
		t.Errorf("merged: PR 1 %v, PR 2 %v, PR 3 %v; want all three, PR 2 on its own", f.isMerged(1), f.isMerged(2), f.isMerged(3))
	}
	if runs := reranRuns(f); len(runs) != 1 {
		t.Errorf("reruns asked: %v, want one", runs)
	}
}
