// Package train plans merge trains: the approved PRs waiting to merge onto
// one base, tested together and landed one after another.
//
// Car k is a merge commit the pool makes in its own clone, whose first
// parent is car k-1 (the base tip for the first car) and whose second is
// the approved head of PR k. The cars are pushed to branches of the
// pool's own, where CI tests each; a car lands when every car ahead of it
// has landed (the base tip is its first parent) and its checks are green:
// the pool pushes it to the PR's branch, leased on the approved head, and
// asks the forge to merge the PR pinned to it.
//
// Like package lifecycle, the package decides and does nothing: Plan
// reads the train and what the forge shows, and returns the actions; the
// merge queue's worker carries them out, and Apply records each in the
// train.
package train

import "slices"

// Checks is where the required checks on a car's commit stand.
type Checks int

const (
	Pending Checks = iota // not all reported yet
	Green                 // all required checks succeeded
	Failed                // one failed (a cancelled or superseded run is not a failure)
)

// Car is one car of a train.
type Car struct {
	PR     int
	Head   string // the approved head of the PR the car merges
	Parent string // the car ahead's commit, or the base tip for the first car
	Commit string // the car: the merge of Parent and Head the pool made
}

// Train is the train of one base, front car first.
type Train struct {
	Base string // the base branch
	Cars []Car
}

// Waiting is a PR that may ride a train: approved at Head, its checks
// green, from a branch of the base's own repository. A PR from a fork or
// an AGit PR, whose branch the pool cannot push to, merges on its own.
type Waiting struct {
	PR   int
	Head string
}

// Observation is what the pool reads before it plans.
type Observation struct {
	Tip     string    // the base branch's tip now
	Waiting []Waiting // the PRs that may ride, in the merge queue's order
	// Checks holds the required checks on each car's commit; a commit
	// missing is Pending.
	Checks map[string]Checks
	// Failing names a failing check of each car commit whose checks failed.
	Failing map[string]string
	// Reruns says, of each car commit whose checks failed, whether the
	// forge may run them again; a commit missing is NoRerun.
	Reruns map[string]Rerun
	// TreeDiffers: the base's tree after the last landing is not its car's
	// (the forge merged something else than the pool tested).
	TreeDiffers bool
	Size        int // the most cars of one train
}

// Kind is what an action does.
type Kind string

const (
	Form  Kind = "form"  // make a car for PR at the end of the train and push it
	Land  Kind = "land"  // push the front car to its PR's branch and merge it
	Leave Kind = "leave" // the PR left (a new head, no longer approved or green): no note
	Eject Kind = "eject" // the car's checks failed: the PR leaves with one note
	Stop  Kind = "stop"  // the landed tree is not the tested one: one note, every car re-formed
	Drop  Kind = "drop"  // the car is re-formed: its parent is gone or moved
	// Again: the car's checks failed where a car behind it, which holds
	// its PR, passed (a flake, maybe): the forge runs its failed jobs again,
	// once, and the car waits for them instead of leaving.
	Again Kind = "rerun"
)

// Rerun is whether the forge may run a failed car's checks again, and
// whether it did: a car that failed where a car behind it passed is run
// again once, where the forge can, before its PR is ejected.
type Rerun int

const (
	// NoRerun: a failing check is not from a run the forge could run again
	// (an external CI's status).
	NoRerun Rerun = iota
	// MayRerun: every failing check is from an Actions run of the forge's,
	// not run again yet.
	MayRerun
	// Reran: the forge ran the failed jobs again once; they failed again.
	Reran
	// NoEndpoint: the forge has no endpoint to run them again (Forgejo).
	NoEndpoint
	// RerunRefused: the forge did not run them again (no write access to
	// its Actions, a disabled workflow, a run gone, an error).
	RerunRefused
)

// Action is one step the merge queue's worker carries out.
type Action struct {
	Kind   Kind
	PR     int
	Head   string // Form: the approved head
	Commit string // the car's commit (Land, Eject, Drop)
	Check  string // Eject: the failing check
	// Flake: a car behind the ejected one, which holds its PR, passed: the
	// failure may be a flake (said in the note).
	Flake bool
	// Rerun (Eject with Flake, or after a rerun): whether its checks ran
	// again, or why not (said in the note).
	Rerun  Rerun
	Reason string
}

// Plan returns the actions that take train t one step on: the PRs that
// left go, a failing car is ejected (or, a flake maybe, run again once),
// the cars behind a gap are re-formed,
// the front car lands when it is green on the base tip, and new cars are
// formed for waiting PRs up to the size. Apply records them in order; a
// Land comes last, as it moves the base tip the new cars do not sit on.
func Plan(t Train, o Observation) []Action {
	var out []Action
	if o.TreeDiffers {
		out = append(out, Action{Kind: Stop, Reason: "the base's tree after the last landing is not the tree its car tested"})
		return append(out, dropFrom(t.Cars, 0, "the train stopped: every car is re-formed on the base")...)
	}
	cars, acts := keep(t.Cars, o)
	out = append(append(out, acts...), form(cars, gone(acts), o)...)
	if len(cars) > 0 && o.Checks[cars[0].Commit] == Green {
		out = append(out, Action{Kind: Land, PR: cars[0].PR, Commit: cars[0].Commit, Reason: "the front car is green on the base tip"})
	}
	return out
}

// keep walks the train from the front and returns the cars that stay and
// the actions for the others: the first car that is gone (its PR left,
// its parent is not the base tip or the car ahead, or its checks failed
// while every car ahead passed) and every car behind it, which is
// re-formed.
//
// A failing car with a car ahead not green yet stays: a car holds every
// PR ahead of it, so its failure may be theirs (the CI reported the cars
// out of order), and ejecting it would eject a PR for another's fault and
// re-form the cars behind twice. The front-most failure is ejected first.
//
// A failing car with a car behind it that passed (the car behind holds
// its PR: the failure may be a flake) whose checks the forge may run again
// (MayRerun) stays too, with an Again action: the forge runs its failed
// jobs again, once, and the car waits for them as for any check not
// reported. Failing again (Reran), or where the forge cannot run them
// again, it is ejected, the note saying which.
func keep(cars []Car, o Observation) ([]Car, []Action) {
	parent, aheadGreen := o.Tip, true
	var out []Action // the reruns asked of the cars that stay
	for i, c := range cars {
		var a Action
		switch head, ok := waitingHead(o.Waiting, c.PR); {
		case c.Parent != parent:
			return cars[:i], append(out, dropFrom(cars, i, "the car's parent is no longer the base tip or the car ahead")...)
		case !ok || head != c.Head:
			a = Action{Kind: Leave, PR: c.PR, Commit: c.Commit, Reason: "the PR left the merge queue or has a new head"}
		case o.Checks[c.Commit] == Failed && aheadGreen && passedBehind(cars[i+1:], o) && o.Reruns[c.Commit] == MayRerun:
			// Not ejected yet: the car waits for its checks again, as
			// one that has not reported, and the cars behind with it.
			out = append(out, Action{Kind: Again, PR: c.PR, Commit: c.Commit, Check: o.Failing[c.Commit],
				Reason: "the car's checks failed, and a car behind it, which holds it, passed: its failed jobs run again, once"})
			parent, aheadGreen = c.Commit, false
			continue
		case o.Checks[c.Commit] == Failed && aheadGreen:
			a = Action{Kind: Eject, PR: c.PR, Commit: c.Commit, Check: o.Failing[c.Commit], Flake: passedBehind(cars[i+1:], o),
				Reason: "the car's checks failed"}
			if a.Flake || o.Reruns[c.Commit] == Reran {
				a.Rerun = o.Reruns[c.Commit]
			}
		default:
			parent, aheadGreen = c.Commit, aheadGreen && o.Checks[c.Commit] == Green
			continue
		}
		return cars[:i], append(append(out, a), dropFrom(cars, i+1, "a car ahead left the train")...)
	}
	return cars, out
}

// dropFrom drops cars[i:] for re-forming.
func dropFrom(cars []Car, i int, reason string) []Action {
	var out []Action
	for _, c := range cars[i:] {
		out = append(out, Action{Kind: Drop, PR: c.PR, Commit: c.Commit, Reason: reason})
	}
	return out
}

// passedBehind reports whether a car behind passed: it holds the failed
// car's PR, so the failure may not be the PR's.
func passedBehind(behind []Car, o Observation) bool {
	return slices.ContainsFunc(behind, func(c Car) bool { return o.Checks[c.Commit] == Green })
}

// gone are the PRs that leave the train in acts: they ride again only
// after the merge queue has them again, at an approved head.
func gone(acts []Action) map[int]bool {
	out := map[int]bool{}
	for _, a := range acts {
		if a.Kind == Leave || a.Kind == Eject {
			out[a.PR] = true
		}
	}
	return out
}

// form forms cars for the waiting PRs not in the train nor gone, in
// order, up to the size.
func form(cars []Car, gone map[int]bool, o Observation) []Action {
	var out []Action
	for _, w := range o.Waiting {
		if len(cars)+len(out) >= max(o.Size, 1) {
			break
		}
		if !gone[w.PR] && !slices.ContainsFunc(cars, func(c Car) bool { return c.PR == w.PR }) {
			out = append(out, Action{Kind: Form, PR: w.PR, Head: w.Head, Reason: "waiting to merge"})
		}
	}
	return out
}

func waitingHead(waiting []Waiting, pr int) (string, bool) {
	for _, w := range waiting {
		if w.PR == pr {
			return w.Head, true
		}
	}
	return "", false
}

// Apply records action a in the train: tip is the base tip now, commit
// the car the pool made (Form). A Form appends a car on the last one (the tip for the first);
// a Land takes the front car off; Leave, Eject, Drop and Stop take their
// car, or every car, off.
func Apply(t Train, a Action, tip, commit string) Train {
	cars := slices.Clone(t.Cars)
	switch a.Kind {
	case Form:
		parent := tip
		if len(cars) > 0 {
			parent = cars[len(cars)-1].Commit
		}
		cars = append(cars, Car{PR: a.PR, Head: a.Head, Parent: parent, Commit: commit})
	case Stop:
		cars = nil
	case Again:
		// the car stays, waiting for its checks again
	default:
		cars = slices.DeleteFunc(cars, func(c Car) bool { return c.PR == a.PR })
	}
	t.Cars = cars
	return t
}
