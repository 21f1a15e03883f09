// Package claims implements the review-claim protocol that lets several pools
// share one forge without two reviewers on one PR.
//
// A claim is a PR comment with the human sentence
// "Review claimed by reviewer pool instance <ID>." and a hidden marker
// <!-- pool-claim {"instance":..., "sha":..., "at":...} --> naming the head
// SHA it claims. Only comments written by trusted accounts (the pool's own
// account plus a configured list) count, so anyone who can comment cannot
// block a PR by typing the sentence.
//
// A claim is live while its head SHA is the PR's head and less than the TTL
// has passed since the last review activity at or after it: the claim itself
// (posted, or refreshed by an edit of its comment, which the pool makes while
// the claim's session runs), a later comment by the same account, or a
// review on the PR. A stale claim may be taken over; the new claim's marker
// names the instance it replaced.
//
// Claim, then verify. A pool posts its claim and then re-reads the comments.
// Among live claims for the same head the one with the lowest comment id wins;
// a pool that lost deletes its own claim and moves on.
//
// Why this is safe when two pools post at the same moment: the forge assigns
// comment ids in insertion order, so every reader agrees on the order of the
// claims it sees, and each pool verifies only after its own insert has
// committed. If pool A's claim has the lower id and was committed before pool
// B reads, B sees it and yields; A, reading after its own commit, sees B's
// higher id (or nothing) and keeps the PR. The one gap is a database that
// allocates ids before commit (PostgreSQL sequences): A may hold the lower id
// yet commit after B's verifying read, and both believe they won. That window
// is one comment insert (milliseconds); on SQLite, whose writes are
// serialised, it does not exist. The prompt tells the reviewer to stop when
// the head already carries a review, as a second line of defence.
//
// Clock skew: liveness compares forge timestamps (comment and review creation
// times, stamped by the forge's clock) with the observer's clock. A pool whose
// clock is off by d sees claims go stale d early or late, so any skew well
// below the TTL (30 minutes by default) is harmless. The tie-break uses ids,
// not times, so it tolerates any skew.
//
// The package is pure: it reads comments and reviews as package forge's
// plain types and links no SDK; posting and deleting claims is the pool's.
package claims

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"pool/forge"
)

// Claim is the content of a claim marker, plus where it was found.
type Claim struct {
	Instance string    `json:"instance"`
	SHA      string    `json:"sha"`
	At       time.Time `json:"at"`
	// Takeover names the instance whose stale claim this one replaced.
	Takeover string `json:"takeover,omitempty"`
	// Refreshed is when its claimant last edited the claim to keep it live.
	Refreshed time.Time `json:"refreshed,omitzero"`

	CommentID int64     `json:"-"`
	Author    string    `json:"-"`
	Posted    time.Time `json:"-"` // the forge's creation time of the comment
	Edited    time.Time `json:"-"` // the forge's update time of the comment
}

// Sentence is the human-readable first line of a claim comment.
func Sentence(instance string) string {
	return fmt.Sprintf("Review claimed by reviewer pool instance %s.", instance)
}

// Body renders a claim comment without the signature (the caller signs).
func Body(c Claim) string {
	return Sentence(c.Instance) + "\nDispatching independent code review.\n\n" + forge.Marker(forge.MarkClaim, c)
}

// Parse extracts the claim from a comment, if it carries a well-formed marker.
func Parse(c forge.Comment) (Claim, bool) {
	var cl Claim
	if !forge.ParseMarker(c.Body, forge.MarkClaim, &cl) || cl.Instance == "" || cl.SHA == "" {
		return Claim{}, false
	}
	cl.CommentID, cl.Author, cl.Posted, cl.Edited = c.ID, c.Author, c.Created, c.Updated
	return cl, true
}

// View is what a pool knows about one PR when it judges claims.
type View struct {
	HeadSHA  string
	Comments []forge.Comment
	Reviews  []forge.Review
	Trusted  []string // accounts whose claims count
	TTL      time.Duration
	Now      time.Time
}

// Live returns the live trusted claims on the PR's head, lowest comment id first.
func Live(v View) []Claim {
	var live []Claim
	for _, c := range v.Comments {
		cl, ok := Parse(c)
		if !ok || cl.SHA != v.HeadSHA || !trusted(v.Trusted, cl.Author) {
			continue
		}
		if v.Now.Sub(lastActivity(v, cl)) < v.TTL {
			live = append(live, cl)
		}
	}
	sort.Slice(live, func(i, j int) bool { return live[i].CommentID < live[j].CommentID })
	return live
}

// Stale returns the trusted claims on the PR's head that are no longer live,
// newest first; a takeover names the newest one it replaces.
func Stale(v View) []Claim {
	var stale []Claim
	for _, c := range v.Comments {
		cl, ok := Parse(c)
		if ok && cl.SHA == v.HeadSHA && trusted(v.Trusted, cl.Author) &&
			v.Now.Sub(lastActivity(v, cl)) >= v.TTL {
			stale = append(stale, cl)
		}
	}
	sort.Slice(stale, func(i, j int) bool { return stale[i].CommentID > stale[j].CommentID })
	return stale
}

// lastActivity is the latest of the claim, its last edit, a later comment by
// its author (not a pool's note: poolNote), and a review on the PR after
// it, each while the claim lives. No claim is another claim's
// activity: pools often share one account, and were another instance's
// claim, a takeover would revive the very claim it replaces; were the same
// instance's new claim on a head its stale one named, the stale one would
// revive, win the tie-break, and the new one be deleted as its loser,
// leaving a stale claim that the next pool takes over beside the session
// (TestSim: "session 3 started while another ran there").
func lastActivity(v View, cl Claim) time.Time {
	last := cl.Posted
	if cl.Edited.After(last) {
		last = cl.Edited
	}
	var acts []time.Time
	for _, c := range v.Comments {
		if c.ID <= cl.CommentID || c.Author != cl.Author || !c.Created.After(last) {
			continue
		}
		if _, ok := Parse(c); ok || poolNote(c.Body) {
			continue
		}
		acts = append(acts, c.Created)
	}
	for _, r := range v.Reviews {
		if r.Submitted.After(last) {
			acts = append(acts, r.Submitted)
		}
	}
	// Activity extends the claim's life only while it lives: a stale claim
	// stays stale (TestAStaleClaimStaysStale).
	slices.SortFunc(acts, func(a, b time.Time) int { return a.Compare(b) })
	for _, at := range acts {
		if v.TTL > 0 && at.Sub(last) >= v.TTL {
			break
		}
		last = at
	}
	return last
}

func trusted(list []string, author string) bool {
	for _, a := range list {
		if strings.EqualFold(a, author) {
			return true
		}
	}
	return false
}

// Judge says who holds the PR for the view's head, from the instance's side.
// It returns the winning claim when there is one.
func Judge(v View, instance string) (forge.ClaimVerdict, Claim) {
	live := Live(v)
	if len(live) == 0 {
		return forge.ClaimFree, Claim{}
	}
	if live[0].Instance == instance {
		return forge.ClaimOurs, live[0]
	}
	return forge.ClaimTaken, live[0]
}

// Losers returns this instance's live claims that do not win: the comments a
// pool deletes after losing a tie-break, or duplicates of its own winning claim.
func Losers(v View, instance string) []Claim {
	live := Live(v)
	var out []Claim
	for i, cl := range live {
		if cl.Instance == instance && i > 0 {
			out = append(out, cl)
		}
	}
	return out
}

// poolNotes are the marker kinds of the pool's own notes (diagnostics,
// holds, conflicts), which any pool of the repository posts with the
// account its claims share: no session's activity
// (TestAPoolsNoteDoesNotReviveAStaleClaim).
var poolNotes = []string{forge.MarkRetry, forge.MarkBlocked, forge.MarkNoReview, forge.MarkConflict, forge.MarkWithheld, forge.MarkTrain}

func poolNote(body string) bool {
	if !forge.HasMarker(body) {
		return false
	}
	for _, k := range poolNotes {
		if forge.ParseMarker(body, k, &struct{}{}) {
			return true
		}
	}
	return false
}
