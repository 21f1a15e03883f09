package lifecycle

import (
	"fmt"
	"time"

	"pool/claims"
	"pool/forgejo"
)

// Decide returns the PR's next Track and the one action to take now.
func Decide(p Policy, t Track, o Observation) (Track, Action) {
	if o.Merged {
		announce := t.State == MergeScheduled
		t.State = Merged
		return t, Action{Kind: Drop, Reason: "merged", Announce: announce}
	}
	if !o.Open {
		t.State = Closed
		return t, Action{Kind: Drop, Reason: "closed without merge"}
	}
	if o.HeadSHA != t.HeadSHA {
		t = t.atHead(o.HeadSHA)
	}
	if t.ArmedSHA != "" && t.ArmedSHA != o.HeadSHA {
		t.ArmedSHA = ""
		return t, Action{Kind: Disarm, Reason: "head moved after an auto-merge was scheduled"}
	}
	if o.Skip {
		t.State = AwaitingHuman
		return t, Action{Kind: Skip, Reason: "labelled for humans"}
	}
	switch o.Review {
	case forgejo.ReviewApproved:
		t.ReviewedSHA = o.HeadSHA
		return approved(p, t, o)
	case forgejo.ReviewRequestChanges:
		t.ReviewedSHA, t.State = o.HeadSHA, ChangesRequested
		return t, Action{Kind: Wait, Reason: "changes requested; waiting for a new head"}
	case forgejo.ReviewComment:
		t.ReviewedSHA, t.State = o.HeadSHA, Commented
		return t, Action{Kind: Wait, Reason: "reviewed without a verdict; waiting for a new head"}
	}
	return unreviewed(t, o)
}

// atHead forgets what belonged to the previous head.
func (t Track) atHead(head string) Track {
	t.HeadSHA = head
	t.Attempts, t.Failures = 0, 0
	t.NotBefore = time.Time{}
	t.FixerSHA, t.LastStatus = "", ""
	return t
}

func unreviewed(t Track, o Observation) (Track, Action) {
	t.State = Unreviewed
	switch {
	case o.Claim == claims.Taken:
		return t, Action{Kind: Wait, Reason: "claimed by another pool"}
	case o.Now.Before(t.NotBefore):
		return t, Action{Kind: Wait, Reason: "backing off after a session that left no review"}
	case t.ReviewedSHA != "":
		return t, Action{Kind: Review, Reason: "head changed since the last review"}
	}
	return t, Action{Kind: Review, Reason: "not reviewed at its head"}
}

func approved(p Policy, t Track, o Observation) (Track, Action) {
	if t.ConflictSHA == o.HeadSHA {
		t.State = Conflict
		return t, Action{Kind: Wait, Reason: "conflict; waiting for a rebase"}
	}
	if o.Hint == string(Conflict) && !o.Mergeable {
		t.State, t.ConflictSHA = Conflict, o.HeadSHA
		return t, Action{Kind: NoteConflict, Reason: "reviewer reported a conflict and the forge cannot merge"}
	}
	switch o.Checks {
	case ChecksFailing:
		t, diag := t.retry(p, CIFailing, string(ChecksFailing))
		if t.FixerSHA != o.HeadSHA {
			t.FixerSHA = o.HeadSHA
			return t, Action{Kind: Fix, Reason: "checks failing", Diagnostic: diag}
		}
		return t, Action{Kind: Wait, Reason: "checks failing; fixer already started for this head", Diagnostic: diag}
	case ChecksPending:
		state := CIPending
		if t.ArmedSHA == o.HeadSHA {
			state = MergeScheduled
		}
		t, diag := t.retry(p, state, string(ChecksPending))
		if p.AutoMerge && t.ArmedSHA != o.HeadSHA {
			return t, Action{Kind: Arm, Reason: "checks pending", Diagnostic: diag}
		}
		return t, Action{Kind: Wait, Reason: "checks pending", Diagnostic: diag}
	}
	return t, Action{Kind: Merge, Reason: fmt.Sprintf("approved at head, checks %s", o.Checks)}
}

// retry counts one more merge attempt and says whether it is a diagnostic one.
func (t Track) retry(p Policy, s State, status string) (Track, bool) {
	t.State, t.LastStatus = s, status
	t.Attempts++
	return t, p.DiagnosticEvery > 0 && t.Attempts%p.DiagnosticEvery == 0
}

// AfterMerge folds the forge's answer to a merge call into the Track. A merge
// the forge reports done is confirmed by re-reading the PR and deciding
// again, not here.
func AfterMerge(p Policy, t Track, head string, res forgejo.MergeResult) (Track, Action) {
	switch res.Outcome {
	case forgejo.MergeDone, forgejo.MergeAlready, forgejo.MergeClosed:
		return t, Action{Kind: Wait, Reason: "re-read the PR to confirm"}
	case forgejo.MergeScheduled:
		t.State, t.ArmedSHA = MergeScheduled, head
		return t, Action{Kind: Wait, Reason: "auto-merge scheduled"}
	case forgejo.MergeHeadMoved:
		return t, Action{Kind: Wait, Reason: "head moved; the new head needs a review"}
	case forgejo.MergeConflict:
		t.State, t.ConflictSHA = Conflict, head
		return t, Action{Kind: NoteConflict, Reason: "merge conflict"}
	}
	status := fmt.Sprintf("%s (HTTP %d: %s)", res.Outcome, res.Status, res.Message)
	t, diag := t.retry(p, MergeFailed, status)
	return t, Action{Kind: Wait, Reason: "merge failed; retrying next cycle", Diagnostic: diag}
}

// SessionLeftNoReview records a reviewer session that ended without a review
// on the head, and backs off before the next one.
func SessionLeftNoReview(p Policy, t Track, now time.Time) Track {
	t.Failures++
	t.NotBefore = now.Add(Backoff(t.Failures, p.RetryBase, p.RetryMax))
	return t
}

// Backoff is base doubled for each failure after the first, capped at max.
func Backoff(failures int, base, max time.Duration) time.Duration {
	if failures <= 0 || base <= 0 {
		return 0
	}
	d := base
	for i := 1; i < failures && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
