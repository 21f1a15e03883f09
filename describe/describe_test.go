package describe

import (
	"slices"
	"testing"
	"time"

	"pool/forge"
	"pool/lifecycle"
)

func TestDescribe(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 42, 7, 0, time.UTC)
	track := func(s lifecycle.State) lifecycle.Track { return lifecycle.Track{State: s, HeadSHA: "abc"} }
	wait := lifecycle.Action{Kind: lifecycle.Wait}
	review := lifecycle.Action{Kind: lifecycle.Review, Reason: "not reviewed at its head"}
	tests := []struct {
		name string
		in   Standing
		want string
	}{
		{"queued with three ahead", Standing{Track: track(lifecycle.Unreviewed), Act: review, Queued: true, Ahead: 3}, "queued for review (3 ahead)"},
		{"queued first in line", Standing{Track: track(lifecycle.Unreviewed), Act: review, Queued: true}, "queued for review (next)"},
		{"fixer queued", Standing{Track: track(lifecycle.CIFailing), Act: lifecycle.Action{Kind: lifecycle.Fix}, Queued: true, Ahead: 1}, "checks failing; queued for a fixer (1 ahead)"},
		{"claiming", Standing{Track: track(lifecycle.Unreviewed), Act: review, Busy: true}, "claiming for review"},
		{"reviewing", Standing{Track: track(lifecycle.Unreviewed), Act: review, Busy: true, Session: at, Kind: lifecycle.Review}, "reviewing since 10:42 UTC"},
		{"fixing", Standing{Track: track(lifecycle.CIFailing), Busy: true, Session: at, Kind: lifecycle.Fix}, "fixing failing checks since 10:42 UTC"},
		{"waiting for a check", Standing{Track: track(lifecycle.CIPending), Act: wait, WaitingFor: []string{"ci/test"}}, "approved; waiting for ci/test"},
		{"waiting for two checks", Standing{Track: track(lifecycle.CIPending), Act: wait, WaitingFor: []string{"ci/lint", "ci/test"}}, "approved; waiting for ci/lint, ci/test"},
		{"auto-merge armed", Standing{Track: track(lifecycle.MergeScheduled), Act: wait, WaitingFor: []string{"ci/test"}}, "approved; auto-merge scheduled, waiting for ci/test"},
		{"no checks yet", Standing{Track: lifecycle.Track{State: lifecycle.CIPending, LastStatus: "no checks reported yet"}, Act: wait}, "approved; no checks reported yet"},
		{"a required context not reported", Standing{Track: lifecycle.Track{State: lifecycle.CIPending, LastStatus: "pending"}, Act: wait, WaitingFor: []string{"ci/*"}}, "approved; waiting for ci/*"},
		{"disarming", Standing{Track: track(lifecycle.MergeScheduled), Act: lifecycle.Action{Kind: lifecycle.Disarm}}, "cancelling the forge's scheduled merge: the pool merges itself, pinned to the reviewed head"},
		{"checks failing, fixer started", Standing{Track: lifecycle.Track{State: lifecycle.CIFailing, HeadSHA: "abc", FixerSHA: "abc"}, Act: wait, Failing: []string{"ci/test"}}, "approved; checks failing: ci/test; fixer started"},
		{"checks failing, no fixer", Standing{Track: track(lifecycle.CIFailing), Act: lifecycle.Action{Kind: lifecycle.Wait}, Failing: []string{"ci/lint"}}, "approved; checks failing: ci/lint"},
		{"protection wants approvals", Standing{Track: lifecycle.Track{State: lifecycle.AwaitingHuman, Blocked: "needs 2 approvals; has 1"}, Act: wait}, "needs 2 approvals; has 1"},
		{"merging once green", Standing{Track: track(lifecycle.CIPending), Act: lifecycle.Action{Kind: lifecycle.Merge}}, "approved; merging"},
		{"merge queue, two ahead", Standing{Track: track(lifecycle.MergeQueued), Act: lifecycle.Action{Kind: lifecycle.Merge}, Merging: true, MergeAhead: 2}, "approved; queued to merge (2 ahead)"},
		{"merge queue, two ahead, commit status", Standing{Track: track(lifecycle.MergeQueued), Act: lifecycle.Action{Kind: lifecycle.Merge}, Merging: true, MergeAhead: 2, NoPlace: true}, "approved; merging"},
		{"merge queue, long wait for the forge", Standing{Track: track(lifecycle.MergeQueued), Act: lifecycle.Action{Kind: lifecycle.Merge}, Merging: true, MergeAhead: 2,
			ForgeWait: 83*time.Minute + 40*time.Second, Base: "main"}, "approved; waiting 1h23m for the forge to test it against main (it reads not mergeable)"},
		{"merge queue, long wait for the forge, commit status", Standing{Track: track(lifecycle.MergeQueued), Act: lifecycle.Action{Kind: lifecycle.Merge}, Merging: true,
			ForgeWait: 23 * time.Minute, NoPlace: true, Base: "main"}, "approved; merging"},
		{"merge queue, forge still checking", Standing{Track: lifecycle.Track{State: lifecycle.MergeQueued, LastStatus: "not_ready (HTTP 405: try again later)"},
			Act: lifecycle.Action{Kind: lifecycle.Wait}, Merging: true, Base: "main"}, "approved; merging once the forge has checked it against main"},
		{"merge retry", Standing{Track: lifecycle.Track{State: lifecycle.MergeFailed, Attempts: 12}, Act: wait,
			Merge: forge.MergeResult{Status: 405, Message: `{"message":"Please try again later","url":"x"}`}}, "merge retry 12: 405 try again later"},
		{"merge retry, plain answer", Standing{Track: lifecycle.Track{State: lifecycle.MergeFailed, Attempts: 2}, Act: wait,
			Merge: forge.MergeResult{Status: 500, Message: "Internal  Server\nError"}}, "merge retry 2: 500 internal server error"},
		{"queued for an update", Standing{Track: track(lifecycle.OutOfDate), Act: lifecycle.Action{Kind: lifecycle.Update}, Merging: true, MergeAhead: 1, Base: "main"},
			"approved, checks green; behind main: queued for updating (1 ahead)"},
		{"riding a train", Standing{Track: track(lifecycle.MergeQueued), Act: lifecycle.Action{Kind: lifecycle.Merge}, Merging: true, MergeAhead: 4, Car: 2, Cars: 3, Base: "main"},
			"approved, checks green; car 2 of 3 on main's merge train"},
		{"riding a train, commit status", Standing{Track: track(lifecycle.OutOfDate), Act: lifecycle.Action{Kind: lifecycle.Update}, Merging: true, NoPlace: true, Car: 1, Cars: 3, Base: "main"},
			"approved, checks green; car 1 of 3 on main's merge train"},
		{"merged from a train", Standing{Track: track(lifecycle.Merged), Act: lifecycle.Action{Kind: lifecycle.Drop}, Car: 1, Cars: 3, Base: "main"}, "merged"},
		{"updating", Standing{Track: track(lifecycle.Updating), Act: wait, Base: "main"}, "updating: main merged into the branch; waiting for the new head"},
		{"checks after the update", Standing{Track: track(lifecycle.UpdateChecks), Act: wait, WaitingFor: []string{"ci/test"}},
			"approved, carried over the update; waiting for checks after update: ci/test"},
		{"merge refused for a rule", Standing{Track: lifecycle.Track{State: lifecycle.MergeRefused, Refused: "status_check", RefusedUntil: at}, Act: wait, Base: "main"},
			"approved; the forge refused the merge (status_check); next try after 10:42 UTC, or when the PR, main, its checks or reviews change"},
		{"conflict", Standing{Track: track(lifecycle.Conflict), Act: wait, Base: "main"}, "conflict with main; rebase needed"},
		{"humans only", Standing{Track: track(lifecycle.AwaitingHuman), Act: lifecycle.Action{Kind: lifecycle.Skip}, SkipLabel: "needs feedback"}, "labelled needs feedback: humans only"},
		{"changes requested", Standing{Track: track(lifecycle.ChangesRequested), Act: wait}, "changes requested; waiting for a new push"},
		{"commented", Standing{Track: track(lifecycle.Commented), Act: wait}, "reviewed without a verdict; waiting for a new push"},
		{"claimed elsewhere", Standing{Track: track(lifecycle.Unreviewed), Act: lifecycle.Action{Kind: lifecycle.Wait, Reason: "claimed by another pool"}}, "claimed by another pool"},
		{"backing off", Standing{Track: lifecycle.Track{State: lifecycle.Unreviewed, NotBefore: at.Add(5 * time.Minute)}, Act: wait}, "last review session left no review; next try after 10:47 UTC"},
		{"needs a session, no slot yet", Standing{Track: track(lifecycle.Unreviewed), Act: review}, "waiting for a review slot"},
		{"merged", Standing{Track: track(lifecycle.Merged), Act: lifecycle.Action{Kind: lifecycle.Drop}}, "merged"},
		{"closed", Standing{Track: track(lifecycle.Closed), Act: lifecycle.Action{Kind: lifecycle.Drop}}, "closed without merge"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Next(tt.in); got != tt.want {
				t.Errorf("describe = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDescribeIsBounded(t *testing.T) {
	long := make([]string, 50)
	for i := range long {
		long[i] = "some-very-long-check-context"
	}
	got := Next(Standing{Track: lifecycle.Track{State: lifecycle.CIPending}, WaitingFor: long})
	if len(got) > maxDescription+len("...") {
		t.Errorf("description of %d bytes, want at most %d", len(got), maxDescription+3)
	}
}

// TestARequiredCheckThatRunsIsNamedOnce: the required check "ci" runs on
// the head. It is pending and not passed yet, both; the page names it once
// (it said "waiting for checks after update: ci, ci" in the simulation's
// trace of CI's run of 139a946).
func TestARequiredCheckThatRunsIsNamedOnce(t *testing.T) {
	b := NewBook(time.Now())
	b.Checks(1, []lifecycle.Check{{ID: 1, Context: "ci", State: "pending"}}, []string{"ci", "lint"})
	if got, want := b.entry(1).waitingFor, []string{"ci", "lint"}; !slices.Equal(got, want) {
		t.Errorf("waiting for %q, want %q", got, want)
	}
}
