// Package lifecycle decides, for one PR at a time, what the pool does next.
//
// Decide is a pure function of the pool's memory of a PR (Track) and what the
// forge shows now (Observation); it returns the new Track and one Action. A
// separate step in package pool performs the action, and only once it
// succeeded records the marks the action carries (Action.Marks: a note
// posted, an auto-merge cancelled), so a failed one is asked for again by the
// next decision. The forge is the record:
// a reviewer's report is only a hint, and "merged" counts only when the forge
// says merged. MayMerge is the one answer to "may it merge now?": the
// supervisor's, and the one `pool report` and `pool tick` give. Plan walks
// Decide's own tree over what the pool has read of a PR so far, and names
// the facts (Facts) the decision needs read next: the pool reads only
// those, and decides once.
//
// It is pure: it links nothing but package forge (the forge's plain data,
// the claims' verdict included), never an HTTP client (TestLinksOnlyTheLeaf
// and internal/layers keep it so).
package lifecycle

import (
	"time"

	"pool/forge"
)

// State is where a PR stands in the merge lifecycle.
type State string

const (
	Unreviewed       State = "unreviewed"
	Merged           State = "merged"
	MergeScheduled   State = "merge_scheduled"
	MergeQueued      State = "merge_queued" // approved and green: in the pool's merge queue
	CIPending        State = "ci_pending"
	CIFailing        State = "ci_failing"
	DependenciesOpen State = "dependencies_open" // approved and green, waiting for the issues it depends on to close
	QuotaExceeded    State = "quota_exceeded"    // the forge refused the merge for its storage quota: backing off
	MergeRefused     State = "merge_refused"     // the forge refused the merge for a rule: waiting for what it depends on to change
	OutOfDate        State = "out_of_date"       // approved and green, behind its base: queued for an update
	Updating         State = "updating"          // the pool updated the head branch: waiting for the forge to show the new head
	UpdateChecks     State = "update_checks"     // updated, the approval carried over: waiting for checks after the update
	WorkInProgress   State = "work_in_progress"  // approved and green, marked work in progress: waiting for the mark to go
	MergeFailed      State = "merge_failed"
	Conflict         State = "conflict"
	ChangesRequested State = "changes_requested"
	Commented        State = "commented"
	AwaitingHuman    State = "awaiting_human"
	Closed           State = "closed"
)

// Retrying reports whether the state is an approved PR the pool keeps trying to merge.
func (s State) Retrying() bool {
	return s == CIPending || s == CIFailing || s == MergeFailed || s == MergeScheduled || s == MergeQueued || s == QuotaExceeded ||
		s == MergeRefused || s == OutOfDate || s == Updating || s == UpdateChecks
}

// HoldsUpdate reports whether the PR holds its base's one update: the
// pool updated it, and it is on its way to the merge (the new head shows,
// is reviewed again, or waits for its checks). One stuck on the way (a
// request for changes, failing checks, a conflict, a block) lets the next
// PR be updated.
func (t Track) HoldsUpdate() bool {
	if !t.Update.Made() {
		return false
	}
	switch t.State {
	case Updating, UpdateChecks, Unreviewed, CIPending, MergeQueued, OutOfDate:
		return true
	}
	return false
}

// UpdateHolder returns the PR that holds its base's one update among
// tracks (all of one base), or 0: of those that hold it, the one the pool
// updated last. A PR that let go of the update (its checks failed) and
// holds again after another was updated waits for that one, never the
// other way round, and no PR waits on itself.
func UpdateHolder(tracks map[int]Track) int {
	holder := 0
	var at time.Time
	for n, t := range tracks {
		if !t.HoldsUpdate() {
			continue
		}
		if holder == 0 || t.Update.At.After(at) || (t.Update.At.Equal(at) && n < holder) {
			holder, at = n, t.Update.At
		}
	}
	return holder
}

// Track is the pool's memory of one PR. It is persisted, and everything in it
// can be rebuilt from the forge if lost. Only the functions of this package
// change it.
type Track struct {
	State    State     `json:"state"`
	HeadSHA  string    `json:"head_sha"`  // head when last observed
	HeadSeen time.Time `json:"head_seen"` // when the pool first saw that head
	// HeadBefore is when the pool first saw the head before this one: the
	// notes on this head posted since belong to its wait now (the head
	// was another then), those before to an earlier wait at it.
	HeadBefore  time.Time `json:"head_before,omitzero"`
	ReviewedSHA string    `json:"reviewed_sha"`          // head at which a counted review was last seen
	Attempts    int       `json:"attempts"`              // merge calls at this head that failed (not refusals, not "try again later")
	LastStatus  string    `json:"last_status"`           // last merge answer or checks state, for diagnostics
	ConflictSHA string    `json:"conflict_sha"`          // head the conflict comment was posted for
	ConflictAt  string    `json:"conflict_at,omitempty"` // head a conflict was found at (noted or not)
	// ConflictBase is the base's tip the first decision after the conflict
	// saw: the conflict holds until the base moves from it and the forge
	// reads the PR mergeable.
	ConflictBase string `json:"conflict_base,omitempty"`
	// ConflictHint is the head a reviewer reported a conflict at, and
	// HintedAt when: only the forge's "not mergeable" still read
	// ConflictSettle after it confirms the conflict.
	ConflictHint string    `json:"conflict_hint,omitempty"`
	HintedAt     time.Time `json:"hinted_at,omitzero"`
	FixerSHA     string    `json:"fixer_sha"` // head a fixer session was started (created and prompted) for
	Failures     int       `json:"failures"`  // sessions at this head that left no review
	// Unfinished counts the sessions of this head that failed to start (a
	// fetch, the agent server or the forge failed) or did not run to their
	// end: a back-off, never the no-review hold, which only sessions that
	// ran to their end and left no review earn.
	Unfinished int `json:"unfinished,omitempty"`
	// Diagnostics counts the diagnostic comments of this head's wait to
	// merge; DiagnosedAt is when the last was decided on (or the wait began).
	Diagnostics int       `json:"diagnostics,omitempty"`
	DiagnosedAt time.Time `json:"diagnosed_at,omitzero"`
	// NotedNoReview is the head the note that sessions leave no review was
	// posted for.
	NotedNoReview string `json:"noted_no_review,omitempty"`
	// NotedUnvouched is the head the note on approvals that no session of
	// the pool filed was posted for.
	NotedUnvouched string    `json:"noted_unvouched,omitempty"`
	NotBefore      time.Time `json:"not_before"` // no new session before this
	ArmedSHA       string    `json:"armed_sha"`  // head an auto-merge was scheduled for (by an older pool)
	// Blocked says why the forge's branch protection (or the review rule)
	// refuses a merge the pool cannot bring about by itself; "" when not.
	Blocked string `json:"blocked"`
	// NotedBlock is the head and reason the blocked note was posted for.
	NotedBlock string `json:"noted_block"`
	// WaitedForChecks: the approved head waited for pending checks; its
	// merge is announced on the issues the PR closes.
	WaitedForChecks bool `json:"waited_for_checks"`
	// TrainLeft is the head whose car failed in a merge train (one note
	// named the check; no car behind it passed): the pool merges the PR at
	// it neither on a train nor one by one, as an update onto the base
	// would make the tree its car tested. A new head starts over. Kept in
	// the store: a relaunched pool does not try the PR again either.
	TrainLeft string `json:"train_left,omitempty"`
	// TrainSolo is the head at which the PR rides no merge train and merges
	// one by one, and TrainSoloWhy why (SoloConflict, SoloLease,
	// SoloFlake). It follows the pool's own update of that head (Update
	// From and Produced); a new head of the author's starts over and rides
	// again. Kept in the store: a relaunched pool does not put the PR on a
	// train at that head either.
	TrainSolo    string `json:"train_solo,omitempty"`
	TrainSoloWhy string `json:"train_solo_why,omitempty"`
	// LandedIn is the base branch's commit that holds the head, when the
	// forge lists the PR open, refuses to merge it and refused to mark it
	// merged: the PR waits for a person.
	LandedIn string `json:"landed_in,omitempty"`
	// Refusals counts the merges of this head the forge refused for a rule
	// (Refused names it: forge.RuleQuota, RuleOutdated, ...). No merge is
	// tried before RefusedUntil unless what the rule depends on changed
	// since the first decision after the last refusal: the PR (its update
	// time after RefusedSeen: a comment, a label, a review) or RefusedOn
	// (the base, the checks, the reviews, the protection). A new head
	// starts over.
	Refusals     int       `json:"refusals,omitempty"`
	Refused      string    `json:"refused,omitempty"`
	RefusedUntil time.Time `json:"refused_until,omitzero"`
	RefusedSeen  time.Time `json:"refused_seen,omitzero"`
	RefusedOn    string    `json:"refused_on,omitempty"`
	// Update is the update of the head branch the pool made itself, kept
	// for the head it made and the one after it (whose approval it judges).
	Update HeadUpdate `json:"update,omitzero"`
	// Ended is the PR's last session, which ended and left its outcome to
	// the next decision (SessionEnded); that decision reads it and clears it.
	Ended SessionEnd `json:"ended,omitzero"`
}

// SessionEnd is a session that ended at Head. Hint is the merge_status its
// reviewer reported ("conflict", "merged", ...): a hint that only the forge
// can confirm.
type SessionEnd struct {
	Head string `json:"head"`
	Hint string `json:"hint,omitempty"`
	// Cut: the session did not run to its end (lost, stuck, timed out,
	// errored): with no review, it backs off (SessionUnfinished) and
	// counts toward no hold.
	Cut bool `json:"cut,omitempty"`
}

// HeadUpdate is an update of a PR's head branch made by the pool: the base
// brought into the approved head.
type HeadUpdate struct {
	From string `json:"from"` // the approved head the pool updated
	Base string `json:"base"` // the base tip the pool saw
	// Produced is the head the forge's update made, read right after the call:
	// the one commit the approval may carry over to. Empty when the pool
	// could not read a new head then.
	Produced string `json:"produced,omitempty"`
	// OldMergeBase is the PR's merge base before the update: while the
	// forge still shows it with the new head, it has not taken the update
	// in (its diff and its behind-ness are the old ones).
	OldMergeBase string    `json:"old_merge_base,omitempty"`
	Style        string    `json:"style"`          // merge, rebase or StyleTrain
	Diff         string    `json:"diff,omitempty"` // hash of the PR's diff at From (rebase)
	At           time.Time `json:"at"`
}

// StyleTrain is the style of a head the pool pushed from a merge train
// (package train): its car, a merge commit whose first parent is the base
// tip and whose second is the approved head. Its tree is that of the merge
// an update by merge makes, so its approval carries over by the same rule.
const StyleTrain = "train"

// Made reports whether an update is recorded.
func (u HeadUpdate) Made() bool { return u.From != "" }

// Observation is what the forge shows about a PR now, plus the claim verdict
// and any hint from a just-finished reviewer session.
type Observation struct {
	Open      bool
	Merged    bool
	Updated   time.Time // the PR's update time (a comment, a label, a push...)
	HeadSHA   string
	Author    string
	Skip      bool // carries the skip label
	Mergeable bool
	Draft     bool // marked work in progress: the forge will not merge it
	Behind    bool // the base has moved past the commit the head branched from
	BaseSHA   string
	MergeBase string // the commit the head branched from, as the forge last computed it
	// MayUpdate: the pool may push to the head branch (it is in the
	// repository, or its author lets maintainers edit).
	MayUpdate bool
	// HeadParents and DiffHash describe the head after an update the pool
	// made (Track.Update): read only then, and the parents also when a
	// request for changes on another commit may stand for the head
	// (ReviewRule.RequestStands).
	HeadParents []string
	DiffHash    string
	// TreeDiffers: the head's tree is not the merge of the approved head
	// and the base tip the update brought in (checked in the pool's clone,
	// where its git can: else only the commit is checked).
	TreeDiffers bool
	// Fork says the head branch is in another repository than the base
	// (or the forge did not say where): a fixer would push to a stranger's
	// repository.
	Fork bool
	// Reviews are all the PR's reviews; Policy.Rule says which count.
	Reviews []forge.Review
	// Checks are the head's checks, read when the head is approved.
	Checks []Check
	// Protection is the base branch's protection, the floor of every merge.
	Protection forge.Protection
	// OpenDependencies are the open issues the PR depends on ("#12",
	// "owner/repo#3"), read when its head is approved and green: the forge
	// refuses to merge it (HTTP 500, no message) while any is open.
	OpenDependencies []string
	// Outsider: the author is one whose PRs get no session without a
	// maintainer's label (reviews.authors); Allowed: the PR carries that
	// label. PRSessions and AuthorSessions are the review sessions started
	// in the last 24 hours on this PR and on its author's PRs.
	Outsider, Allowed          bool
	PRSessions, AuthorSessions int
	Claim                      forge.ClaimVerdict
	// NoReviewNoted: the pool's account has noted on the PR, by this or
	// another pool, that sessions of this head leave no review that counts
	// (read with the claims).
	NoReviewNoted bool
	Now           time.Time
	// Read are the facts read into the observation so far (Plan).
	Read Facts
	// SlotFree: a slot could take the PR now; only then are its claims
	// read. ReadAhead: the claims of a head the pool has not decided on
	// are read with its reviews (not in the pool's first cycle, where
	// every PR of a fresh store is new, and most wait for someone).
	SlotFree, ReadAhead bool
	// w is what the facts read settle, weighed once (Plan).
	w weighing
}

// Kind is what the pool should do.
type Kind string

const (
	Wait         Kind = "wait"      // nothing now
	Review       Kind = "review"    // start a reviewer session
	Fix          Kind = "fix"       // start a fixer session for failing checks
	Merge        Kind = "merge"     // queue the merge, pinned to the head
	Disarm       Kind = "disarm"    // cancel an auto-merge an older pool armed
	Drop         Kind = "drop"      // stop tracking (merged or closed)
	Skip         Kind = "skip"      // a human owns it
	NoteConflict Kind = "conflict"  // post the conflict comment once
	NoteBlocked  Kind = "blocked"   // post, once, why the protection refuses the merge
	Update       Kind = "update"    // bring the base into the head branch, in the merge queue
	NoteNoReview Kind = "no-review" // post, once, that sessions leave no counted review
	// NoteWithheld: post, once per head and reason, that the PR gets no
	// session until a maintainer's label (Policy.Budget, Observation.Outsider).
	NoteWithheld Kind = "withheld"
	// NoteUnvouched: post, once per head, that an approval no session of
	// the pool filed does not count.
	NoteUnvouched Kind = "unvouched"
)

// Action is one decision. Diagnostic asks for the retry comment alongside.
type Action struct {
	Kind       Kind
	Reason     string
	Diagnostic bool
	// Announce asks for the "scheduled merge completed" note on the linked issue.
	Announce bool
	// Marks are what the track records once the action succeeded.
	Marks Marks
	// need are the facts a decision of Kind read lacks (Plan).
	need Facts
}

// Marks are what a PR's track remembers of an action that succeeded: a
// note posted, an auto-merge cancelled. The decision returns them with
// the action instead of writing them into the track, and the pool records
// them (Track.Mark) only after the action succeeded: a note or a cancel
// that failed is asked for again by the next decision.
type Marks struct {
	ConflictNoted  string // the head the conflict note was posted for
	BlockNoted     string // the head and reason the blocked note was posted for
	Disarmed       string // the head whose scheduled auto-merge was cancelled
	NoReviewNoted  string // the head the note that sessions leave no review was posted for
	UnvouchedNoted string // the head the note on approvals no session filed was posted for
}

// Mark records the marks of an action that succeeded.
func (t Track) Mark(m Marks) Track {
	if m.ConflictNoted != "" {
		t.ConflictSHA = m.ConflictNoted
	}
	if m.BlockNoted != "" {
		t.NotedBlock = m.BlockNoted
	}
	if m.Disarmed != "" && t.ArmedSHA == m.Disarmed {
		t.ArmedSHA = ""
	}
	if m.NoReviewNoted != "" {
		t.NotedNoReview = m.NoReviewNoted
	}
	if m.UnvouchedNoted != "" {
		t.NotedUnvouched = m.UnvouchedNoted
	}
	return t
}

// Holds reports whether t records every mark of m already: the action
// that implies them was carried out since it was decided (by another of
// the pool's goroutines), and must not be carried out again.
func (t Track) Holds(m Marks) bool {
	if m == (Marks{}) {
		return false
	}
	return (m.ConflictNoted == "" || t.ConflictSHA == m.ConflictNoted) &&
		(m.BlockNoted == "" || t.NotedBlock == m.BlockNoted) &&
		(m.Disarmed == "" || t.ArmedSHA != m.Disarmed) &&
		(m.NoReviewNoted == "" || t.NotedNoReview == m.NoReviewNoted) &&
		(m.UnvouchedNoted == "" || t.NotedUnvouched == m.UnvouchedNoted)
}

// Policy is the configuration that shapes decisions: configs.Config.Policy
// builds it, for the supervisor and for `pool report` and `pool tick`.
type Policy struct {
	DiagnosticEvery int
	// SkipLabel is the label that leaves a PR to humans ("" for none).
	SkipLabel string
	// Rule says whose reviews count.
	Rule ReviewRule
	// ChecksGrace is how long a head with no statuses, on a branch that
	// requires none, waits for a CI to report before it merges.
	ChecksGrace time.Duration
	// RetryBase and RetryMax bound the wait after a session that left no
	// review, and after a refused merge.
	RetryBase, RetryMax time.Duration
	// NoFixers: no fixer session is started for failing checks
	// (fixers.enabled false). FixForks: fixers are started on PRs from
	// forks too (fixers.forks).
	NoFixers, FixForks bool
	// Update says when an approved, green PR behind its base is updated
	// before its merge; UpdateStyle how (merge or rebase).
	Update      UpdateMode
	UpdateStyle string
	// BudgetPR and BudgetAuthor cap the review sessions in 24 hours on a
	// PR and on its author's PRs (0: no cap).
	BudgetPR, BudgetAuthor int
}

// UpdateMode says when the pool updates a PR behind its base.
type UpdateMode string

const (
	UpdateAlways       UpdateMode = "always"        // before every merge of a PR behind its base
	UpdateWhenRequired UpdateMode = "when_required" // when the protection blocks outdated branches
	UpdateNever        UpdateMode = "never"
)

// UpdateStyles are the ways the forge updates a head branch.
var UpdateStyles = []string{"merge", "rebase"}

// updates reports whether a PR behind its base under prot is updated
// before its merge.
func (p Policy) updates(prot forge.Protection) bool {
	switch p.Update {
	case UpdateAlways:
		return true
	case UpdateNever:
		return false
	}
	return prot.BlockOnOutdated
}
