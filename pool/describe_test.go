package pool

import (
	"testing"
	"time"

	"pool/forgejo"
	"pool/lifecycle"
)

func TestDescribe(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 42, 7, 0, time.UTC)
	track := func(s lifecycle.State) lifecycle.Track { return lifecycle.Track{State: s, HeadSHA: "abc"} }
	wait := lifecycle.Action{Kind: lifecycle.Wait}
	review := lifecycle.Action{Kind: lifecycle.Review, Reason: "not reviewed at its head"}
	tests := []struct {
		name string
		in   standing
		want string
	}{
		{"queued with three ahead", standing{track: track(lifecycle.Unreviewed), act: review, queued: true, ahead: 3}, "queued for review (3 ahead)"},
		{"queued first in line", standing{track: track(lifecycle.Unreviewed), act: review, queued: true}, "queued for review (next)"},
		{"fixer queued", standing{track: track(lifecycle.CIFailing), act: lifecycle.Action{Kind: lifecycle.Fix}, queued: true, ahead: 1}, "checks failing; queued for a fixer (1 ahead)"},
		{"claiming", standing{track: track(lifecycle.Unreviewed), act: review, busy: true}, "claiming for review"},
		{"reviewing", standing{track: track(lifecycle.Unreviewed), act: review, busy: true, session: at, kind: lifecycle.Review}, "reviewing since 10:42 UTC"},
		{"fixing", standing{track: track(lifecycle.CIFailing), busy: true, session: at, kind: lifecycle.Fix}, "fixing failing checks since 10:42 UTC"},
		{"waiting for a check", standing{track: track(lifecycle.CIPending), act: wait, waitingFor: []string{"ci/test"}}, "approved; waiting for ci/test"},
		{"waiting for two checks", standing{track: track(lifecycle.CIPending), act: wait, waitingFor: []string{"ci/lint", "ci/test"}}, "approved; waiting for ci/lint, ci/test"},
		{"auto-merge armed", standing{track: track(lifecycle.MergeScheduled), act: wait, waitingFor: []string{"ci/test"}}, "approved; auto-merge scheduled, waiting for ci/test"},
		{"no checks yet", standing{track: lifecycle.Track{State: lifecycle.CIPending, LastStatus: "no checks reported yet"}, act: wait}, "approved; no checks reported yet"},
		{"a required context not reported", standing{track: lifecycle.Track{State: lifecycle.CIPending, LastStatus: "pending"}, act: wait, waitingFor: []string{"ci/*"}}, "approved; waiting for ci/*"},
		{"disarming", standing{track: track(lifecycle.MergeScheduled), act: lifecycle.Action{Kind: lifecycle.Disarm}}, "cancelling the forge's scheduled merge: the pool merges itself, pinned to the reviewed head"},
		{"checks failing, fixer started", standing{track: lifecycle.Track{State: lifecycle.CIFailing, HeadSHA: "abc", FixerSHA: "abc"}, act: wait, failing: []string{"ci/test"}}, "approved; checks failing: ci/test; fixer started"},
		{"checks failing, no fixer", standing{track: track(lifecycle.CIFailing), act: lifecycle.Action{Kind: lifecycle.Wait}, failing: []string{"ci/lint"}}, "approved; checks failing: ci/lint"},
		{"protection wants approvals", standing{track: lifecycle.Track{State: lifecycle.AwaitingHuman, Blocked: "needs 2 approvals; has 1"}, act: wait}, "needs 2 approvals; has 1"},
		{"merging once green", standing{track: track(lifecycle.CIPending), act: lifecycle.Action{Kind: lifecycle.Merge}}, "approved; merging"},
		{"merge queue, two ahead", standing{track: track(lifecycle.MergeQueued), act: lifecycle.Action{Kind: lifecycle.Merge}, merging: true, mergeAhead: 2}, "approved; queued to merge (2 ahead)"},
		{"merge queue, two ahead, commit status", standing{track: track(lifecycle.MergeQueued), act: lifecycle.Action{Kind: lifecycle.Merge}, merging: true, mergeAhead: 2, noPlace: true}, "approved; merging"},
		{"merge queue, forge still checking", standing{track: lifecycle.Track{State: lifecycle.MergeQueued, LastStatus: "not_ready (HTTP 405: try again later)"},
			act: lifecycle.Action{Kind: lifecycle.Wait}, merging: true, base: "main"}, "approved; merging once the forge has checked it against main"},
		{"merge retry", standing{track: lifecycle.Track{State: lifecycle.MergeFailed, Attempts: 12}, act: wait,
			merge: forgejo.MergeResult{Status: 405, Message: `{"message":"Please try again later","url":"x"}`}}, "merge retry 12: 405 try again later"},
		{"merge retry, plain answer", standing{track: lifecycle.Track{State: lifecycle.MergeFailed, Attempts: 2}, act: wait,
			merge: forgejo.MergeResult{Status: 500, Message: "Internal  Server\nError"}}, "merge retry 2: 500 internal server error"},
		{"queued for an update", standing{track: track(lifecycle.OutOfDate), act: lifecycle.Action{Kind: lifecycle.Update}, merging: true, mergeAhead: 1, base: "main"},
			"approved, checks green; behind main: queued for updating (1 ahead)"},
		{"updating", standing{track: track(lifecycle.Updating), act: wait, base: "main"}, "updating: main merged into the branch; waiting for the new head"},
		{"checks after the update", standing{track: track(lifecycle.UpdateChecks), act: wait, waitingFor: []string{"ci/test"}},
			"approved, carried over the update; waiting for checks after update: ci/test"},
		{"merge refused for a rule", standing{track: lifecycle.Track{State: lifecycle.MergeRefused, Refused: "status_check", RefusedUntil: at}, act: wait, base: "main"},
			"approved; the forge refused the merge (status_check); next try after 10:42 UTC, or when the PR, main, its checks or reviews change"},
		{"conflict", standing{track: track(lifecycle.Conflict), act: wait, base: "main"}, "conflict with main; rebase needed"},
		{"humans only", standing{track: track(lifecycle.AwaitingHuman), act: lifecycle.Action{Kind: lifecycle.Skip}, skipLabel: "needs feedback"}, "labelled needs feedback: humans only"},
		{"changes requested", standing{track: track(lifecycle.ChangesRequested), act: wait}, "changes requested; waiting for a new push"},
		{"commented", standing{track: track(lifecycle.Commented), act: wait}, "reviewed without a verdict; waiting for a new push"},
		{"claimed elsewhere", standing{track: track(lifecycle.Unreviewed), act: lifecycle.Action{Kind: lifecycle.Wait, Reason: "claimed by another pool"}}, "claimed by another pool"},
		{"backing off", standing{track: lifecycle.Track{State: lifecycle.Unreviewed, NotBefore: at.Add(5 * time.Minute)}, act: wait}, "last review session left no review; next try after 10:47 UTC"},
		{"needs a session, no slot yet", standing{track: track(lifecycle.Unreviewed), act: review}, "waiting for a review slot"},
		{"merged", standing{track: track(lifecycle.Merged), act: lifecycle.Action{Kind: lifecycle.Drop}}, "merged"},
		{"closed", standing{track: track(lifecycle.Closed), act: lifecycle.Action{Kind: lifecycle.Drop}}, "closed without merge"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describe(tt.in); got != tt.want {
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
	got := describe(standing{track: lifecycle.Track{State: lifecycle.CIPending}, waitingFor: long})
	if len(got) > maxDescription+len("...") {
		t.Errorf("description of %d bytes, want at most %d", len(got), maxDescription+3)
	}
}
