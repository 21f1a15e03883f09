// Package lifecycle decides, for one PR at a time, what the pool does next.
//
// Decide is a pure function of the pool's memory of a PR (Track) and what the
// forge shows now (Observation); it returns the new Track and one Action. A
// separate step in package pool performs the action. The forge is the record:
// a reviewer's report is only a hint, and "merged" counts only when the forge
// says merged.
package lifecycle

import (
	"time"

	"pool/claims"
	"pool/forgejo"
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
	MergeFailed      State = "merge_failed"
	Conflict         State = "conflict"
	ChangesRequested State = "changes_requested"
	Commented        State = "commented"
	AwaitingHuman    State = "awaiting_human"
	Closed           State = "closed"
)

// Retrying reports whether the state is an approved PR the pool keeps trying to merge.
func (s State) Retrying() bool {
	return s == CIPending || s == CIFailing || s == MergeFailed || s == MergeScheduled || s == MergeQueued || s == QuotaExceeded
}

// Track is the pool's memory of one PR. It is persisted, and everything in it
// can be rebuilt from the forge if lost. Only the functions of this package
// change it.
type Track struct {
	State       State     `json:"state"`
	HeadSHA     string    `json:"head_sha"`     // head when last observed
	HeadSeen    time.Time `json:"head_seen"`    // when the pool first saw that head
	ReviewedSHA string    `json:"reviewed_sha"` // head at which a counted review was last seen
	Attempts    int       `json:"attempts"`     // merge retry cycles since approval
	LastStatus  string    `json:"last_status"`  // last merge answer or checks state, for diagnostics
	ConflictSHA string    `json:"conflict_sha"` // head the conflict comment was posted for
	FixerSHA    string    `json:"fixer_sha"`    // head a fixer session was started (created and prompted) for
	Failures    int       `json:"failures"`     // sessions at this head that left no review
	NotBefore   time.Time `json:"not_before"`   // no new session before this
	ArmedSHA    string    `json:"armed_sha"`    // head an auto-merge was scheduled for (by an older pool)
	// Blocked says why the forge's branch protection (or the review rule)
	// refuses a merge the pool cannot bring about by itself; "" when not.
	Blocked string `json:"blocked"`
	// NotedBlock is the head and reason the blocked note was posted for.
	NotedBlock string `json:"noted_block"`
	// WaitedForChecks: the approved head waited for pending checks; its
	// merge is announced on the issues the PR closes.
	WaitedForChecks bool `json:"waited_for_checks"`
	// LandedIn is the base branch's commit that holds the head, when the
	// forge lists the PR open, refuses to merge it and refused to mark it
	// merged: the PR waits for a person.
	LandedIn string `json:"landed_in,omitempty"`
	// QuotaRefusals counts the merges of this head the forge refused for
	// its storage quota; no merge is tried before QuotaUntil unless the PR
	// changes after QuotaSeen, its update time when first decided after
	// the last refusal.
	QuotaRefusals int       `json:"quota_refusals,omitempty"`
	QuotaUntil    time.Time `json:"quota_until,omitzero"`
	QuotaSeen     time.Time `json:"quota_seen,omitzero"`
}

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
	Behind    bool // the base has moved past the commit the head branched from
	// Fork says the head branch is in another repository than the base
	// (or the forge did not say where): a fixer would push to a stranger's
	// repository.
	Fork bool
	// Reviews are all the PR's reviews; Policy.Rule says which count.
	Reviews []forgejo.Review
	// Checks are the head's checks, read when the head is approved.
	Checks []Check
	// Protection is the base branch's protection, the floor of every merge.
	Protection forgejo.Protection
	// OpenDependencies are the open issues the PR depends on ("#12",
	// "owner/repo#3"), read when its head is approved and green: the forge
	// refuses to merge it (HTTP 500, no message) while any is open.
	OpenDependencies []string
	Claim            claims.Verdict
	// Hint is the merge_status a reviewer session just reported, if any.
	Hint string
	Now  time.Time
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
	NoteNoReview Kind = "no-review" // post, once, that sessions leave no counted review
)

// Action is one decision. Diagnostic asks for the retry comment alongside.
type Action struct {
	Kind       Kind
	Reason     string
	Diagnostic bool
	// Announce asks for the "scheduled merge completed" note on the linked issue.
	Announce bool
}

// Policy is the configuration that shapes decisions.
type Policy struct {
	DiagnosticEvery int
	// Rule says whose reviews count.
	Rule ReviewRule
	// ChecksGrace is how long a head with no statuses, on a branch that
	// requires none, waits for a CI to report before it merges.
	ChecksGrace time.Duration
	// RetryBase and RetryMax bound the wait after a session that left no review.
	RetryBase, RetryMax time.Duration
	// NoFixers: no fixer session is started for failing checks
	// (fixers.enabled false). FixForks: fixers are started on PRs from
	// forks too (fixers.forks).
	NoFixers, FixForks bool
}
