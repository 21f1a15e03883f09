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
	CIPending        State = "ci_pending"
	CIFailing        State = "ci_failing"
	MergeFailed      State = "merge_failed"
	Conflict         State = "conflict"
	ChangesRequested State = "changes_requested"
	Commented        State = "commented"
	AwaitingHuman    State = "awaiting_human"
	Closed           State = "closed"
)

// Retrying reports whether the state is an approved PR the pool keeps trying to merge.
func (s State) Retrying() bool {
	return s == CIPending || s == CIFailing || s == MergeFailed || s == MergeScheduled
}

// Track is the pool's memory of one PR. It is persisted, and everything in it
// can be rebuilt from the forge if lost.
type Track struct {
	State       State     `json:"state"`
	HeadSHA     string    `json:"head_sha"`     // head when last observed
	ReviewedSHA string    `json:"reviewed_sha"` // head at which a counted review was last seen
	Attempts    int       `json:"attempts"`     // merge retry cycles since approval
	LastStatus  string    `json:"last_status"`  // last merge answer or checks state, for diagnostics
	ConflictSHA string    `json:"conflict_sha"` // head the conflict comment was posted for
	FixerSHA    string    `json:"fixer_sha"`    // head a fixer session was started for
	Failures    int       `json:"failures"`     // sessions at this head that left no review
	NotBefore   time.Time `json:"not_before"`   // no new session before this
	ArmedSHA    string    `json:"armed_sha"`    // head an auto-merge was scheduled for
}

// Checks summarises a head's commit statuses.
type Checks string

const (
	ChecksNone    Checks = "none" // nothing reported: unknown, never green
	ChecksPending Checks = "pending"
	ChecksGreen   Checks = "success"
	ChecksFailing Checks = "failure"
)

// Summarize folds the newest status per context into one Checks value.
func Summarize(statuses []forgejo.Status) Checks {
	if len(statuses) == 0 {
		return ChecksNone
	}
	out := ChecksGreen
	for _, s := range statuses {
		switch s.State {
		case "failure", "error":
			return ChecksFailing
		case "success", "warning":
		default:
			out = ChecksPending
		}
	}
	return out
}

// Observation is what the forge shows about a PR now, plus the claim verdict
// and any hint from a just-finished reviewer session.
type Observation struct {
	Open      bool
	Merged    bool
	HeadSHA   string
	Skip      bool // carries the skip label
	Mergeable bool
	// Review is the state of the newest counted review on the head commit:
	// "" when there is none.
	Review string
	Checks Checks
	Claim  claims.Verdict
	// Hint is the merge_status a reviewer session just reported, if any.
	Hint string
	Now  time.Time
}

// Kind is what the pool should do.
type Kind string

const (
	Wait         Kind = "wait"     // nothing now
	Review       Kind = "review"   // start a reviewer session
	Fix          Kind = "fix"      // start a fixer session for failing checks
	Merge        Kind = "merge"    // merge, pinned to the head
	Arm          Kind = "arm"      // schedule an auto-merge for when checks pass
	Disarm       Kind = "disarm"   // cancel an auto-merge armed for an older head
	Drop         Kind = "drop"     // stop tracking (merged or closed)
	Skip         Kind = "skip"     // a human owns it
	NoteConflict Kind = "conflict" // post the conflict comment once
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
	// AutoMerge arms merge_when_checks_succeed while checks are pending.
	AutoMerge bool
	// RetryBase and RetryMax bound the wait after a session that left no review.
	RetryBase, RetryMax time.Duration
}
