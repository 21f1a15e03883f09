package lifecycle

import (
	"testing"
	"time"

	"pool/claims"
	"pool/forgejo"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

var policy = Policy{DiagnosticEvery: 10, RetryBase: time.Minute, RetryMax: time.Hour}

func open(head string) Observation {
	return Observation{Open: true, HeadSHA: head, Mergeable: true, Checks: ChecksNone, Now: now}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name      string
		policy    Policy
		track     Track
		obs       func(o Observation) Observation
		wantKind  Kind
		wantState State
		wantDiag  bool
		announce  bool
	}{
		{name: "new PR gets a review", wantKind: Review, wantState: Unreviewed},
		{name: "claimed elsewhere waits", obs: func(o Observation) Observation { o.Claim = claims.Taken; return o },
			wantKind: Wait, wantState: Unreviewed},
		{name: "our own claim is resumed", obs: func(o Observation) Observation { o.Claim = claims.Ours; return o },
			wantKind: Review, wantState: Unreviewed},
		{name: "skip label is left to humans", obs: func(o Observation) Observation { o.Skip = true; return o },
			wantKind: Skip, wantState: AwaitingHuman},
		{name: "merged drops", obs: func(o Observation) Observation { o.Merged, o.Open = true, false; return o },
			wantKind: Drop, wantState: Merged},
		{name: "scheduled merge completed is announced", track: Track{State: MergeScheduled, HeadSHA: "h1"},
			obs:      func(o Observation) Observation { o.Merged, o.Open = true, false; return o },
			wantKind: Drop, wantState: Merged, announce: true},
		{name: "closed unmerged drops", obs: func(o Observation) Observation { o.Open = false; return o },
			wantKind: Drop, wantState: Closed},
		{name: "approved and no checks merges", obs: approvedWith(ChecksNone), wantKind: Merge},
		{name: "approved and green merges", obs: approvedWith(ChecksGreen), wantKind: Merge},
		{name: "approved and pending waits", obs: approvedWith(ChecksPending), wantKind: Wait, wantState: CIPending},
		{name: "pending with auto-merge arms", policy: Policy{DiagnosticEvery: 10, AutoMerge: true},
			obs: approvedWith(ChecksPending), wantKind: Arm, wantState: CIPending},
		{name: "armed and pending stays scheduled", policy: Policy{DiagnosticEvery: 10, AutoMerge: true},
			track: Track{HeadSHA: "h1", ArmedSHA: "h1"}, obs: approvedWith(ChecksPending),
			wantKind: Wait, wantState: MergeScheduled},
		{name: "armed for an old head is cancelled", track: Track{HeadSHA: "h0", ArmedSHA: "h0"},
			obs: approvedWith(ChecksPending), wantKind: Disarm},
		{name: "failing checks start one fixer", obs: approvedWith(ChecksFailing), wantKind: Fix, wantState: CIFailing},
		{name: "fixer not started twice for a head", track: Track{HeadSHA: "h1", FixerSHA: "h1"},
			obs: approvedWith(ChecksFailing), wantKind: Wait, wantState: CIFailing},
		{name: "tenth attempt is diagnostic", track: Track{HeadSHA: "h1", Attempts: 9},
			obs: approvedWith(ChecksPending), wantKind: Wait, wantState: CIPending, wantDiag: true},
		{name: "eleventh is not", track: Track{HeadSHA: "h1", Attempts: 10},
			obs: approvedWith(ChecksPending), wantKind: Wait, wantState: CIPending},
		{name: "reviewer conflict hint confirmed by forge", obs: func(o Observation) Observation {
			o = approvedWith(ChecksGreen)(o)
			o.Hint, o.Mergeable = "conflict", false
			return o
		}, wantKind: NoteConflict, wantState: Conflict},
		{name: "conflict hint the forge contradicts is ignored", obs: func(o Observation) Observation {
			o = approvedWith(ChecksGreen)(o)
			o.Hint = "conflict"
			return o
		}, wantKind: Merge},
		{name: "conflict noted waits for new head", track: Track{HeadSHA: "h1", ConflictSHA: "h1"},
			obs: approvedWith(ChecksGreen), wantKind: Wait, wantState: Conflict},
		{name: "new head after conflict is reviewed", track: Track{HeadSHA: "h0", ConflictSHA: "h0", ReviewedSHA: "h0", State: Conflict},
			wantKind: Review, wantState: Unreviewed},
		{name: "changes requested waits", obs: reviewed(forgejo.ReviewRequestChanges), wantKind: Wait, wantState: ChangesRequested},
		{name: "comment-only review waits", obs: reviewed(forgejo.ReviewComment), wantKind: Wait, wantState: Commented},
		{name: "re-review after push", track: Track{HeadSHA: "h0", ReviewedSHA: "h0", State: ChangesRequested},
			wantKind: Review, wantState: Unreviewed},
		{name: "backing off after a failed session", track: Track{HeadSHA: "h1", NotBefore: now.Add(time.Minute)},
			wantKind: Wait, wantState: Unreviewed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy
			if tt.policy.DiagnosticEvery != 0 {
				p = tt.policy
			}
			o := open("h1")
			if tt.obs != nil {
				o = tt.obs(o)
			}
			got, act := Decide(p, tt.track, o)
			if act.Kind != tt.wantKind {
				t.Fatalf("kind = %s (%s), want %s", act.Kind, act.Reason, tt.wantKind)
			}
			if tt.wantState != "" && got.State != tt.wantState {
				t.Errorf("state = %s, want %s", got.State, tt.wantState)
			}
			if act.Diagnostic != tt.wantDiag {
				t.Errorf("diagnostic = %v, want %v", act.Diagnostic, tt.wantDiag)
			}
			if act.Announce != tt.announce {
				t.Errorf("announce = %v, want %v", act.Announce, tt.announce)
			}
		})
	}
}

func approvedWith(c Checks) func(Observation) Observation {
	return func(o Observation) Observation {
		o.Review, o.Checks = forgejo.ReviewApproved, c
		return o
	}
}

func reviewed(state string) func(Observation) Observation {
	return func(o Observation) Observation { o.Review = state; return o }
}

func TestDecideNewHeadResetsAttempts(t *testing.T) {
	tr := Track{HeadSHA: "h0", Attempts: 25, FixerSHA: "h0", Failures: 3, NotBefore: now.Add(time.Hour)}
	got, _ := Decide(policy, tr, open("h1"))
	if got.Attempts != 0 || got.FixerSHA != "" || got.Failures != 0 || !got.NotBefore.IsZero() || got.HeadSHA != "h1" {
		t.Errorf("per-head memory kept: %+v", got)
	}
}

func TestAfterMerge(t *testing.T) {
	tests := []struct {
		outcome   forgejo.MergeOutcome
		wantKind  Kind
		wantState State
	}{
		{forgejo.MergeDone, Wait, ""},
		{forgejo.MergeScheduled, Wait, MergeScheduled},
		{forgejo.MergeNotReady, Wait, MergeFailed},
		{forgejo.MergeBlocked, Wait, MergeFailed},
		{forgejo.MergeConflict, NoteConflict, Conflict},
		{forgejo.MergeHeadMoved, Wait, ""},
		{forgejo.MergeFailed, Wait, MergeFailed},
	}
	for _, tt := range tests {
		t.Run(string(tt.outcome), func(t *testing.T) {
			got, act := AfterMerge(policy, Track{HeadSHA: "h1"}, "h1", forgejo.MergeResult{Outcome: tt.outcome, Status: 405})
			if act.Kind != tt.wantKind || got.State != tt.wantState {
				t.Errorf("got %s/%s, want %s/%s", act.Kind, got.State, tt.wantKind, tt.wantState)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	st := func(states ...string) []forgejo.Status {
		var out []forgejo.Status
		for i, s := range states {
			out = append(out, forgejo.Status{Context: string(rune('a' + i)), State: s})
		}
		return out
	}
	tests := []struct {
		name string
		in   []forgejo.Status
		want Checks
	}{
		{"nothing reported is unknown", nil, ChecksNone},
		{"all green", st("success", "success"), ChecksGreen},
		{"one pending", st("success", "pending"), ChecksPending},
		{"one failure wins", st("pending", "failure"), ChecksFailing},
		{"error is failure", st("error"), ChecksFailing},
		{"warning passes", st("warning"), ChecksGreen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summarize(tt.in); got != tt.want {
				t.Errorf("Summarize = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		n    int
		want time.Duration
	}{{0, 0}, {1, time.Minute}, {2, 2 * time.Minute}, {3, 4 * time.Minute}, {10, time.Hour}}
	for _, tt := range tests {
		if got := Backoff(tt.n, time.Minute, time.Hour); got != tt.want {
			t.Errorf("Backoff(%d) = %s, want %s", tt.n, got, tt.want)
		}
	}
}
