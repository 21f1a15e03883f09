package lifecycle

import (
	"fmt"
	"time"

	"pool/forge"
)

// Decide returns the PR's next Track and the one action to take now.
//
// A session that ended (Track.Ended) is judged here, by the first decision
// after it: at the head it ran for, a reviewer's conflict hint is taken if
// the forge confirms it, and a PR that still needs a review backs off
// (SessionLeftNoReview) rather than getting the next session at once.
func Decide(p Policy, t Track, o Observation) (Track, Action) {
	o.Read = allFacts // what it did not read, the decision does not need (Plan)
	return decide(p, t, o)
}

// decide is Decide on an observation that may lack facts (Observation.Read):
// where the decision needs one, it asks for it (an action of Kind read).
func decide(p Policy, t Track, o Observation) (Track, Action) {
	fresh := t.HeadSHA != o.HeadSHA // a head the pool has not decided on
	end := t.Ended
	t.Ended = SessionEnd{}
	if end.Head != o.HeadSHA {
		end = SessionEnd{} // a session for an earlier head says nothing of this one
	}
	if o.Merged {
		// A merge that waited for checks is announced on the issue it closes.
		announce := t.WaitedForChecks || t.State == MergeScheduled
		t.State = Merged
		return t, Action{Kind: Drop, Reason: "merged", Announce: announce}
	}
	if !o.Open {
		t.State = Closed
		return t, Action{Kind: Drop, Reason: "closed without merge"}
	}
	if o.HeadSHA != t.HeadSHA || t.HeadSeen.IsZero() {
		t = t.atHead(o.HeadSHA, o.Now)
	}
	if t.ArmedSHA != "" {
		// The forge's scheduled merge is not pinned to a head: never leave
		// one armed, whoever armed it for which head. It counts as gone
		// once the cancel succeeded (Marks).
		return t, Action{Kind: Disarm, Reason: "an auto-merge is scheduled; the pool merges itself, pinned to the reviewed head",
			Marks: Marks{Disarmed: t.ArmedSHA}}
	}
	if o.Skip {
		t.State = AwaitingHuman
		return t, Action{Kind: Skip, Reason: "labelled for humans"}
	}
	if t.forgeCatchingUp(p, o) {
		t.State = Updating
		return t, Action{Kind: Wait, Reason: "updating: waiting for the forge to take in the new head"}
	}
	if need := o.lacks(approvalFacts(p.Rule, t, o)); need != 0 {
		if fresh && o.ReadAhead && o.SlotFree {
			need |= o.lacks(FactClaims)
		}
		return t, reading(need)
	}
	v := o.approval(p, t)
	switch v.State {
	case forge.ReviewApproved:
		t.ReviewedSHA = o.HeadSHA
		return approved(p, t, o, end.Hint)
	case forge.ReviewRequestChanges:
		t.ReviewedSHA, t.State, t.Blocked = o.HeadSHA, ChangesRequested, ""
		return t, Action{Kind: Wait, Reason: "changes requested; waiting for a new head"}
	case forge.ReviewComment:
		t.ReviewedSHA, t.State, t.Blocked = o.HeadSHA, Commented, ""
		return t, Action{Kind: Wait, Reason: "reviewed without a verdict; waiting for a new head"}
	}
	if len(v.Unvouched) > 0 && t.NotedUnvouched != o.HeadSHA {
		// Said once per head, then the PR gets a session of its own.
		t.State = Unreviewed
		return t, Action{Kind: NoteUnvouched, Marks: Marks{UnvouchedNoted: o.HeadSHA},
			Reason: fmt.Sprintf("the approval by %s was filed by no session of this pool for this head; it does not count", joinAccounts(v.Unvouched))}
	}
	t, act := unreviewed(p, t, o)
	if act.Kind == Review && end.Head != "" {
		if end.Cut {
			return SessionUnfinished(p, t, o.Now), Action{Kind: Wait, Reason: "backing off after a session that did not run to its end"}
		}
		return SessionLeftNoReview(p, t, o.Now, v.Uncounted)
	}
	return t, act
}

// SessionEnded records that the PR's session for head ended, its reviewer
// reporting hint; the next decision judges it.
func SessionEnded(t Track, head, hint string) Track {
	t.Ended = SessionEnd{Head: head, Hint: hint}
	return t
}

// SessionCut records that the PR's session for head ended before it ran
// to its end (lost, stuck, timed out, errored), its reviewer reporting
// hint; the next decision judges it, as SessionEnded's.
func SessionCut(t Track, head, hint string) Track {
	t.Ended = SessionEnd{Head: head, Hint: hint, Cut: true}
	return t
}

// atHead forgets what belonged to the previous head.
// The pool's own update is kept for the head it made, whose approval it
// judges, and forgotten at the next. A read of the head it updated from,
// seen again after the new one (a read from before the update), keeps it
// too: forgetting it would update the PR again and lose the carry-over.
// So does the head the update made, read after another head than the one
// it updated from: a merge train's car formed again replaces the pool's
// earlier car of the same approved head (pool/train.go, unseenCar).
func (t Track) atHead(head string, now time.Time) Track {
	if head != t.HeadSHA {
		t.Attempts, t.Failures, t.Unfinished, t.Diagnostics, t.DiagnosedAt = 0, 0, 0, 0, time.Time{}
		t.NotBefore = time.Time{}
		t.FixerSHA, t.LastStatus, t.Blocked, t.LandedIn, t.ConflictAt, t.ConflictHint, t.ConflictBase = "", "", "", "", "", "", ""
		t.Refusals, t.Refused, t.RefusedUntil, t.RefusedSeen, t.RefusedOn = 0, "", time.Time{}, time.Time{}, ""
		t.WaitedForChecks = false
		if t.TrainLeft != head {
			t.TrainLeft = ""
		}
		if t.TrainSolo != "" && t.TrainSolo != head {
			if t.Alone(head) || t.Update.Produced == t.TrainSolo && t.Update.From == head {
				t.TrainSolo = head // the pool's own update of it, or a read from before that update
			} else {
				t.TrainSolo, t.TrainSoloWhy = "", ""
			}
		}
		if t.HeadSHA != t.Update.From && head != t.Update.From && head != t.Update.Produced {
			t.Update = HeadUpdate{}
		}
	}
	t.HeadSHA, t.HeadSeen, t.HeadBefore = head, now, t.HeadSeen
	return t
}

func unreviewed(p Policy, t Track, o Observation) (Track, Action) {
	t.State = Unreviewed
	if reason := reviewerCannotCount(p, o.Protection); reason != "" {
		return blocked(t, o.HeadSHA, reason)
	}
	t.Blocked = ""
	if o.Draft {
		return t, Action{Kind: Wait, Reason: "work in progress: no review session until it is ready"}
	}
	if need := o.lacks(FactBudget); need != 0 {
		return t, reading(need)
	}
	if reason := Withholds(p, o); reason != "" {
		t, act := blocked(t, o.HeadSHA, reason)
		if act.Kind == NoteBlocked {
			act.Kind = NoteWithheld
		}
		return t, act
	}
	if (t.Failures >= NoReviewNoteAfter || t.NotedNoReview == o.HeadSHA) && !o.Allowed {
		return noReviewHold(t, o.HeadSHA)
	}
	if need := claimsNeeded(o); need != 0 {
		return t, reading(need)
	}
	if o.NoReviewNoted && !o.Allowed { // another pool's sessions, or this pool's before its state was lost
		t.NotedNoReview = o.HeadSHA
		return noReviewHold(t, o.HeadSHA)
	}
	switch {
	case o.Claim == forge.ClaimTaken:
		return t, Action{Kind: Wait, Reason: "claimed by another pool"}
	case o.Now.Before(t.NotBefore):
		return t, Action{Kind: Wait, Reason: "backing off after a session that left no review or did not start"}
	case t.ReviewedSHA != "":
		return t, Action{Kind: Review, Reason: "head changed since the last review"}
	}
	return t, Action{Kind: Review, Reason: "not reviewed at its head"}
}

// Withholds says why a PR gets no review session until a maintainer's
// label allows it: its author is an outsider, or it or its author spent the
// day's budget; "" when nothing does.
func Withholds(p Policy, o Observation) string {
	switch {
	case o.Allowed:
		return ""
	case o.Outsider:
		return "its author is not a collaborator of the repository or a member of its organisation"
	case p.BudgetPR > 0 && o.PRSessions >= p.BudgetPR:
		return fmt.Sprintf("it had its %d review sessions of the last 24 hours", p.BudgetPR)
	case p.BudgetAuthor > 0 && o.AuthorSessions >= p.BudgetAuthor:
		return fmt.Sprintf("its author's PRs had their %d review sessions of the last 24 hours", p.BudgetAuthor)
	}
	return ""
}

// ConflictSettle is how long the forge may read a PR not mergeable after
// a reviewer reported a conflict before the pool takes it for one: the
// forge also reads "not mergeable" while it tests the PR against a base
// that moved.
const ConflictSettle = 5 * time.Minute

func approved(p Policy, t Track, o Observation, hint string) (Track, Action) {
	if need := o.lacks(FactChecks); need != 0 {
		return t, reading(need)
	}
	// A conflict found at this head holds until the base moves and the
	// forge reads the PR mergeable: then the PR is on its way again.
	if t.ConflictSHA == o.HeadSHA || t.ConflictAt == o.HeadSHA {
		if t.ConflictBase == "" {
			t.ConflictBase = o.BaseSHA
		}
		if o.Mergeable && o.BaseSHA != t.ConflictBase {
			return approvedAfterConflict(p, t, o, "")
		}
		if t.ConflictSHA == o.HeadSHA {
			t.State = Conflict
			return t, Action{Kind: Wait, Reason: "conflict; waiting for a rebase"}
		}
		return conflict(t, o.HeadSHA, "a conflict was found at this head and its note is not posted yet")
	}
	return approvedAfterConflict(p, t, o, hint)
}

// approvedAfterConflict decides an approved head that holds no conflict
// (any more): a reviewer's conflict hint is taken only once the forge
// still reads the PR not mergeable ConflictSettle after it.
func approvedAfterConflict(p Policy, t Track, o Observation, hint string) (Track, Action) {
	if hint == string(Conflict) && t.ConflictHint != o.HeadSHA {
		t.ConflictHint, t.HintedAt = o.HeadSHA, o.Now
	}
	if t.ConflictHint == o.HeadSHA && !o.Mergeable {
		if o.Now.Before(t.HintedAt.Add(ConflictSettle)) {
			t.State = Conflict
			return t, Action{Kind: Wait, Reason: "the reviewer reported a conflict; waiting for the forge to say whether it can merge"}
		}
		return conflict(t, o.HeadSHA, "reviewer reported a conflict and the forge still cannot merge")
	}
	if t.LandedIn != "" {
		return blocked(t, o.HeadSHA, landedReason(t.LandedIn))
	}
	if reason := protectionRefuses(p, o); reason != "" {
		return blocked(t, o.HeadSHA, reason)
	}
	t, held := holdRefused(p, t, o)
	if held {
		return holdingRefused(t, o.HeadSHA)
	}
	t.Blocked = ""
	if t.TrainLeft != "" && t.TrainLeft == o.HeadSHA {
		t.State, t.LastStatus = CIFailing, "its car failed in the merge train"
		return t, Action{Kind: Wait, Reason: "its car failed in the merge train (noted); waiting for a new head"}
	}
	switch o.checks() {
	case ChecksFailing:
		t, diag := t.retry(p, CIFailing, string(ChecksFailing), o.Now)
		switch {
		case t.FixerSHA == o.HeadSHA:
		case noFixer(p, o) != "":
			return t, Action{Kind: Wait, Reason: "checks failing; " + noFixer(p, o), Diagnostic: diag}
		case claimsNeeded(o) != 0:
			return t, reading(claimsNeeded(o))
		case o.Claim == forge.ClaimTaken:
			return t, Action{Kind: Wait, Reason: "checks failing; another pool holds the PR", Diagnostic: diag}
		case o.Now.Before(t.NotBefore):
			return t, Action{Kind: Wait, Reason: "checks failing; backing off after a fixer that could not start", Diagnostic: diag}
		default:
			return t, Action{Kind: Fix, Reason: "checks failing", Diagnostic: diag}
		}
		return t, Action{Kind: Wait, Reason: "checks failing; a fixer was started for this head", Diagnostic: diag}
	case ChecksPending:
		t, diag := t.retry(p, CIPending, string(ChecksPending), o.Now)
		t.WaitedForChecks = true
		if t.afterUpdate(o.HeadSHA) {
			t.State = UpdateChecks
			return t, Action{Kind: Wait, Reason: "waiting for checks after update", Diagnostic: diag}
		}
		return t, Action{Kind: Wait, Reason: "checks pending", Diagnostic: diag}
	case ChecksNone:
		if wait := t.HeadSeen.Add(p.ChecksGrace).Sub(o.Now); wait > 0 {
			t.State, t.LastStatus = CIPending, "no checks reported yet"
			return t, Action{Kind: Wait, Reason: fmt.Sprintf("no checks reported yet; merging without them in %s", wait.Round(time.Second))}
		}
		return mergeOrWait(p, t, o, "approved at head; no checks reported within the grace period")
	}
	return mergeOrWait(p, t, o, "approved at head, checks green")
}

// forgeCatchingUp reports whether the forge shows the head the pool's
// update made with the merge base from before it: the forge recomputes
// it after the push, and until then the PR's diff (and whether it is
// behind) are stale. Judging the head then would review a rebase again
// for nothing. At most RetryMax after the update.
func (t Track) forgeCatchingUp(p Policy, o Observation) bool {
	u := t.Update
	return u.Made() && o.HeadSHA != u.From && u.OldMergeBase != "" && o.MergeBase == u.OldMergeBase &&
		u.Base != u.OldMergeBase && o.Now.Before(u.At.Add(p.RetryMax))
}

// afterUpdate reports whether head is the one the pool's update made (or
// one after it whose approval carried over).
func (t Track) afterUpdate(head string) bool { return t.Update.Made() && head != t.Update.From }

// mergeOrWait queues the merge of an approved head the checks allow, unless
// issues it depends on are open: the forge refuses that merge (HTTP 500 with
// no message), so the PR waits for them with one note and no attempt
// counted, and is decided again every cycle (closing an issue does not
// change the PR).
//
// A PR behind its base that the policy updates first is updated instead
// (in the merge queue, one PR of a base at a time), and merged once the
// new head's checks pass.
func mergeOrWait(p Policy, t Track, o Observation, reason string) (Track, Action) {
	if o.Draft {
		return blockedAs(WorkInProgress, t, o.HeadSHA, "it is marked work in progress (a draft, or a WIP title), and "+
			"the forge merges it only once the mark is gone; it merges when the mark is removed")
	}
	if need := o.lacks(FactDependencies); need != 0 {
		return t, reading(need)
	}
	if len(o.OpenDependencies) > 0 {
		return blockedAs(DependenciesOpen, t, o.HeadSHA, "it depends on "+nameSome(o.OpenDependencies)+
			", still open; the forge merges it only once they are closed")
	}
	if o.Behind && p.updates(o.Protection) {
		return update(p, t, o)
	}
	t.State = MergeQueued
	return t, Action{Kind: Merge, Reason: reason}
}

// claimsNeeded asks for the claims on the PR, which a session's start
// depends on, when they are not read and a slot could take the PR now;
// else the PR counts as held by no other pool.
func claimsNeeded(o Observation) Facts {
	if !o.SlotFree {
		return 0
	}
	return o.lacks(FactClaims)
}

// noFixer says why no fixer may be started for the PR, or "".
func noFixer(p Policy, o Observation) string {
	switch {
	case p.NoFixers:
		return "fixers are off (fixers.enabled); waiting for a push"
	case o.Fork && !p.FixForks:
		return "the head is in another repository, and fixers push only to this one's branches (fixers.forks); waiting for a push"
	}
	return ""
}

// update asks for the update of an approved, green head behind its base,
// unless the pool may not push to its branch (a fork whose author does not
// let maintainers edit) or has updated this head already and waits for
// the forge to show the new one (for at most RetryMax).
func update(p Policy, t Track, o Observation) (Track, Action) {
	if !o.MayUpdate {
		return blocked(t, o.HeadSHA, "the branch is behind its base and must be updated before it merges, but the pool may not "+
			"push to it: the PR comes from a fork whose author does not let maintainers edit it. Update the branch, or allow edits by maintainers")
	}
	if t.Update.From == o.HeadSHA && o.Now.Before(t.Update.At.Add(p.RetryMax)) {
		t.State = Updating
		return t, Action{Kind: Wait, Reason: "updating: waiting for the forge to show the new head"}
	}
	t.State = OutOfDate
	return t, Action{Kind: Update, Reason: "approved and green, behind its base: update it in the merge queue, then merge after its checks"}
}

// Why a PR rides no merge train at a head (Track.TrainSoloWhy).
const (
	SoloConflict = "conflict"    // it does not merge cleanly onto the cars ahead
	SoloLease    = "lease"       // its branch was not at the approved head when its car was to land
	SoloFlake    = "maybe-flake" // its car failed where a car behind it, holding it, passed
	SoloUntested = "untested"    // the forge never showed its car, pushed twice, as the PR's tested head
)

// RideAlone records that the PR at head rides no merge train, for why: it
// merges one by one at head, and at the heads the pool's own updates make
// from it.
func RideAlone(t Track, head, why string) Track {
	t.TrainSolo, t.TrainSoloWhy = head, why
	return t
}

// Alone reports whether the PR at head rides no merge train (RideAlone):
// head is the one recorded, or the pool's own update made it from that
// one (a read that came before the decision that takes it in).
func (t Track) Alone(head string) bool {
	s := t.TrainSolo
	return s != "" && (s == head || t.Update.From == s && t.Update.Produced == head)
}

// Updated records the update u the pool made of the head branch at u.From
// (HeadUpdate says what each field holds), after the forge answered that
// it updated.
func Updated(t Track, u HeadUpdate) Track {
	if t.HeadSHA != u.From {
		return t
	}
	t.Update = u
	t.State = Updating
	return t
}

// UpdateConflicted records that the forge could not update the head: the
// base does not merge into it cleanly. That is a conflict, noted once.
func UpdateConflicted(t Track, head string) (Track, Action) {
	return conflict(t, head, "the update found a conflict with the base")
}

// conflict records a conflict found at head and asks for its note, once:
// until the note is posted (Marks), every decision at head asks again.
func conflict(t Track, head, reason string) (Track, Action) {
	t.State, t.ConflictAt, t.ConflictBase = Conflict, head, "" // the next decision reads the base it holds against
	return t, Action{Kind: NoteConflict, Reason: reason, Marks: Marks{ConflictNoted: head}}
}

// UpdateRefused records that the forge refused the pool's update of the
// head branch (403: it may not push there; 5xx: it could not, as for an
// AGit PR; or another answer that is no update): a refusal like a merge's,
// with one note and a back-off, not an update call every cycle.
func UpdateRefused(p Policy, t Track, head string, status int, now time.Time) (Track, Action) {
	rule := ruleUpdateRefused
	if status >= 500 {
		rule = ruleUpdateFailed
	}
	return refused(p, t, head, forge.MergeResult{Outcome: "update_refused", Status: status, Rule: rule}, now)
}

// blocked waits for the PR or the rule to change, and asks for the note
// once per head and reason. No retry counting: a merge that cannot pass is
// not retried.
func blocked(t Track, head, reason string) (Track, Action) {
	t.State, t.Blocked = AwaitingHuman, reason
	key := head + " " + reason
	if t.NotedBlock == key {
		return t, Action{Kind: Wait, Reason: "blocked: " + reason}
	}
	return t, Action{Kind: NoteBlocked, Reason: reason, Marks: Marks{BlockNoted: key}}
}

// blockedAs is blocked in a state of its own: a wait that ends without a
// person (a back-off, an issue closed), which the discovery loop looks at
// again on its own.
func blockedAs(s State, t Track, head, reason string) (Track, Action) {
	t, act := blocked(t, head, reason)
	t.State = s
	return t, act
}

// retry records that an approved head still waits to merge, in s, and
// says whether a diagnostic comment is due: the first DiagnosticEvery poll
// intervals (RetryBase) after the wait began, each next one after twice
// the pause before, up to longHold. Attempts are counted by the answers
// to merge calls alone (AfterMerge): a decision to wait makes no call.
func (t Track) retry(p Policy, s State, status string, now time.Time) (Track, bool) {
	t.State, t.LastStatus = s, status
	if p.DiagnosticEvery <= 0 {
		return t, false
	}
	if t.DiagnosedAt.IsZero() {
		t.DiagnosedAt = now // the wait begins
		return t, false
	}
	if now.Before(t.DiagnosedAt.Add(DiagnosticPause(p, t.Diagnostics+1))) {
		return t, false
	}
	t.Diagnostics++
	t.DiagnosedAt = now
	return t, true
}

// DiagnosticPause is the wait before the n-th diagnostic of a head (n from 1).
func DiagnosticPause(p Policy, n int) time.Duration {
	return forge.Backoff{Base: time.Duration(p.DiagnosticEvery) * p.RetryBase, Max: max(p.RetryMax, longHold)}.Delay(n, 0)
}

// AfterMerge folds the forge's answer to a merge call into the Track. A merge
// the forge reports done is confirmed by re-reading the PR and deciding
// again, not here. "Try again later" is the forge still checking the PR
// against its base: a wait, not a failed attempt.
func AfterMerge(p Policy, t Track, head string, res forge.MergeResult, now time.Time) (Track, Action) {
	switch res.Outcome {
	case forge.MergeDone, forge.MergeAlready, forge.MergeClosed:
		return t, Action{Kind: Wait, Reason: "re-read the PR to confirm"}
	case forge.MergeNotReady:
		t.State, t.LastStatus = MergeQueued, fmt.Sprintf("%s (HTTP %d: %s)", res.Outcome, res.Status, res.Message)
		return t, Action{Kind: Wait, Reason: "the forge is still checking the PR; waiting for it"}
	case forge.MergeScheduled:
		// Only an older pool asks the forge to schedule; cancel it.
		t.State, t.ArmedSHA = MergeScheduled, head
		return t, Action{Kind: Wait, Reason: "auto-merge scheduled"}
	case forge.MergeHeadMoved:
		return t, Action{Kind: Wait, Reason: "head moved; the new head needs a review"}
	case forge.MergeConflict:
		return conflict(t, head, "merge conflict")
	case forge.MergeQuota, forge.MergeBlocked:
		return refused(p, t, head, res, now)
	case forge.MergeFailed:
		if res.Status >= 500 { // not "try again later": a merge every cycle would get the same answer
			res.Rule = ruleServerError
			return refused(p, t, head, res, now)
		}
	}
	status := fmt.Sprintf("%s (HTTP %d: %s)", res.Outcome, res.Status, res.Message)
	t.Attempts++
	t, diag := t.retry(p, MergeFailed, status, now)
	return t, Action{Kind: Wait, Reason: "merge failed; retrying next cycle", Diagnostic: diag}
}

// HeadOnBase records that the approved head is already in the base
// branch's history, in commit, while the forge lists the PR open and
// answers every merge "try again later" (a merge cut off mid-call pushed it
// there), and that the forge refused to mark it merged with res. Nothing
// the pool can do changes that: the PR waits for a person, with one note.
func HeadOnBase(t Track, commit string, res forge.MergeResult) (Track, Action) {
	t.LandedIn = commit
	t.LastStatus = fmt.Sprintf("mark merged: %s (HTTP %d: %s)", res.Outcome, res.Status, res.Message)
	return blocked(t, t.HeadSHA, landedReason(commit))
}

func landedReason(commit string) string {
	return fmt.Sprintf("the head is already on the base branch (in commit %s), but the forge lists the PR as open and "+
		"answers every merge \"try again later\"; the forge refused to mark it merged. Allow manual merges in the "+
		"repository's settings, or mark the PR merged or close it by hand", commit)
}

// NoReviewNoteAfter is the number of sessions at one head that left no
// counted review after which the head gets no more sessions: the pool says
// so on the PR, once, and waits for a new head or the maintainer's label
// (reviews.allow_label), which gives it sessions again, on the back-off.
const NoReviewNoteAfter = 3

// noReviewHold keeps a head whose NoReviewNoteAfter sessions left no
// counted review from another session: model time is spent on a head only
// while its reviews can count. Its note is asked for until posted.
func noReviewHold(t Track, head string) (Track, Action) {
	if t.NotedNoReview != head {
		return t, Action{Kind: NoteNoReview, Reason: fmt.Sprintf("%d reviewer sessions left no review that counts on this head", t.Failures),
			Marks: Marks{NoReviewNoted: head}}
	}
	return t, Action{Kind: Wait, Reason: "reviewer sessions left no review that counts on this head (noted on the PR); " +
		"waiting for a new head or the maintainer's label"}
}

// SessionLeftNoReview records a reviewer session that ended without a
// counted review on the head, and backs off before the next one. What is
// on the forge besides (an outsider's approval, which a session may have
// taken for a review) does not stop the PR's review; the
// NoReviewNoteAfter-th such session at one head does (noReviewHold). From
// then on, until the note is posted (its Marks recorded), it asks for one
// note, naming the approvals on the head that do not count (uncounted),
// which may be the pool's own reviewer's when its account lacks write
// access or a place on the branch's approvals whitelist.
func SessionLeftNoReview(p Policy, t Track, now time.Time, uncounted []string) (Track, Action) {
	t.Failures++
	// No jitter: the decision stays a pure function of its inputs.
	t.NotBefore = now.Add(forge.Backoff{Base: p.RetryBase, Max: p.RetryMax}.Delay(t.Failures, 0))
	if t.Failures < NoReviewNoteAfter || t.NotedNoReview == t.HeadSHA {
		return t, Action{Kind: Wait, Reason: "backing off after a session that left no review"}
	}
	reason := fmt.Sprintf("%d reviewer sessions left no review that counts on this head", t.Failures)
	if len(uncounted) > 0 {
		reason += fmt.Sprintf("; the approval by %s does not count: the forge does not mark it official "+
			"(the account needs write access, or a place on the branch's approvals whitelist)", joinAccounts(uncounted))
	}
	return t, Action{Kind: NoteNoReview, Reason: reason, Marks: Marks{NoReviewNoted: t.HeadSHA}}
}

// SessionUnfinished records a session of the head that failed to start or
// did not run to its end, and backs off before the next try, doubling up
// to RetryMax. It counts toward no hold: a session that never finished
// says nothing of whether the head's reviews can count.
func SessionUnfinished(p Policy, t Track, now time.Time) Track {
	t.Unfinished++
	t.NotBefore = now.Add(forge.Backoff{Base: p.RetryBase, Max: p.RetryMax}.Delay(t.Unfinished, 0))
	return t
}

// FixerStarted records that a fixer session was created and prompted for
// the head; until then a failing head asks for one every cycle.
func FixerStarted(t Track, head string) Track {
	if t.HeadSHA == head {
		t.FixerSHA = head
	}
	return t
}

// LostClaim holds off a PR whose claim another pool won, so the loser does
// not claim and retreat in a loop.
func LostClaim(t Track, until time.Time) Track {
	t.NotBefore = until
	return t
}

// Recovered is the memory of an approved PR rebuilt from the forge: the
// head and the retry count the pool's own diagnostic comments show.
func Recovered(head string, attempts int) Track {
	return Track{HeadSHA: head, ReviewedSHA: head, Attempts: attempts}
}
