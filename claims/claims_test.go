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
