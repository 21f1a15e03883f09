// Package describe is what the pool shows of its PRs: the book of each
// PR's last decision, checks and merge answer (Book), and, in plain words,
// where a PR stands and what happens next (Next): its row on the status
// page and the description of the pool's commit status on its head. It
// decides nothing.
package describe

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"pool/forge"
	"pool/lifecycle"
)

// Standing is what Next reads: the PR's track and last decision, and where
// it is in the pool's queue and slots.
type Standing struct {
	Track      lifecycle.Track
	Act        lifecycle.Action
	Busy       bool           // a slot holds the PR
	Session    time.Time      // when its session started; zero while claiming
	Kind       lifecycle.Kind // the session's kind
	Queued     bool           // waiting for a slot
	Ahead      int            // PRs before it in the queue
	Merging    bool           // in the merge queue
	MergeAhead int            // PRs before it in the merge queue
	NoPlace    bool           // say nothing of its place in any queue (the commit status)
	// ForgeWait: how long it has read not mergeable in the merge queue,
	// once the pool warned of it; the page says so, the commit status does
	// not (it would be written again every minute).
	ForgeWait time.Duration
	// Car is the PR's car on its base's merge train (1 the front car) of
	// Cars; 0 when it rides none.
	Car, Cars  int
	WaitingFor []string // checks that run, or required contexts not passed yet
	Failing    []string // checks that failed at the head
	Merge      forge.MergeResult
	Base       string
	SkipLabel  string
}

// noChecksYet is the lifecycle's LastStatus for an approved head no CI has
// reported on yet (it merges without checks after the grace period).
const noChecksYet = "no checks reported yet"

// maxDescription bounds a commit status description.
const maxDescription = 140

// Next says in plain words where a PR stands and what happens next,
// in at most maxDescription bytes.
func Next(s Standing) string {
	return clip(describeRaw(s), maxDescription)
}

func describeRaw(s Standing) string {
	t := s.Track
	switch {
	case t.State == lifecycle.Merged:
		return "merged"
	case t.State == lifecycle.Closed:
		return "closed without merge"
	case s.Busy && s.Session.IsZero():
		return "claiming for review"
	case s.Busy && s.Kind == lifecycle.Fix:
		return "fixing failing checks since " + clock(s.Session)
	case s.Busy:
		return "reviewing since " + clock(s.Session)
	case s.Queued && s.Act.Kind == lifecycle.Fix:
		return "checks failing; queued for a fixer" + s.place(s.Ahead)
	case s.Queued:
		return "queued for review" + s.place(s.Ahead)
	case s.Car > 0:
		return TrainPlace(s.Car, s.Cars, s.Base)
	case s.Act.Kind == lifecycle.Update, t.State == lifecycle.OutOfDate:
		text := fmt.Sprintf("approved, checks green; behind %s: queued for updating", s.Base)
		if s.Merging {
			text += s.place(s.MergeAhead)
		}
		return text
	case s.Act.Kind == lifecycle.Merge, t.State == lifecycle.MergeQueued:
		return mergeText(s)
	case s.Act.Kind == lifecycle.Disarm:
		return "cancelling the forge's scheduled merge: the pool merges itself, pinned to the reviewed head"
	}
	switch t.State {
	case lifecycle.AwaitingHuman:
		if t.Blocked != "" {
			return t.Blocked // e.g. "needs 2 approvals; has 1"
		}
		return fmt.Sprintf("labelled %s: humans only", s.SkipLabel)
	case lifecycle.DependenciesOpen, lifecycle.WorkInProgress:
		return "approved; " + t.Blocked
	case lifecycle.QuotaExceeded:
		return "approved; merge refused for the storage quota; next try after " + clock(t.RefusedUntil)
	case lifecycle.MergeRefused:
		return fmt.Sprintf("approved; the forge refused the merge (%s); next try after %s, or when the PR, %s, its checks or reviews change",
			t.Refused, clock(t.RefusedUntil), s.Base)
	case lifecycle.Updating:
		return fmt.Sprintf("updating: %s merged into the branch; waiting for the new head", s.Base)
	case lifecycle.UpdateChecks:
		return "approved, carried over the update; waiting for checks after update: " + checkNames(s.WaitingFor)
	case lifecycle.Conflict:
		return fmt.Sprintf("conflict with %s; rebase needed", s.Base)
	case lifecycle.ChangesRequested:
		return "changes requested; waiting for a new push"
	case lifecycle.Commented:
		return "reviewed without a verdict; waiting for a new push"
	case lifecycle.CIPending:
		if len(s.WaitingFor) == 0 && t.LastStatus == noChecksYet {
			return "approved; " + noChecksYet
		}
		return "approved; waiting for " + checkNames(s.WaitingFor)
	case lifecycle.MergeScheduled:
		return "approved; auto-merge scheduled, waiting for " + checkNames(s.WaitingFor)
	case lifecycle.CIFailing:
		if t.FixerSHA != "" && t.FixerSHA == t.HeadSHA {
			return "approved; checks failing: " + checkNames(s.Failing) + "; fixer started"
		}
		return "approved; checks failing: " + checkNames(s.Failing)
	case lifecycle.MergeFailed:
		return fmt.Sprintf("merge retry %d: %s", t.Attempts, answer(s.Merge))
	}
	switch {
	case s.Act.Reason == "claimed by another pool":
		return "claimed by another pool"
	case t.State == lifecycle.Unreviewed && !t.NotBefore.IsZero() && s.Act.Kind == lifecycle.Wait:
		return "last review session left no review; next try after " + clock(t.NotBefore)
	case s.Act.Kind == lifecycle.Review:
		return "waiting for a review slot"
	}
	return s.Act.Reason
}

// mergeText says where an approved, green PR stands in the merge queue.
func mergeText(s Standing) string {
	switch {
	case s.Merging && s.ForgeWait > 0 && !s.NoPlace:
		return fmt.Sprintf("approved; waiting %s for the forge to test it against %s (it reads not mergeable)",
			minutes(s.ForgeWait), s.Base)
	case s.Merging && s.MergeAhead > 0 && !s.NoPlace:
		return fmt.Sprintf("approved; queued to merge (%d ahead)", s.MergeAhead)
	case strings.HasPrefix(s.Track.LastStatus, string(forge.MergeNotReady)):
		return "approved; merging once the forge has checked it against " + s.Base
	}
	return "approved; merging"
}

// TrainPlace says where a PR rides: "approved, checks green; car 2 of 3
// on main's merge train".
func TrainPlace(car, cars int, base string) string {
	return fmt.Sprintf("approved, checks green; car %d of %d on %s's merge train", car, cars, base)
}

// place is " (n ahead)" or " (next)" after a queue's name, or nothing where
// the text is a commit status (NoPlace): every step of the queue would
// write the status of every PR in it again, about n²/2 writes over a
// backlog of n.
func (s Standing) place(n int) string {
	if s.NoPlace {
		return ""
	}
	if n == 0 {
		return " (next)"
	}
	return fmt.Sprintf(" (%d ahead)", n)
}

// minutes is a wait of minutes or more as a person reads it: 23m, 2h07m.
func minutes(d time.Duration) string {
	d = d.Truncate(time.Minute)
	if d < time.Hour {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%dh%02dm", d/time.Hour, d%time.Hour/time.Minute)
}

func clock(t time.Time) string { return t.UTC().Format("15:04") + " UTC" }

func checkNames(names []string) string {
	if len(names) == 0 {
		return "checks"
	}
	return strings.Join(names, ", ")
}

// answer is a merge answer in few words: "405 try again later".
func answer(res forge.MergeResult) string {
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

func clip(s string, n int) string {
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "") + "..."
	}
	return s
}
