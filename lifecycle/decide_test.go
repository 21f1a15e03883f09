package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pool/forge"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

var policy = Policy{DiagnosticEvery: 10, RetryBase: time.Minute, RetryMax: time.Hour}

func open(head string) Observation {
	return Observation{Open: true, HeadSHA: head, Author: "alice", Mergeable: true, Now: now,
		Protection: forge.Protection{UserCanMerge: true}}
}

// review is a review on head h1 by bob, official unless said otherwise.
func review(state string) forge.Review {
	return forge.Review{ID: 1, Author: "bob", State: state, CommitID: "h1", Official: true}
}

func status(context, state string) Check {
	return Check{ID: 1, Context: context, State: state}
}

// DecisionCase is one fixture of the decision table: a policy, the pool's
// memory of the PR and what the forge shows, and what Decide does.
type DecisionCase struct {
	Name      string
	Policy    Policy
	Track     Track
	Obs       func(o Observation) Observation
	WantKind  Kind
	WantState State
	WantDiag  bool
	Announce  bool
}

// Inputs are the fixture's policy, memory and observation: an open PR
// with head h1 by alice, changed by Obs.
func (c DecisionCase) Inputs() (Policy, Track, Observation) {
	p := policy
	if c.Policy.DiagnosticEvery != 0 {
		p = c.Policy
	}
	o := open("h1")
	if c.Obs != nil {
		o = c.Obs(o)
	}
	return p, c.Track, o
}

// DecisionTable is lifecycle's decision table. TestDecide runs it through
// Decide; TestReportAgreesWithTheSupervisor runs it through the supervisor
// and `pool report` both.
var DecisionTable = []DecisionCase{
	{Name: "new PR gets a review", WantKind: Review, WantState: Unreviewed},
	{Name: "claimed elsewhere waits", Obs: func(o Observation) Observation { o.Claim = forge.ClaimTaken; return o },
		WantKind: Wait, WantState: Unreviewed},
	{Name: "our own claim is resumed", Obs: func(o Observation) Observation { o.Claim = forge.ClaimOurs; return o },
		WantKind: Review, WantState: Unreviewed},
	{Name: "skip label is left to humans", Obs: func(o Observation) Observation { o.Skip = true; return o },
		WantKind: Skip, WantState: AwaitingHuman},
	{Name: "merged drops", Obs: func(o Observation) Observation { o.Merged, o.Open = true, false; return o },
		WantKind: Drop, WantState: Merged},
	{Name: "a merge that waited for checks is announced", Track: Track{State: MergeQueued, HeadSHA: "h1", WaitedForChecks: true},
		Obs:      func(o Observation) Observation { o.Merged, o.Open = true, false; return o },
		WantKind: Drop, WantState: Merged, Announce: true},
	{Name: "closed unmerged drops", Obs: func(o Observation) Observation { o.Open = false; return o },
		WantKind: Drop, WantState: Closed},
	{Name: "no checks within the grace period waits", Policy: withGrace(2 * time.Minute),
		Obs: approvedWith(), WantKind: Wait, WantState: CIPending},
	{Name: "no checks after the grace period merges", Policy: withGrace(2 * time.Minute),
		Track: Track{HeadSHA: "h1", HeadSeen: now.Add(-3 * time.Minute)}, Obs: approvedWith(), WantKind: Merge},
	{Name: "approved and green is queued to merge", Obs: approvedWith(status("ci", "success")), WantKind: Merge, WantState: MergeQueued},
	{Name: "a merge straight away is not announced", Track: Track{State: MergeQueued, HeadSHA: "h1"},
		Obs:      func(o Observation) Observation { o.Merged, o.Open = true, false; return o },
		WantKind: Drop, WantState: Merged},
	{Name: "a review requested from a team is no verdict", Obs: func(o Observation) Observation {
		o = approvedWith(status("ci", "success"))(o)
		o.Reviews = append(o.Reviews, forge.Review{ID: 2, State: forge.ReviewRequested, Team: "core"})
		return o
	}, WantKind: Merge, WantState: MergeQueued},
	{Name: "approved and green with an open dependency waits with a note", Obs: func(o Observation) Observation {
		o = approvedWith(status("ci", "success"))(o)
		o.OpenDependencies = []string{"#7"}
		return o
	}, WantKind: NoteBlocked, WantState: DependenciesOpen},
	{Name: "approved and pending waits", Obs: approvedWith(status("ci", "pending")), WantKind: Wait, WantState: CIPending},
	{Name: "an auto-merge left armed is cancelled", Track: Track{HeadSHA: "h1", ArmedSHA: "h1"},
		Obs: approvedWith(status("ci", "pending")), WantKind: Disarm},
	{Name: "failing checks ask for a fixer", Obs: approvedWith(status("ci", "failure")), WantKind: Fix, WantState: CIFailing},
	{Name: "no fixer when fixers are off", Policy: withFixers(true, false),
		Obs: approvedWith(status("ci", "failure")), WantKind: Wait, WantState: CIFailing},
	{Name: "no fixer for a PR from a fork", Obs: fromFork(approvedWith(status("ci", "failure"))), WantKind: Wait, WantState: CIFailing},
	{Name: "a fixer for a PR from a fork when fixers.forks", Policy: withFixers(false, true),
		Obs: fromFork(approvedWith(status("ci", "failure"))), WantKind: Fix, WantState: CIFailing},
	{Name: "a fixer that could not start backs off", Track: Track{HeadSHA: "h1", HeadSeen: now, NotBefore: now.Add(time.Minute)},
		Obs: approvedWith(status("ci", "failure")), WantKind: Wait, WantState: CIFailing},
	{Name: "another pool's fixer is not doubled", Obs: func(o Observation) Observation {
		o = approvedWith(status("ci", "failure"))(o)
		o.Claim = forge.ClaimTaken
		return o
	}, WantKind: Wait, WantState: CIFailing},
	{Name: "sessions that left no review are retried once the back-off ends",
		Track:    Track{HeadSHA: "h1", HeadSeen: now, Failures: NoReviewNoteAfter - 1, NotBefore: now.Add(-time.Second)},
		WantKind: Review, WantState: Unreviewed},
	{Name: "after three sessions that left no review, no more at that head",
		Track:    Track{HeadSHA: "h1", HeadSeen: now, Failures: 5, NotBefore: now.Add(-time.Second), NotedNoReview: "h1"},
		WantKind: Wait, WantState: Unreviewed},
	{Name: "no second fixer for a head", Track: Track{HeadSHA: "h1", FixerSHA: "h1"},
		Obs: approvedWith(status("ci", "failure")), WantKind: Wait, WantState: CIFailing},
	{Name: "a superseded cancellation is not a failure",
		Obs:      approvedWith(Check{Context: "ci / a (push)", State: "failure", Superseded: true}, status("ci / b (push)", "success")),
		WantKind: Merge},
	{Name: "a wait of ten poll intervals is diagnosed", Track: Track{HeadSHA: "h1", HeadSeen: now, DiagnosedAt: now.Add(-10 * time.Minute)},
		Obs: approvedWith(status("ci", "pending")), WantKind: Wait, WantState: CIPending, WantDiag: true},
	{Name: "one of nine is not", Track: Track{HeadSHA: "h1", HeadSeen: now, DiagnosedAt: now.Add(-9 * time.Minute)},
		Obs: approvedWith(status("ci", "pending")), WantKind: Wait, WantState: CIPending},
	{Name: "the second waits twice as long", Track: Track{HeadSHA: "h1", HeadSeen: now, Diagnostics: 1, DiagnosedAt: now.Add(-19 * time.Minute)},
		Obs: approvedWith(status("ci", "pending")), WantKind: Wait, WantState: CIPending},
	{Name: "a reviewer's conflict hint waits for the forge, which may be testing the PR",
		Track: Track{Ended: SessionEnd{Head: "h1", Hint: "conflict"}},
		Obs: func(o Observation) Observation {
			o = approvedWith(status("ci", "success"))(o)
			o.Mergeable = false
			return o
		}, WantKind: Wait, WantState: Conflict},
	{Name: "a reviewer's conflict the forge still cannot merge after ConflictSettle is noted",
		Track: Track{HeadSHA: "h1", HeadSeen: now, ConflictHint: "h1", HintedAt: now.Add(-ConflictSettle)},
		Obs: func(o Observation) Observation {
			o = approvedWith(status("ci", "success"))(o)
			o.Mergeable = false
			return o
		}, WantKind: NoteConflict, WantState: Conflict},
	{Name: "a reviewer's conflict the forge can merge is merged",
		Track: Track{HeadSHA: "h1", HeadSeen: now, ConflictHint: "h1", HintedAt: now.Add(-time.Minute)},
		Obs:   approvedWith(status("ci", "success")), WantKind: Merge, WantState: MergeQueued},
	{Name: "conflict hint the forge contradicts is ignored", Track: Track{Ended: SessionEnd{Head: "h1", Hint: "conflict"}},
		Obs: approvedWith(status("ci", "success")), WantKind: Merge},
	{Name: "a conflict hint for an earlier head is ignored", Track: Track{Ended: SessionEnd{Head: "h0", Hint: "conflict"}},
		Obs: func(o Observation) Observation {
			o = approvedWith(status("ci", "success"))(o)
			o.Mergeable = false
			return o
		}, WantKind: Merge},
	{Name: "a session that left no counted review backs off", Track: Track{HeadSHA: "h1", HeadSeen: now, Ended: SessionEnd{Head: "h1"}},
		WantKind: Wait, WantState: Unreviewed},
	{Name: "a session for an earlier head is no failure of this one", Track: Track{HeadSHA: "h0", HeadSeen: now, Ended: SessionEnd{Head: "h0"}},
		WantKind: Review, WantState: Unreviewed},
	{Name: "the third session with no counted review asks for the note",
		Track: Track{HeadSHA: "h1", HeadSeen: now, Failures: NoReviewNoteAfter - 1, Ended: SessionEnd{Head: "h1"}},
		Obs:   withReviews(unofficial(review(forge.ReviewApproved))), WantKind: NoteNoReview, WantState: Unreviewed},
	{Name: "a session that left an approval leads to the merge", Track: Track{HeadSHA: "h1", HeadSeen: now, Ended: SessionEnd{Head: "h1"}},
		Obs: approvedWith(status("ci", "success")), WantKind: Merge, WantState: MergeQueued},
	{Name: "conflict noted waits while the forge cannot merge", Track: Track{HeadSHA: "h1", ConflictSHA: "h1"},
		Obs: func(o Observation) Observation {
			o = approvedWith(status("ci", "success"))(o)
			o.Mergeable = false
			return o
		}, WantKind: Wait, WantState: Conflict},
	{Name: "a noted conflict the forge reads mergeable on the same base still waits",
		Track: Track{HeadSHA: "h1", ConflictSHA: "h1", ConflictBase: "b0", State: Conflict},
		Obs: func(o Observation) Observation {
			o = approvedWith(status("ci", "success"))(o)
			o.BaseSHA = "b0"
			return o
		}, WantKind: Wait, WantState: Conflict},
	{Name: "a noted conflict the forge can merge after the base moved is merged",
		Track: Track{HeadSHA: "h1", ConflictSHA: "h1", ConflictBase: "b0", State: Conflict},
		Obs: func(o Observation) Observation {
			o = approvedWith(status("ci", "success"))(o)
			o.BaseSHA = "b1"
			return o
		}, WantKind: Merge, WantState: MergeQueued},
	{Name: "an approved, green work in progress is noted once, not queued",
		Obs: func(o Observation) Observation {
			o = approvedWith(status("ci", "success"))(o)
			o.Draft, o.Mergeable = true, false
			return o
		}, WantKind: NoteBlocked, WantState: WorkInProgress},
	{Name: "new head after conflict is reviewed", Track: Track{HeadSHA: "h0", ConflictSHA: "h0", ReviewedSHA: "h0", State: Conflict},
		WantKind: Review, WantState: Unreviewed},
	{Name: "changes requested waits", Obs: withReviews(review(forge.ReviewRequestChanges)), WantKind: Wait, WantState: ChangesRequested},
	{Name: "a listed reviewer's comment-only review waits", Policy: Policy{DiagnosticEvery: 10, Rule: ReviewRule{Reviewers: []string{"bob"}}},
		Obs: withReviews(review(forge.ReviewComment)), WantKind: Wait, WantState: Commented},
	{Name: "an unlisted comment-only review is no review", Obs: withReviews(review(forge.ReviewComment)),
		WantKind: Review, WantState: Unreviewed},
	{Name: "an outsider's approval is no review", Obs: withReviews(unofficial(review(forge.ReviewApproved))),
		WantKind: Review, WantState: Unreviewed},
	{Name: "an outsider's request for changes blocks nothing", Obs: withReviews(unofficial(review(forge.ReviewRequestChanges))),
		WantKind: Review, WantState: Unreviewed},
	{Name: "the author's own approval is no review", Obs: withReviews(by("alice", review(forge.ReviewApproved))),
		WantKind: Review, WantState: Unreviewed},
	{Name: "re-review after push", Track: Track{HeadSHA: "h0", ReviewedSHA: "h0", State: ChangesRequested},
		WantKind: Review, WantState: Unreviewed},
	{Name: "backing off after a failed session", Track: Track{HeadSHA: "h1", HeadSeen: now, NotBefore: now.Add(time.Minute)},
		WantKind: Wait, WantState: Unreviewed},
	{Name: "two approvals required and one given is noted", Obs: protected(forge.Protection{RequiredApprovals: 2}),
		WantKind: NoteBlocked, WantState: AwaitingHuman},
	{Name: "the block is noted once per head", Track: Track{HeadSHA: "h1", NotedBlock: "h1 needs 2 approvals; has 1"},
		Obs: protected(forge.Protection{RequiredApprovals: 2}), WantKind: Wait, WantState: AwaitingHuman},
	{Name: "one approval required and given merges", Obs: protected(forge.Protection{RequiredApprovals: 1}), WantKind: Merge},
	{Name: "a required context not reported waits", Obs: protected(forge.Protection{StatusCheck: true, StatusContexts: []string{"ci/test"}}),
		WantKind: Wait, WantState: CIPending},
	{Name: "a status check without contexts waits for one status", Obs: func(o Observation) Observation {
		o = protected(forge.Protection{StatusCheck: true})(o)
		o.Checks = nil
		return o
	}, WantKind: Wait, WantState: CIPending},
	{Name: "the pool's account may not merge", Obs: func(o Observation) Observation {
		o = approvedWith(status("ci", "success"))(o)
		o.Protection.UserCanMerge = false
		return o
	}, WantKind: NoteBlocked, WantState: AwaitingHuman},
	{Name: "an outdated branch is blocked when the protection says so", Obs: func(o Observation) Observation {
		o = protected(forge.Protection{Full: true, BlockOnOutdated: true})(o)
		o.Behind = true
		return o
	}, WantKind: NoteBlocked},
	{Name: "a reviewer off the approvals whitelist is noted before any session",
		Policy: Policy{DiagnosticEvery: 10, Rule: ReviewRule{Reviewers: []string{"bob"}}},
		Obs: func(o Observation) Observation {
			o.Protection = forge.Protection{UserCanMerge: true, Protected: true, Full: true, ApprovalsWhitelist: true, ApprovalsWhitelistUsers: []string{"carol"}}
			return o
		}, WantKind: NoteBlocked, WantState: AwaitingHuman},
}

func TestDecide(t *testing.T) {
	for _, tt := range DecisionTable {
		t.Run(tt.Name, func(t *testing.T) {
			p, track, o := tt.Inputs()
			got, act := Decide(p, track, o)
			if act.Kind != tt.WantKind {
				t.Fatalf("kind = %s (%s), want %s", act.Kind, act.Reason, tt.WantKind)
			}
			if tt.WantState != "" && got.State != tt.WantState {
				t.Errorf("state = %s, want %s", got.State, tt.WantState)
			}
			if act.Diagnostic != tt.WantDiag {
				t.Errorf("diagnostic = %v, want %v", act.Diagnostic, tt.WantDiag)
			}
			if act.Announce != tt.Announce {
				t.Errorf("announce = %v, want %v", act.Announce, tt.Announce)
			}
		})
	}
}

func withFixers(off, forks bool) Policy {
	p := policy
	p.NoFixers, p.FixForks = off, forks
	return p
}

func withGrace(d time.Duration) Policy {
	p := policy
	p.ChecksGrace = d
	return p
}

// approvedWith approves h1 (one official approval by bob) with these checks.
func approvedWith(checks ...Check) func(Observation) Observation {
	return func(o Observation) Observation {
		o.Reviews = []forge.Review{review(forge.ReviewApproved)}
		o.Checks = checks
		return o
	}
}

func fromFork(f func(Observation) Observation) func(Observation) Observation {
	return func(o Observation) Observation { o = f(o); o.Fork = true; return o }
}

// protected approves h1 with a green check under the protection p.
func protected(p forge.Protection) func(Observation) Observation {
	return func(o Observation) Observation {
		o = approvedWith(status("other", "success"))(o)
		p.Protected, p.UserCanMerge = true, true
		o.Protection = p
		return o
	}
}

func withReviews(rs ...forge.Review) func(Observation) Observation {
	return func(o Observation) Observation { o.Reviews = rs; return o }
}

func unofficial(r forge.Review) forge.Review { r.Official = false; return r }

func by(author string, r forge.Review) forge.Review { r.Author = author; return r }

func TestDecideNewHeadResetsAttempts(t *testing.T) {
	tr := Track{HeadSHA: "h0", Attempts: 25, FixerSHA: "h0", Failures: 3, NotBefore: now.Add(time.Hour)}
	got, _ := Decide(policy, tr, open("h1"))
	if got.Attempts != 0 || got.FixerSHA != "" || got.Failures != 0 || !got.NotBefore.IsZero() || got.HeadSHA != "h1" {
		t.Errorf("per-head memory kept: %+v", got)
	}
}

func TestAfterMerge(t *testing.T) {
	tests := []struct {
		outcome   forge.MergeOutcome
		wantKind  Kind
		wantState State
	}{
		{forge.MergeDone, Wait, ""},
		{forge.MergeScheduled, Wait, MergeScheduled}, // an older pool's schedule: cancelled next
		{forge.MergeNotReady, Wait, MergeQueued},     // the forge is checking: a wait, not an attempt
		{forge.MergeBlocked, NoteBlocked, MergeRefused},
		{forge.MergeConflict, NoteConflict, Conflict},
		{forge.MergeHeadMoved, Wait, ""},
		{forge.MergeFailed, Wait, MergeFailed},
	}
	for _, tt := range tests {
		t.Run(string(tt.outcome), func(t *testing.T) {
			got, act := AfterMerge(policy, Track{HeadSHA: "h1"}, "h1", forge.MergeResult{Outcome: tt.outcome, Status: 405}, now)
			if act.Kind != tt.wantKind || got.State != tt.wantState {
				t.Errorf("got %s/%s, want %s/%s", act.Kind, got.State, tt.wantKind, tt.wantState)
			}
			if wantAttempt := got.State == MergeFailed; (got.Attempts == 1) != wantAttempt {
				t.Errorf("attempts = %d; only a failed merge is an attempt", got.Attempts)
			}
		})
	}
}

func TestSessionLeftNoReviewBacksOff(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	p := Policy{RetryBase: time.Minute, RetryMax: time.Hour}
	tests := []struct {
		failures int // before the session
		want     time.Duration
	}{{0, time.Minute}, {1, 2 * time.Minute}, {2, 4 * time.Minute}, {9, time.Hour}}
	for _, tt := range tests {
		got, _ := SessionLeftNoReview(p, Track{Failures: tt.failures}, now, nil)
		if got.Failures != tt.failures+1 || got.NotBefore.Sub(now) != tt.want {
			t.Errorf("after %d failures: failures %d, wait %s; want %d, %s", tt.failures, got.Failures, got.NotBefore.Sub(now), tt.failures+1, tt.want)
		}
	}
}

// TestSessionLeftNoReviewNotesOnceThenHolds: the third session at a head
// that left no counted review asks for one note, naming the approvals that
// do not count; from then on the head gets no session, until a new head or
// the maintainer's label.
func TestSessionLeftNoReviewNotesOnceThenHolds(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	p := Policy{RetryBase: time.Minute, RetryMax: time.Hour}
	tr := Track{HeadSHA: "h1", State: Unreviewed}
	var notes []string
	for i := 0; i < NoReviewNoteAfter; i++ {
		if i > 0 {
			if _, act := Decide(p, tr, Observation{Open: true, HeadSHA: "h1", Now: tr.NotBefore}); act.Kind != Review {
				t.Fatalf("before session %d: %s (%s), want a review", i+1, act.Kind, act.Reason)
			}
		}
		var act Action
		tr, act = SessionLeftNoReview(p, tr, now, []string{"mallory"})
		if act.Kind == NoteNoReview {
			notes = append(notes, act.Reason)
			tr = tr.Mark(act.Marks) // the note was posted
		} else if act.Kind != Wait {
			t.Errorf("session %d: action %s", i+1, act.Kind)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "3 reviewer sessions") || !strings.Contains(notes[0], "mallory") {
		t.Errorf("notes = %q, want one after the third session naming mallory", notes)
	}
	later := tr.NotBefore.Add(24 * time.Hour)
	if _, act := Decide(p, tr, Observation{Open: true, HeadSHA: "h1", Now: later}); act.Kind != Wait {
		t.Errorf("a day after the third session: %s (%s), want a wait", act.Kind, act.Reason)
	}
	if _, act := Decide(p, tr, Observation{Open: true, HeadSHA: "h1", Now: later, Allowed: true}); act.Kind != Review {
		t.Errorf("with the maintainer's label: %s (%s), want a review", act.Kind, act.Reason)
	}
	if _, act := Decide(p, tr, Observation{Open: true, HeadSHA: "h2", Now: later}); act.Kind != Review {
		t.Errorf("at a new head: %s (%s), want a review", act.Kind, act.Reason)
	}
	unnoted := tr
	unnoted.NotedNoReview = ""
	if _, act := Decide(p, unnoted, Observation{Open: true, HeadSHA: "h1", Now: later}); act.Kind != NoteNoReview {
		t.Errorf("the note not posted yet: %s, want it asked for again", act.Kind)
	}
}

func TestFixerStarted(t *testing.T) {
	tr := FixerStarted(Track{HeadSHA: "h1"}, "h1")
	if tr.FixerSHA != "h1" {
		t.Errorf("FixerSHA = %q", tr.FixerSHA)
	}
	if tr := FixerStarted(Track{HeadSHA: "h2"}, "h1"); tr.FixerSHA != "" {
		t.Errorf("a fixer for an old head marked the new one: %+v", tr)
	}
}

// TestHeadOnBaseWaitsForAPerson: a head the forge will neither merge nor
// mark merged is noted once and then waits, until a new head or the forge
// showing it merged.
func TestHeadOnBaseWaitsForAPerson(t *testing.T) {
	approvedAtH1 := open("h1")
	approvedAtH1.Reviews = []forge.Review{review(forge.ReviewApproved)}
	approvedAtH1.Checks = []Check{status("ci", "success")}
	tr, act := Decide(policy, Track{}, approvedAtH1)
	if act.Kind != Merge {
		t.Fatalf("approved and green: %s, want merge", act.Kind)
	}
	tr, act = HeadOnBase(tr, "c1", forge.MergeResult{Outcome: forge.MergeBlocked, Status: 405, Message: "not allowed"})
	if act.Kind != NoteBlocked || tr.State != AwaitingHuman || tr.LandedIn != "c1" {
		t.Fatalf("HeadOnBase = %s, %+v; want one note and awaiting_human", act.Kind, tr)
	}
	tr = tr.Mark(act.Marks) // the note was posted
	tr, act = Decide(policy, tr, approvedAtH1)
	if act.Kind != Wait || tr.State != AwaitingHuman {
		t.Errorf("decided again: %s/%s; want a wait for a person, with no second note and no merge", act.Kind, tr.State)
	}
	merged := approvedAtH1
	merged.Merged = true
	if _, act := Decide(policy, tr, merged); act.Kind != Drop {
		t.Errorf("merged by hand: %s, want drop", act.Kind)
	}
	newHead := open("h2")
	if got, act := Decide(policy, tr, newHead); act.Kind != Review || got.LandedIn != "" {
		t.Errorf("a new head: %s, landed in %q; want a review and the memory gone", act.Kind, got.LandedIn)
	}
}

// TestOpenDependenciesWaitWithOneNote: an approved, green PR whose issue
// dependencies are open is not merged (the forge would answer 500): it
// waits with one note, counts no attempt, and merges once they are closed.
func TestOpenDependenciesWaitWithOneNote(t *testing.T) {
	blockedObs := approvedWith(status("ci", "success"))(open("h1"))
	blockedObs.OpenDependencies = []string{"#7"}
	tr, act := Decide(policy, Track{}, blockedObs)
	if act.Kind != NoteBlocked || tr.State != DependenciesOpen || !strings.Contains(act.Reason, "#7") {
		t.Fatalf("open dependency: %s/%s %q; want one note naming #7, state %s", act.Kind, tr.State, act.Reason, DependenciesOpen)
	}
	tr = tr.Mark(act.Marks) // the note was posted
	for i := 0; i < 3; i++ {
		tr, act = Decide(policy, tr, blockedObs)
		if act.Kind != Wait || tr.State != DependenciesOpen || tr.Attempts != 0 {
			t.Fatalf("decided again: %s/%s, %d attempts; want a wait, no second note, no attempt", act.Kind, tr.State, tr.Attempts)
		}
	}
	closed := blockedObs
	closed.OpenDependencies = nil
	if tr, act = Decide(policy, tr, closed); act.Kind != Merge {
		t.Errorf("dependencies closed: %s/%s, want merge", act.Kind, tr.State)
	}
}

// TestQuotaRefusalBacksOffWithOneNote: a merge refused for the storage
// quota (Forgejo's 413) is a block: one note, no attempt counted and no
// diagnostic, no merge before the back-off ends, a longer back-off after
// each refusal up to RetryMax, and a new head starts over.
func TestQuotaRefusalBacksOffWithOneNote(t *testing.T) {
	obs := approvedWith(status("ci", "success"))(open("h1"))
	quota := forge.MergeResult{Outcome: forge.MergeQuota, Status: 413, Message: "quota exceeded"}
	tr, _ := Decide(policy, Track{}, obs)
	tr, act := AfterMerge(policy, tr, "h1", quota, now)
	if act.Kind != NoteBlocked || act.Diagnostic || tr.State != QuotaExceeded || tr.Attempts != 0 {
		t.Fatalf("first refusal: %s (diagnostic %v), %s, %d attempts; want one note, %s, no attempt", act.Kind, act.Diagnostic, tr.State, tr.Attempts, QuotaExceeded)
	}
	if !strings.Contains(act.Reason, "quota") {
		t.Errorf("the note does not name the cause: %q", act.Reason)
	}
	tr = tr.Mark(act.Marks) // the note was posted
	refused := now
	for i, wantWait := range []time.Duration{policy.RetryBase, 2 * policy.RetryBase, 4 * policy.RetryBase} {
		if wait := tr.RefusedUntil.Sub(refused); wait != wantWait {
			t.Errorf("refusal %d: back-off %s, want %s", i+1, wait, wantWait)
		}
		during := obs
		during.Now = tr.RefusedUntil.Add(-time.Second)
		if got, act := Decide(policy, tr, during); act.Kind != Wait || got.State != QuotaExceeded {
			t.Fatalf("refusal %d, during the back-off: %s/%s; want a wait", i+1, act.Kind, got.State)
		}
		after := obs
		after.Now = tr.RefusedUntil
		tr, act = Decide(policy, tr, after)
		if act.Kind != Merge {
			t.Fatalf("refusal %d, after the back-off: %s, want merge", i+1, act.Kind)
		}
		refused = after.Now
		tr, act = AfterMerge(policy, tr, "h1", quota, refused)
		if act.Kind != Wait || act.Diagnostic || tr.Attempts != 0 {
			t.Fatalf("refusal %d: %s (diagnostic %v), %d attempts; want a wait without a second note", i+2, act.Kind, act.Diagnostic, tr.Attempts)
		}
	}
	for i := 0; i < 20; i++ {
		tr, _ = AfterMerge(policy, tr, "h1", quota, refused)
	}
	if wait := tr.RefusedUntil.Sub(refused); wait != policy.RetryMax {
		t.Errorf("after many refusals: back-off %s, want the cap %s", wait, policy.RetryMax)
	}
	if got, act := Decide(policy, tr, approvedWith(status("ci", "success"))(open("h2"))); got.Refusals != 0 || act.Kind == Wait {
		t.Errorf("a new head: %s, %d refusals remembered; want the back-off gone", act.Kind, got.Refusals)
	}
}

// TestQuotaRefusalRetriesWhenThePRChanges: during the back-off after a
// quota refusal, the PR as first seen waits; a PR that changed since (a
// comment, a label: someone may have freed space) is merged at once.
func TestQuotaRefusalRetriesWhenThePRChanges(t *testing.T) {
	obs := approvedWith(status("ci", "success"))(open("h1"))
	obs.Updated = now.Add(-time.Hour)
	tr, _ := Decide(policy, Track{}, obs)
	tr, noted := AfterMerge(policy, tr, "h1", forge.MergeResult{Outcome: forge.MergeQuota, Status: 413}, now)
	tr = tr.Mark(noted.Marks) // the note was posted
	later := obs
	later.Now = now.Add(time.Second)
	tr, act := Decide(policy, tr, later)
	if act.Kind != Wait || tr.State != QuotaExceeded {
		t.Fatalf("unchanged PR during the back-off: %s/%s, want a wait", act.Kind, tr.State)
	}
	changed := later
	changed.Updated = now.Add(time.Second)
	if got, act := Decide(policy, tr, changed); act.Kind != Merge {
		t.Errorf("changed PR during the back-off: %s/%s, want merge", act.Kind, got.State)
	}
}

// TestMarksWaitForTheAction: a note or a cancel is remembered only once the
// pool records its marks, after the action succeeded; until then every
// decision asks for it again, and after it none does.
func TestMarksWaitForTheAction(t *testing.T) {
	obs := approvedWith(status("ci", "success"))(open("h1"))
	tr, _ := Decide(policy, Track{}, obs)
	tests := []struct {
		name  string
		track Track
		obs   Observation
		want  Kind
	}{
		{"a conflict the merge found", func() Track {
			t, _ := AfterMerge(policy, tr, "h1", forge.MergeResult{Outcome: forge.MergeConflict, Status: 409}, now)
			return t
		}(), obs, NoteConflict},
		{"an auto-merge armed", func() Track { t := tr; t.ArmedSHA = "h1"; return t }(), obs, Disarm},
		{"a block", Track{}, func() Observation { o := obs; o.OpenDependencies = []string{"#7"}; return o }(), NoteBlocked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, act := Decide(policy, tt.track, tt.obs)
			for i := 0; i < 2; i++ { // the action failed: nothing recorded
				if act.Kind != tt.want {
					t.Fatalf("decision %d before the action succeeded: %s, want %s again", i+1, act.Kind, tt.want)
				}
				tr, act = Decide(policy, tr, tt.obs)
			}
			tr = tr.Mark(act.Marks)
			if _, act = Decide(policy, tr, tt.obs); act.Kind == tt.want {
				t.Errorf("after the action succeeded: %s again", act.Kind)
			}
		})
	}
}

// TestLongListsAreNamedInPart: the issues a PR depends on and the
// accounts whose approvals do not count are lists anyone on the forge can
// make long, and the reasons naming them go into comments: ten are named,
// the rest counted.
func TestLongListsAreNamedInPart(t *testing.T) {
	var deps, outsiders []string
	var reviews []forge.Review
	for i := range 500 {
		deps = append(deps, fmt.Sprintf("someone/repo-%d#%d", i, i))
		outsiders = append(outsiders, fmt.Sprintf("outsider-%d", i))
		reviews = append(reviews, forge.Review{ID: int64(i + 10), Author: outsiders[i], State: forge.ReviewApproved, CommitID: "h1"})
	}
	o := approvedWith(status("ci", "success"))(open("h1"))
	o.OpenDependencies = deps
	_, dep := Decide(policy, Track{}, o)
	_, note := Decide(policy, Track{HeadSHA: "h1", HeadSeen: now, Failures: NoReviewNoteAfter - 1, Ended: SessionEnd{Head: "h1"}},
		withReviews(reviews...)(open("h1")))
	for _, act := range []Action{dep, note} {
		if len(act.Reason) > 1000 || !strings.Contains(act.Reason, "and 490 more") {
			t.Errorf("%s: a reason of %d bytes, want ten named and 490 counted: %.300s", act.Kind, len(act.Reason), act.Reason)
		}
	}
}

// TestAServerErrorIsNotedOnceItPersists: a merge answered 5xx is a
// refusal that backs off, with no attempt counted and no diagnostic; the
// note comes with the serverErrorNoteAfter-th answer at the head, once,
// and the back-off grows past RetryMax to hours.
func TestAServerErrorIsNotedOnceItPersists(t *testing.T) {
	obs := approvedWith(status("ci", "success"))(open("h1"))
	boom := forge.MergeResult{Outcome: forge.MergeFailed, Status: 500, Message: "internal error"}
	tr, _ := Decide(policy, Track{}, obs)
	notes := 0
	for i := 1; i <= 20; i++ {
		var act Action
		tr, act = AfterMerge(policy, tr, "h1", boom, now)
		if act.Diagnostic || tr.Attempts != 0 || tr.State != MergeRefused {
			t.Fatalf("answer %d: diagnostic %v, %d attempts, %s; want a refusal", i, act.Diagnostic, tr.Attempts, tr.State)
		}
		if act.Kind == NoteBlocked {
			notes++
			if i != serverErrorNoteAfter {
				t.Errorf("noted at the %d-th server error, want the %d-th", i, serverErrorNoteAfter)
			}
			tr = tr.Mark(act.Marks)
		}
	}
	if notes != 1 {
		t.Errorf("%d notes, want 1", notes)
	}
	if wait := tr.RefusedUntil.Sub(now); wait <= policy.RetryMax || wait < time.Hour {
		t.Errorf("after 20 server errors: back-off %s, want hours", wait)
	}
}

// TestDiagnosticsComeFurtherApart: an approved head whose checks stay
// pending, decided every minute for four days: no attempt counted, the
// diagnostics 10, 20, 40, ... minutes apart, up to longHold, and none
// repeated within a pass.
func TestDiagnosticsComeFurtherApart(t *testing.T) {
	obs := approvedWith(status("ci", "pending"))(open("h1"))
	tr := Track{}
	var at []time.Time
	for i := 0; i < 4*24*60; i++ {
		obs.Now = now.Add(time.Duration(i) * time.Minute)
		var act Action
		tr, act = Decide(policy, tr, obs)
		if act.Diagnostic {
			at = append(at, obs.Now)
		}
	}
	if tr.Attempts != 0 {
		t.Errorf("%d attempts counted, want 0: no merge call was made", tr.Attempts)
	}
	if len(at) > 0 && at[0].Sub(now) != 10*time.Minute {
		t.Errorf("the first diagnostic came %s after the wait began, want 10m0s", at[0].Sub(now))
	}
	want := 20 * time.Minute
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap != want {
			t.Errorf("diagnostic %d came %s after the one before, want %s", i+1, gap, want)
		}
		want = min(2*want, longHold)
	}
	if len(at) < 2 || len(at) > 16 {
		t.Errorf("%d diagnostics in four days, want a handful: %v", len(at), at)
	}
}

// TestANoReviewNoteOnTheForgeHolds: a pool that ran no session of the head
// (another pool did, or its state was lost) and reads the pool account's
// no-review note for the head starts none either, and remembers it; the
// maintainer's label still gives the head a session.
func TestANoReviewNoteOnTheForgeHolds(t *testing.T) {
	p := Policy{RetryBase: time.Minute, RetryMax: time.Hour}
	o := Observation{Open: true, HeadSHA: "h1", Now: now, SlotFree: true, Read: allFacts, NoReviewNoted: true}
	tr, act := Decide(p, Track{}, o)
	if act.Kind != Wait || tr.NotedNoReview != "h1" {
		t.Fatalf("with the note on the forge: %s (%s), noted %q; want a wait, noted h1", act.Kind, act.Reason, tr.NotedNoReview)
	}
	o.NoReviewNoted, o.Read = false, 0
	if _, act := Decide(p, tr, o); act.Kind != Wait {
		t.Errorf("the next decision, claims not read: %s (%s), want a wait", act.Kind, act.Reason)
	}
	o.Allowed, o.Read = true, allFacts
	if _, act := Decide(p, tr, o); act.Kind != Review {
		t.Errorf("with the maintainer's label: %s (%s), want a review", act.Kind, act.Reason)
	}
}

// TestSessionsCutShortAreNoNoReviewHold: sessions of a head that did not
// run to their end (lost, stuck, timed out, errored) back off and are
// tried again however many there were: no note, no hold. Sessions that
// ran to their end with no review hold after three.
func TestSessionsCutShortAreNoNoReviewHold(t *testing.T) {
	p := Policy{RetryBase: time.Minute, RetryMax: time.Hour}
	for _, cut := range []bool{true, false} {
		tr, at := Track{HeadSHA: "h1", HeadSeen: now, State: Unreviewed}, now
		var kinds []Kind
		for range 5 {
			if cut {
				tr = SessionCut(tr, "h1", "")
			} else {
				tr = SessionEnded(tr, "h1", "")
			}
			var act Action
			tr, act = Decide(p, tr, Observation{Open: true, HeadSHA: "h1", Now: at})
			tr = tr.Mark(act.Marks)
			kinds = append(kinds, act.Kind)
			at = tr.NotBefore
			tr.Ended = SessionEnd{}
			_, act = Decide(p, tr, Observation{Open: true, HeadSHA: "h1", Now: at})
			kinds = append(kinds, act.Kind)
		}
		held := slices.Contains(kinds, NoteNoReview)
		if held == cut {
			t.Errorf("cut %v: decisions %v; want a no-review note only for sessions that ran to their end", cut, kinds)
		}
	}
}

// TestTrainSoloFollowsThePoolsOwnUpdate: a PR that rides no train at head
// h (RideAlone) does not at the head the pool's update made from h
// either, before the decision that takes it in and after, nor at h read
// again from before that update; an author's new head starts over.
func TestTrainSoloFollowsThePoolsOwnUpdate(t *testing.T) {
	tr := RideAlone(Track{HeadSHA: "h"}, "h", SoloFlake)
	tr = Updated(tr, HeadUpdate{From: "h", Base: "b", Produced: "u", Style: "merge", At: now})
	if !tr.Alone("h") || !tr.Alone("u") || tr.Alone("x") {
		t.Errorf("alone at h, u, x: %v %v %v; want true true false", tr.Alone("h"), tr.Alone("u"), tr.Alone("x"))
	}
	for _, step := range []struct{ head, solo string }{{"u", "u"}, {"h", "h"}, {"u", "u"}, {"n", ""}} {
		tr = tr.atHead(step.head, now)
		if tr.TrainSolo != step.solo || (step.solo != "") != (tr.TrainSoloWhy == SoloFlake) || tr.Alone(step.head) != (step.solo != "") {
			t.Errorf("at %s: solo %q (%q), want %q", step.head, tr.TrainSolo, tr.TrainSoloWhy, step.solo)
		}
	}
}
