package lifecycle

import (
	"strings"

	"pool/forge"
)

// Facts are the parts of an Observation the pool reads only when the
// decision needs them: each costs a request (or a look in the clone).
// Observe fills in what the PR itself shows; Plan names the facts to read
// next, the pool reads them into the observation, and asks again, until
// Plan names none: then Decide decides, once.
type Facts uint

const (
	FactReviews      Facts = 1 << iota // Observation.Reviews
	FactParents                        // Observation.HeadParents: the head a merge update made
	FactDiff                           // Observation.DiffHash: the head a rebase update of the pool's made
	FactTree                           // Observation.TreeDiffers: the head an update of the pool's made
	FactBudget                         // Observation.Allowed, Outsider, PRSessions, AuthorSessions
	FactChecks                         // Observation.Checks
	FactDependencies                   // Observation.OpenDependencies
	FactClaims                         // Observation.Claim
)

// allFacts is every fact: what Decide takes the observation to hold.
const allFacts = FactReviews | FactParents | FactDiff | FactTree | FactBudget | FactChecks | FactDependencies | FactClaims

var factNames = []string{"reviews", "parents", "diff", "tree", "budget", "checks", "dependencies", "claims"}

// Has reports whether f holds every fact of g.
func (f Facts) Has(g Facts) bool { return f&g == g }

func (f Facts) String() string {
	var names []string
	for i, name := range factNames {
		if f&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "+")
}

// read is the outcome of decide on an observation that lacks facts the
// decision needs (Action.need). Decide never returns it: it takes the
// observation to hold every fact.
const read Kind = "read"

// reading asks for the facts of need that o has not read.
func reading(need Facts) Action { return Action{Kind: read, need: need} }

// Plan returns the facts the decision on o needs read next (none: Decide
// decides), and o with what the facts read so far settle weighed once (the
// verdict on the reviews, the checks' summary), for Decide and the next
// Plan to take instead of weighing them again. It walks Decide's own tree,
// and stops where that needs a fact o has not read (Observation.Read).
//
// Claims are asked for only when a slot could take the PR now
// (Observation.SlotFree): the slot reads them again before its session.
// The claims of a head the pool has not decided on are asked for with its
// reviews when Observation.ReadAhead says so: a new head is likely to get
// a session, and then it waits one round trip less.
func Plan(p Policy, t Track, o Observation) (Observation, Facts) {
	o = o.weigh(p, t)
	_, act := decide(p, t, o)
	if act.Kind != read {
		return o, 0
	}
	return o, act.need &^ o.Read
}

// lacks returns the facts of need o has not read.
func (o Observation) lacks(need Facts) Facts { return need &^ o.Read }

// weighed hears each weighing of a PR's reviews (Policy.Approval) and
// checks (Summarize): a test counts them.
var weighed = func(what string) {}

// weighing is what an observation's facts settle, weighed once.
type weighing struct {
	verdict Verdict
	weighed bool       // verdict holds the approval
	update  HeadUpdate // the memory of the pool's update the verdict was weighed with
	summary Summary
	summed  bool // summary holds the checks' summary
}

// weigh settles what the facts read so far decide alone: the approval
// once the reviews (and the facts of the pool's update) are read, the
// checks' summary once the checks are.
func (o Observation) weigh(p Policy, t Track) Observation {
	if !o.w.weighed && !o.lacksApprovalFacts(p, t) {
		o.w.verdict, o.w.weighed = p.Approval(t, o), true
		o.w.update = t.atHead(o.HeadSHA, o.Now).Update
	}
	if !o.w.summed && o.Read.Has(FactChecks) {
		o.w.summary, o.w.summed = Summarize(o.Checks, RequiredContexts(o.Protection)), true
	}
	return o
}

// lacksApprovalFacts reports whether the approval needs facts o has not read.
func (o Observation) lacksApprovalFacts(p Policy, t Track) bool {
	return o.lacks(approvalFacts(p.Rule, t.atHead(o.HeadSHA, o.Now), o)) != 0
}

// approvalFacts are the facts the verdict on o's head takes (t at the
// head): its reviews; what judging the pool's update of it takes
// (updateFacts); and, once the reviews show a request for changes on
// another commit that the forge has not marked stale, the head's parents,
// which tell whether the head only merged something into that commit
// (RequestStands).
func approvalFacts(r ReviewRule, t Track, o Observation) Facts {
	need := FactReviews | updateFacts(t, o.HeadSHA)
	if o.Read.Has(FactReviews) && r.requestOffHead(o) {
		need |= FactParents
	}
	return need
}

// approval is Policy.Approval, weighed once per observation: a verdict
// weighed with another memory of the PR's update than t's is weighed again.
func (o Observation) approval(p Policy, t Track) Verdict {
	if o.w.weighed && sameUpdate(o.w.update, t.atHead(o.HeadSHA, o.Now).Update) {
		return o.w.verdict
	}
	return p.Approval(t, o)
}

// checks is the checks' summary, summed up once per observation.
func (o Observation) checks() Summary {
	if o.w.summed {
		return o.w.summary
	}
	return Summarize(o.Checks, RequiredContexts(o.Protection))
}

func sameUpdate(a, b HeadUpdate) bool {
	return a.From == b.From && a.Base == b.Base && a.Produced == b.Produced && a.OldMergeBase == b.OldMergeBase &&
		a.Style == b.Style && a.Diff == b.Diff && a.At.Equal(b.At)
}

// Approved reports whether the counted reviews approve the head, as Plan
// weighed them (false before the reviews are read).
func (o Observation) Approved() bool {
	return o.w.weighed && o.w.verdict.State == forge.ReviewApproved
}

// updateFacts are the facts judging the head takes after the pool's
// update of it (t at the head): the head's parents (a merge) or the PR's
// diff (a rebase), and its tree.
func updateFacts(t Track, head string) Facts {
	u := t.Update
	switch {
	case !u.Made() || head != u.Produced:
		return 0
	case u.Style == "rebase":
		return FactDiff | FactTree
	}
	return FactParents | FactTree
}
