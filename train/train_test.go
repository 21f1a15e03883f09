package train

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// kinds renders actions as "kind PR" words, for comparing plans.
func kinds(acts []Action) string {
	var out []string
	for _, a := range acts {
		out = append(out, fmt.Sprintf("%s %d", a.Kind, a.PR))
	}
	return strings.Join(out, ", ")
}

// formed is the train of cars for prs on tip, each car's commit "car<PR>".
func formed(tip string, prs ...int) Train {
	t := Train{Base: "main"}
	for _, n := range prs {
		t = Apply(t, Action{Kind: Form, PR: n, Head: fmt.Sprintf("h%d", n)}, tip, fmt.Sprintf("car%d", n))
	}
	return t
}

func waiting(prs ...int) []Waiting {
	var out []Waiting
	for _, n := range prs {
		out = append(out, Waiting{PR: n, Head: fmt.Sprintf("h%d", n)})
	}
	return out
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name  string
		train Train
		obs   Observation
		want  string
	}{
		{name: "forming stops at the size, in the queue's order", train: formed("tip"),
			obs:  Observation{Tip: "tip", Waiting: waiting(3, 1, 2), Size: 2},
			want: "form 3, form 1"},
		{name: "a full train forms nothing; the front car pending lands nothing", train: formed("tip", 1, 2),
			obs:  Observation{Tip: "tip", Waiting: waiting(1, 2, 3), Size: 2, Checks: map[string]Checks{"car2": Green}},
			want: ""},
		{name: "only the front car lands, though the cars behind are green", train: formed("tip", 1, 2, 3),
			obs:  Observation{Tip: "tip", Waiting: waiting(1, 2, 3), Size: 8, Checks: map[string]Checks{"car1": Green, "car2": Green, "car3": Green}},
			want: "land 1"},
		{name: "the second car lands once the first has (the tip is the first car)", train: Apply(formed("tip", 1, 2), Action{Kind: Land, PR: 1}, "tip", ""),
			obs:  Observation{Tip: "car1", Waiting: waiting(2), Size: 8, Checks: map[string]Checks{"car2": Green}},
			want: "land 2"},
		{name: "a failing car is ejected, the cars behind re-formed, the car ahead lands", train: formed("tip", 1, 2, 3, 4),
			obs: Observation{Tip: "tip", Waiting: waiting(1, 2, 3, 4), Size: 8,
				Checks: map[string]Checks{"car1": Green, "car2": Failed}, Failing: map[string]string{"car2": "ci/test"}},
			want: "eject 2, drop 3, drop 4, form 3, form 4, land 1"},
		{name: "a failing car behind a pending one waits: the failure may be the car ahead's", train: formed("tip", 1, 2, 3, 4),
			obs: Observation{Tip: "tip", Waiting: waiting(1, 2, 3, 4), Size: 8,
				Checks: map[string]Checks{"car1": Green, "car3": Failed, "car4": Failed}, Failing: map[string]string{"car3": "ci/test", "car4": "ci/test"}},
			want: "land 1"},
		{name: "of two failing cars the front one is ejected", train: formed("tip", 1, 2, 3),
			obs: Observation{Tip: "tip", Waiting: waiting(1, 2, 3), Size: 8,
				Checks: map[string]Checks{"car1": Green, "car2": Failed, "car3": Failed}, Failing: map[string]string{"car2": "ci/test", "car3": "ci/test"}},
			want: "eject 2, drop 3, form 3, land 1"},
		{name: "an author's push: the PR leaves, no car is formed for its new head", train: formed("tip", 1, 2, 3),
			obs:  Observation{Tip: "tip", Waiting: []Waiting{{1, "h1"}, {2, "pushed"}, {3, "h3"}}, Size: 8},
			want: "leave 2, drop 3, form 3"},
		{name: "a PR gone from the queue leaves", train: formed("tip", 1, 2),
			obs:  Observation{Tip: "tip", Waiting: waiting(2), Size: 8},
			want: "leave 1, drop 2, form 2"},
		{name: "the base moved under the train: every car is re-formed on it", train: formed("tip", 1, 2),
			obs:  Observation{Tip: "other", Waiting: waiting(1, 2), Size: 8},
			want: "drop 1, drop 2, form 1, form 2"},
		{name: "a landed tree that differs stops the train: nothing lands or forms", train: formed("car0", 2, 3),
			obs:  Observation{Tip: "car0", Waiting: waiting(2, 3), Size: 8, TreeDiffers: true, Checks: map[string]Checks{"car2": Green}},
			want: "stop 0, drop 2, drop 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := kinds(Plan(tt.train, tt.obs)); got != tt.want {
				t.Errorf("Plan = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestEjectNamesTheCheckAndTheFlake: the ejection carries the failing
// check, and says a flake is possible only when a car behind, which holds
// the PR, passed.
func TestEjectNamesTheCheckAndTheFlake(t *testing.T) {
	tr := formed("tip", 1, 2)
	for _, behind := range []Checks{Pending, Green, Failed} {
		o := Observation{Tip: "tip", Waiting: waiting(1, 2), Size: 8,
			Checks: map[string]Checks{"car1": Failed, "car2": behind}, Failing: map[string]string{"car1": "ci/lint"}}
		a := Plan(tr, o)[0]
		if a.Kind != Eject || a.Check != "ci/lint" || a.Flake != (behind == Green) {
			t.Errorf("car behind %v: first action %+v, want eject naming ci/lint, flake %v", behind, a, behind == Green)
		}
	}
}

// TestAFlakyCarRunsAgainOnce: a car that failed where a car behind it,
// which holds its PR, passed, and whose failing checks the forge may run
// again (MayRerun), is not ejected: the forge runs it again (Again), and
// it stays, with the cars behind, none of which lands or is re-formed. The
// car ahead still lands. Failed again (Reran), or where the forge cannot
// run it again (an external CI's check, no endpoint, a refusal), it is
// ejected as a flake, the action saying which; without a car behind that
// passed it is ejected whatever the forge can do, saying nothing of reruns.
func TestAFlakyCarRunsAgainOnce(t *testing.T) {
	tr := formed("tip", 1, 2, 3)
	for _, tt := range []struct {
		rerun  Rerun
		behind Checks
		want   string
	}{
		{MayRerun, Green, "rerun 2, land 1"},
		{MayRerun, Pending, "eject 2, drop 3, form 3, land 1"},
		{Reran, Green, "eject 2, drop 3, form 3, land 1"},
		{NoRerun, Green, "eject 2, drop 3, form 3, land 1"},
		{NoEndpoint, Green, "eject 2, drop 3, form 3, land 1"},
		{RerunRefused, Green, "eject 2, drop 3, form 3, land 1"},
	} {
		o := Observation{Tip: "tip", Waiting: waiting(1, 2, 3), Size: 8,
			Checks:  map[string]Checks{"car1": Green, "car2": Failed, "car3": tt.behind},
			Failing: map[string]string{"car2": "ci/test"}, Reruns: map[string]Rerun{"car2": tt.rerun}}
		acts := Plan(tr, o)
		if got := kinds(acts); got != tt.want {
			t.Errorf("rerun %d, car behind %d: Plan = %q, want %q", tt.rerun, tt.behind, got, tt.want)
			continue
		}
		a := acts[0]
		switch {
		case a.Kind == Again && (a.Commit != "car2" || a.Check != "ci/test"):
			t.Errorf("rerun %+v, want car2 naming ci/test", a)
		case a.Kind == Eject && a.Flake != (tt.behind == Green):
			t.Errorf("rerun %d, car behind %d: %+v, flake %v", tt.rerun, tt.behind, a, a.Flake)
		case a.Kind == Eject && a.Flake && a.Rerun != tt.rerun:
			t.Errorf("rerun %d: the ejection says %d", tt.rerun, a.Rerun)
		case a.Kind == Eject && !a.Flake && a.Rerun != NoRerun:
			t.Errorf("no flake: the ejection says rerun %d", a.Rerun)
		}
		if a.Kind == Again {
			if after := Apply(tr, a, "tip", ""); len(after.Cars) != 3 {
				t.Errorf("after the rerun: %+v, want the three cars", after.Cars)
			}
		}
	}
}

func TestApplyFormsOnTheLastCar(t *testing.T) {
	tr := formed("tip", 1, 2, 3)
	var parents []string
	for _, c := range tr.Cars {
		parents = append(parents, c.Parent)
	}
	if want := []string{"tip", "car1", "car2"}; !slices.Equal(parents, want) {
		t.Errorf("parents = %v, want %v", parents, want)
	}
	tr = Apply(tr, Action{Kind: Eject, PR: 2}, "tip", "")
	if len(tr.Cars) != 2 || tr.Cars[1].PR != 3 {
		t.Errorf("after ejecting 2: %+v", tr.Cars)
	}
	if tr = Apply(tr, Action{Kind: Stop}, "tip", ""); len(tr.Cars) != 0 {
		t.Errorf("after a stop: %+v, want no car", tr.Cars)
	}
}

// TestATrainRunsToTheEnd drives the planner as the merge queue's worker
// would, with a CI that fails every car holding PR bad and lands by
// fast-forward: the others land in the queue's order, the bad one is
// ejected once, and the re-formed cars are the only extra CI runs.
func TestATrainRunsToTheEnd(t *testing.T) {
	for _, bad := range []int{0, 1, 3, 5} {
		t.Run(fmt.Sprintf("bad %d", bad), func(t *testing.T) {
			landed, ejected, runs := drive(t, []int{1, 2, 3, 4, 5}, bad, 3, false)
			var want []int
			for _, n := range []int{1, 2, 3, 4, 5} {
				if n != bad {
					want = append(want, n)
				}
			}
			if !slices.Equal(landed, want) {
				t.Errorf("landed %v, want %v", landed, want)
			}
			if bad != 0 && !slices.Equal(ejected, []int{bad}) {
				t.Errorf("ejected %v, want [%d]", ejected, bad)
			}
			// Every car behind the bad one, up to the size, is formed twice.
			if extra := runs - len(want) - min(bad, 1); extra > 2 {
				t.Errorf("%d CI runs for %d landed: %d extra, want at most 2 (size 3)", runs, len(want), extra)
			}
		})
	}
}

// TestACarBehindReportingFirstEjectsNothing: the CI reports the cars
// back to front, one a round, so a car holding the bad PR fails while the
// bad PR's own car (ahead of it) is still pending. Only the bad PR is
// ejected, and the CI runs are those of a report all at once: one per PR
// and the re-formed cars behind the bad one.
func TestACarBehindReportingFirstEjectsNothing(t *testing.T) {
	queue := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, bad := range []int{1, 3, 5} {
		t.Run(fmt.Sprintf("bad %d", bad), func(t *testing.T) {
			landed, ejected, runs := drive(t, slices.Clone(queue), bad, 8, true)
			if len(landed) != len(queue)-1 || !slices.Equal(ejected, []int{bad}) {
				t.Errorf("landed %v, ejected %v; want all but %d landed and only %d ejected", landed, ejected, bad, bad)
			}
			_, _, once := drive(t, slices.Clone(queue), bad, 8, false)
			if runs > once {
				t.Errorf("%d CI runs, reporting back to front; %d reporting at once", runs, once)
			}
		})
	}
}

// drive plans and applies until nothing is left to do; each round is one
// CI result for every car (backFirst: for the back-most pending car only).
// It returns the PRs landed and ejected, in order, and the cars formed (CI
// runs).
func drive(t *testing.T, queue []int, bad, size int, backFirst bool) (landed, ejected []int, runs int) {
	tip, tr := "tip", Train{Base: "main"}
	holds := map[string][]int{"tip": nil} // the PRs in each commit
	checks, failing := map[string]Checks{}, map[string]string{}
	for round := 0; round < 200; round++ {
		acts := Plan(tr, Observation{Tip: tip, Waiting: waiting(queue...), Size: size, Checks: checks, Failing: failing})
		if len(acts) == 0 && !slices.ContainsFunc(tr.Cars, func(c Car) bool { return checks[c.Commit] == Pending }) {
			return landed, ejected, runs
		}
		for _, a := range acts {
			commit := ""
			switch a.Kind {
			case Form:
				runs++
				parent := tip
				if len(tr.Cars) > 0 {
					parent = tr.Cars[len(tr.Cars)-1].Commit
				}
				commit = fmt.Sprintf("car%d.%d", a.PR, runs)
				holds[commit] = append(slices.Clone(holds[parent]), a.PR)
				checks[commit] = Pending
			case Land:
				tip = a.Commit
				landed = append(landed, a.PR)
				queue = slices.DeleteFunc(queue, func(n int) bool { return n == a.PR })
			case Eject:
				ejected = append(ejected, a.PR)
				queue = slices.DeleteFunc(queue, func(n int) bool { return n == a.PR })
			}
			tr = Apply(tr, a, tip, commit)
		}
		report := func(c string) {
			checks[c] = Green
			if slices.Contains(holds[c], bad) {
				checks[c], failing[c] = Failed, "ci/test"
			}
		}
		if backFirst {
			for i := len(tr.Cars) - 1; i >= 0; i-- {
				if c := tr.Cars[i].Commit; checks[c] == Pending {
					report(c)
					break
				}
			}
			continue
		}
		for c, st := range checks { // CI reports every pending car
			if st == Pending {
				report(c)
			}
		}
	}
	t.Fatalf("the train did not finish in 200 rounds: landed %v, ejected %v, train %+v", landed, ejected, tr.Cars)
	return nil, nil, 0
}

// TestJudgeLease: no lease is free; one naming this instance is its own;
// another's is held until its commit stayed the same for the TTL on the
// reader's clock, whatever time it states, and a renewal (a new commit)
// holds it again.
func TestJudgeLease(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 21, 0, 0, 0, time.UTC)
	ttl := time.Minute
	var l Lease
	if v := JudgeLease(l.Seen("", "", t0), "me", t0, ttl); v != LeaseFree {
		t.Errorf("no lease: %s, want free", v)
	}
	l = l.Seen("c1", "other", t0)
	for _, tt := range []struct {
		at   time.Duration
		want LeaseVerdict
	}{{0, LeaseHeld}, {59 * time.Second, LeaseHeld}, {time.Minute, LeaseStale}, {time.Hour, LeaseStale}} {
		seen := l.Seen("c1", "other", t0.Add(tt.at)) // read again, unchanged
		if v := JudgeLease(seen, "me", t0.Add(tt.at), ttl); v != tt.want {
			t.Errorf("another's lease unchanged for %s: %s, want %s", tt.at, v, tt.want)
		}
	}
	renewed := l.Seen("c2", "other", t0.Add(50*time.Second))
	if v := JudgeLease(renewed, "me", t0.Add(100*time.Second), ttl); v != LeaseHeld {
		t.Errorf("a lease renewed 50 s ago: %s, want held", v)
	}
	if v := JudgeLease(l.Seen("c3", "me", t0), "me", t0.Add(time.Hour), ttl); v != LeaseOurs {
		t.Errorf("a lease naming this instance: %s, want ours", v)
	}
}
