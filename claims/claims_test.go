package claims

import (
	"strings"
	"testing"
	"time"

	"pool/forge"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func claimComment(id int64, author, instance, sha string, at time.Time) forge.Comment {
	return forge.Comment{ID: id, Author: author, Created: at,
		Body: Body(Claim{Instance: instance, SHA: sha, At: at}) + "\n\n---\nsigned"}
}

func edited(c forge.Comment, at time.Time) forge.Comment {
	c.Updated = at
	return c
}

func TestParseRoundTrip(t *testing.T) {
	c := claimComment(7, "bot", "pool-a", "abc", t0)
	cl, ok := Parse(c)
	if !ok {
		t.Fatalf("Parse(%q) failed", c.Body)
	}
	if cl.Instance != "pool-a" || cl.SHA != "abc" || cl.CommentID != 7 || cl.Author != "bot" || !cl.At.Equal(t0) {
		t.Errorf("parsed %+v", cl)
	}
	if !strings.HasPrefix(c.Body, "Review claimed by reviewer pool instance pool-a.\nDispatching independent code review.") {
		t.Errorf("body lost the human text: %q", c.Body)
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct{ name, body string }{
		{"sentence only", "Review claimed by reviewer pool instance pool-x.\nDispatching independent code review."},
		{"broken json", `<!-- pool-claim {"instance": -->`},
		{"no sha", `<!-- pool-claim {"instance":"a"} -->`},
		{"no instance", `<!-- pool-claim {"sha":"abc"} -->`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if cl, ok := Parse(forge.Comment{Body: tt.body}); ok {
				t.Errorf("Parse accepted %q as %+v", tt.body, cl)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	ttl := 30 * time.Minute
	trusted := []string{"bot", "other-bot"}
	tests := []struct {
		name     string
		comments []forge.Comment
		reviews  []forge.Review
		now      time.Time
		want     forge.ClaimVerdict
		winner   string
	}{
		{name: "no comments", now: t0, want: forge.ClaimFree},
		{name: "own fresh claim", comments: []forge.Comment{claimComment(1, "bot", "me", "head", t0)},
			now: t0.Add(time.Minute), want: forge.ClaimOurs, winner: "me"},
		{name: "other fresh claim", comments: []forge.Comment{claimComment(1, "other-bot", "them", "head", t0)},
			now: t0.Add(29 * time.Minute), want: forge.ClaimTaken, winner: "them"},
		{name: "tie-break lowest id wins", comments: []forge.Comment{
			claimComment(5, "bot", "me", "head", t0), claimComment(4, "other-bot", "them", "head", t0)},
			now: t0, want: forge.ClaimTaken, winner: "them"},
		{name: "tie-break we are first", comments: []forge.Comment{
			claimComment(4, "bot", "me", "head", t0), claimComment(5, "other-bot", "them", "head", t0)},
			now: t0, want: forge.ClaimOurs, winner: "me"},
		{name: "untrusted author is ignored", comments: []forge.Comment{claimComment(1, "mallory", "fake", "head", t0)},
			now: t0, want: forge.ClaimFree},
		{name: "claim on an older head is irrelevant", comments: []forge.Comment{claimComment(1, "other-bot", "them", "old", t0)},
			now: t0, want: forge.ClaimFree},
		{name: "stale after ttl", comments: []forge.Comment{claimComment(1, "other-bot", "them", "head", t0)},
			now: t0.Add(ttl), want: forge.ClaimFree},
		{name: "claimant comment keeps it live", comments: []forge.Comment{
			claimComment(1, "other-bot", "them", "head", t0),
			{ID: 2, Author: "other-bot", Body: "still working", Created: t0.Add(20 * time.Minute)}},
			now: t0.Add(45 * time.Minute), want: forge.ClaimTaken, winner: "them"},
		{name: "another instance's claim by the same account does not", comments: []forge.Comment{
			claimComment(1, "other-bot", "them", "head", t0),
			claimComment(2, "other-bot", "someone", "old-head", t0.Add(20*time.Minute))},
			now: t0.Add(45 * time.Minute), want: forge.ClaimFree},
		{name: "someone else's comment does not", comments: []forge.Comment{
			claimComment(1, "other-bot", "them", "head", t0),
			{ID: 2, Author: "alice", Body: "ping", Created: t0.Add(20 * time.Minute)}},
			now: t0.Add(45 * time.Minute), want: forge.ClaimFree},
		{name: "an edit of the claim keeps it live", comments: []forge.Comment{
			edited(claimComment(1, "other-bot", "them", "head", t0), t0.Add(20*time.Minute))},
			now: t0.Add(45 * time.Minute), want: forge.ClaimTaken, winner: "them"},
		{name: "review activity keeps it live", comments: []forge.Comment{claimComment(1, "other-bot", "them", "head", t0)},
			reviews: []forge.Review{{ID: 9, Author: "rev", State: forge.ReviewComment, Submitted: t0.Add(10 * time.Minute)}},
			now:     t0.Add(35 * time.Minute), want: forge.ClaimTaken, winner: "them"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := View{HeadSHA: "head", Comments: tt.comments, Reviews: tt.reviews, Trusted: trusted, TTL: ttl, Now: tt.now}
			got, win := Judge(v, "me")
			if got != tt.want {
				t.Fatalf("Judge = %s, want %s", got, tt.want)
			}
			if win.Instance != tt.winner {
				t.Errorf("winner = %q, want %q", win.Instance, tt.winner)
			}
		})
	}
}

func TestStaleAndTakeover(t *testing.T) {
	v := View{HeadSHA: "head", Trusted: []string{"bot"}, TTL: time.Minute, Now: t0.Add(time.Hour),
		Comments: []forge.Comment{claimComment(1, "bot", "dead-1", "head", t0), claimComment(3, "bot", "dead-2", "head", t0.Add(time.Second))}}
	stale := Stale(v)
	if len(stale) != 2 || stale[0].Instance != "dead-2" {
		t.Fatalf("Stale = %+v, want dead-2 first", stale)
	}
	body := Body(Claim{Instance: "me", SHA: "head", At: v.Now, Takeover: stale[0].Instance})
	cl, ok := Parse(forge.Comment{ID: 4, Author: "bot", Body: body, Created: v.Now})
	if !ok || cl.Takeover != "dead-2" {
		t.Errorf("takeover marker = %+v", cl)
	}
}

func TestLosers(t *testing.T) {
	v := View{HeadSHA: "head", Trusted: []string{"bot"}, TTL: time.Hour, Now: t0,
		Comments: []forge.Comment{
			claimComment(1, "bot", "them", "head", t0),
			claimComment(2, "bot", "me", "head", t0),
		}}
	losers := Losers(v, "me")
	if len(losers) != 1 || losers[0].CommentID != 2 {
		t.Errorf("Losers = %+v, want our comment 2", losers)
	}
	if l := Losers(v, "them"); len(l) != 0 {
		t.Errorf("winner has losers: %+v", l)
	}
}

// TestANewClaimDoesNotReviveAStaleOne: a pool that claims a head again
// after its own claim there went stale (the head pushed back to, or a PR
// reopened) holds the head by the new claim. Before, the new claim was
// the stale one's activity: the stale one came back to life, won the
// tie-break, and the new one was the loser the pool deletes, leaving the
// stale claim alone, which another pool took over beside the session
// (TestSim: "#30 at pr-30-1: session 3 started while another ran there";
// this test: Losers = [comment 2]).
func TestANewClaimDoesNotReviveAStaleOne(t *testing.T) {
	v := View{HeadSHA: "head", Trusted: []string{"bot"}, TTL: 30 * time.Minute, Now: t0.Add(2 * time.Hour),
		Comments: []forge.Comment{
			claimComment(1, "bot", "me", "head", t0),
			claimComment(2, "bot", "me", "head", t0.Add(2*time.Hour)),
		}}
	if losers := Losers(v, "me"); len(losers) != 0 {
		t.Fatalf("Losers = %+v, want none: the new claim holds the head", losers)
	}
	if verdict, win := Judge(v, "them"); verdict != forge.ClaimTaken || win.CommentID != 2 {
		t.Errorf("another pool judges %s by comment %d, want taken by comment 2", verdict, win.CommentID)
	}
}

// TestAPoolsNoteDoesNotReviveAStaleClaim: the pools of a repository share
// one account, so a diagnostic or a hold note any of them posts is a
// later comment by a claim's author; it is no session's activity and keeps
// no claim alive. Revived, the stale claim of a pool whose session ended
// long ago won the tie-break again, and that pool started a fixer beside
// the session of the pool that had taken the head over (TestSim: "#14 at
// pr-14-1: session 4 started while another ran there").
func TestAPoolsNoteDoesNotReviveAStaleClaim(t *testing.T) {
	// The claim's life ends at t0+30m; a note at t0+20m would keep it
	// alive to t0+50m.
	judge := func(body string) []Claim {
		later := forge.Comment{ID: 2, Author: "bot", Created: t0.Add(20 * time.Minute), Updated: t0.Add(20 * time.Minute), Body: body}
		return Live(View{HeadSHA: "head", Trusted: []string{"bot"}, TTL: 30 * time.Minute, Now: t0.Add(45 * time.Minute),
			Comments: []forge.Comment{claimComment(1, "bot", "me", "head", t0), later}})
	}
	for _, kind := range []string{forge.MarkRetry, forge.MarkBlocked, forge.MarkNoReview, forge.MarkConflict, forge.MarkWithheld, forge.MarkTrain} {
		if live := judge("a pool's note\n\n" + forge.Marker(kind, map[string]string{"head": "head"})); len(live) != 0 {
			t.Errorf("%s note: live claims %+v, want none", kind, live)
		}
	}
	if live := judge("the session answers an item"); len(live) != 1 {
		t.Errorf("a session's comment: live claims %+v, want the claim", live)
	}
}

// TestAStaleClaimStaysStale: activity extends a claim's life only while it
// lives. A review a human files an hour after the claim went stale revives
// it no more: revived, the stale claim of a pool whose fixer ended long ago
// had the lowest id again, and that pool started a fixer beside the one of
// the pool that had claimed the head since (TestSim seed 2: "#55 at
// pr-55-1: session 6 started while another ran there"). A review while it
// lives extends it.
func TestAStaleClaimStaysStale(t *testing.T) {
	review := func(at time.Time) forge.Review {
		return forge.Review{ID: 9, Author: "alice", State: forge.ReviewApproved, CommitID: "head", Submitted: at}
	}
	v := View{HeadSHA: "head", Trusted: []string{"bot"}, TTL: 30 * time.Minute, Now: t0.Add(2*time.Hour + time.Minute),
		Comments: []forge.Comment{claimComment(1, "bot", "me", "head", t0)},
		Reviews:  []forge.Review{review(t0.Add(2 * time.Hour))}}
	if live := Live(v); len(live) != 0 {
		t.Errorf("a review after the claim went stale: live %+v, want none", live)
	}
	v.Reviews, v.Now = []forge.Review{review(t0.Add(20 * time.Minute))}, t0.Add(45*time.Minute)
	if live := Live(v); len(live) != 1 {
		t.Errorf("a review while the claim lived: live %+v, want the claim", live)
	}
}
