package pool

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"pool/forgejo"
	"pool/lifecycle"
)

// standing is what describe reads: the PR's track and last decision, and
// where it is in the pool's queue and slots.
type standing struct {
	track      lifecycle.Track
	act        lifecycle.Action
	busy       bool           // a slot holds the PR
	session    time.Time      // when its session started; zero while claiming
	kind       lifecycle.Kind // the session's kind
	queued     bool           // waiting for a slot
	ahead      int            // PRs before it in the queue
	merging    bool           // in the merge queue
	mergeAhead int            // PRs before it in the merge queue
	noPlace    bool           // say nothing of its place in the merge queue (the commit status)
	waitingFor []string       // checks that run, or required contexts not passed yet
	failing    []string       // checks that failed at the head
	merge      forgejo.MergeResult
	base       string
	skipLabel  string
}

// noChecksYet is the lifecycle's LastStatus for an approved head no CI has
// reported on yet (it merges without checks after the grace period).
const noChecksYet = "no checks reported yet"

// maxDescription bounds a commit status description.
const maxDescription = 140

// describe says in plain words where a PR stands and what happens next. It
// is the PR's row on the status page and the description of the pool's
// commit status on its head.
func describe(s standing) string {
	return clip(describeRaw(s), maxDescription)
}

func describeRaw(s standing) string {
	t := s.track
	switch {
	case t.State == lifecycle.Merged:
		return "merged"
	case t.State == lifecycle.Closed:
		return "closed without merge"
	case s.busy && s.session.IsZero():
		return "claiming for review"
	case s.busy && s.kind == lifecycle.Fix:
		return "fixing failing checks since " + clock(s.session)
	case s.busy:
		return "reviewing since " + clock(s.session)
	case s.queued && s.act.Kind == lifecycle.Fix:
		return "checks failing; queued for a fixer" + ahead(s.ahead)
	case s.queued:
		return "queued for review" + ahead(s.ahead)
	case s.act.Kind == lifecycle.Update, t.State == lifecycle.OutOfDate:
		text := fmt.Sprintf("approved, checks green; behind %s: queued for updating", s.base)
		if s.merging {
			text += ahead(s.mergeAhead)
		}
		return text
	case s.act.Kind == lifecycle.Merge, t.State == lifecycle.MergeQueued:
		return mergeText(s)
	case s.act.Kind == lifecycle.Disarm:
		return "cancelling the forge's scheduled merge: the pool merges itself, pinned to the reviewed head"
	}
	switch t.State {
	case lifecycle.AwaitingHuman:
		if t.Blocked != "" {
			return t.Blocked // e.g. "needs 2 approvals; has 1"
		}
		return fmt.Sprintf("labelled %s: humans only", s.skipLabel)
	case lifecycle.DependenciesOpen:
		return "approved; " + t.Blocked
	case lifecycle.QuotaExceeded:
		return "approved; merge refused for the storage quota; next try after " + clock(t.RefusedUntil)
	case lifecycle.MergeRefused:
		return fmt.Sprintf("approved; the forge refused the merge (%s); next try after %s, or when the PR, %s, its checks or reviews change",
			t.Refused, clock(t.RefusedUntil), s.base)
	case lifecycle.Updating:
		return fmt.Sprintf("updating: %s merged into the branch; waiting for the new head", s.base)
	case lifecycle.UpdateChecks:
		return "approved, carried over the update; waiting for checks after update: " + checkNames(s.waitingFor)
	case lifecycle.Conflict:
		return fmt.Sprintf("conflict with %s; rebase needed", s.base)
	case lifecycle.ChangesRequested:
		return "changes requested; waiting for a new push"
	case lifecycle.Commented:
		return "reviewed without a verdict; waiting for a new push"
	case lifecycle.CIPending:
		if len(s.waitingFor) == 0 && t.LastStatus == noChecksYet {
			return "approved; " + noChecksYet
		}
		return "approved; waiting for " + checkNames(s.waitingFor)
	case lifecycle.MergeScheduled:
		return "approved; auto-merge scheduled, waiting for " + checkNames(s.waitingFor)
	case lifecycle.CIFailing:
		if t.FixerSHA != "" && t.FixerSHA == t.HeadSHA {
			return "approved; checks failing: " + checkNames(s.failing) + "; fixer started"
		}
		return "approved; checks failing: " + checkNames(s.failing)
	case lifecycle.MergeFailed:
		return fmt.Sprintf("merge retry %d: %s", t.Attempts, answer(s.merge))
	}
	switch {
	case s.act.Reason == "claimed by another pool":
		return "claimed by another pool"
	case t.State == lifecycle.Unreviewed && !t.NotBefore.IsZero() && s.act.Kind == lifecycle.Wait:
		return "last review session left no review; next try after " + clock(t.NotBefore)
	case s.act.Kind == lifecycle.Review:
		return "waiting for a review slot"
	}
	return s.act.Reason
}

// mergeText says where an approved, green PR stands in the merge queue.
func mergeText(s standing) string {
	switch {
	case s.merging && s.mergeAhead > 0 && !s.noPlace:
		return fmt.Sprintf("approved; queued to merge (%d ahead)", s.mergeAhead)
	case strings.HasPrefix(s.track.LastStatus, string(forgejo.MergeNotReady)):
		return "approved; merging once the forge has checked it against " + s.base
	}
	return "approved; merging"
}

func ahead(n int) string {
	if n == 0 {
		return " (next)"
	}
	return fmt.Sprintf(" (%d ahead)", n)
}

func clock(t time.Time) string { return t.UTC().Format("15:04") + " UTC" }

func checkNames(names []string) string {
	if len(names) == 0 {
		return "checks"
	}
	return strings.Join(names, ", ")
}

// answer is a merge answer in few words: "405 try again later".
func answer(res forgejo.MergeResult) string {
	msg := res.Message
	var body struct {
		Message string `json:"message"`
	}
	if json.Unmarshal([]byte(msg), &body) == nil && body.Message != "" {
		msg = body.Message
	}
	msg = strings.ToLower(strings.Join(strings.Fields(msg), " "))
	msg = strings.TrimPrefix(msg, "please ")
	if res.Status == 0 {
		return clip(msg, 60)
	}
	return strings.TrimSpace(fmt.Sprintf("%d %s", res.Status, clip(msg, 60)))
}
