package lifecycle

import (
	"reflect"
	"testing"

	"pool/forgejo"
)

func TestReviewRuleCounts(t *testing.T) {
	base := forgejo.Review{ID: 5, Author: "bob", State: forgejo.ReviewApproved, CommitID: "head", Official: true}
	tests := []struct {
		name string
		rule ReviewRule
		edit func(r *forgejo.Review)
		want bool
	}{
		{name: "official approval on the head counts", want: true},
		{name: "official request for changes counts", edit: func(r *forgejo.Review) { r.State = forgejo.ReviewRequestChanges }, want: true},
		{name: "unofficial approval does not", edit: func(r *forgejo.Review) { r.Official = false }},
		{name: "the PR author's own approval does not", edit: func(r *forgejo.Review) { r.Author = "Alice" }},
		{name: "dismissed does not", edit: func(r *forgejo.Review) { r.Dismissed = true }},
		{name: "stale does not", edit: func(r *forgejo.Review) { r.Stale = true }},
		{name: "an older commit does not", edit: func(r *forgejo.Review) { r.CommitID = "old" }},
		{name: "a pending draft does not", edit: func(r *forgejo.Review) { r.State = "PENDING" }},
		{name: "a review request does not", edit: func(r *forgejo.Review) { r.State = forgejo.ReviewRequested }},
		{name: "a comment-only review by anyone does not", edit: func(r *forgejo.Review) { r.State = forgejo.ReviewComment }},
		{name: "a listed reviewer's comment-only review counts", rule: ReviewRule{Reviewers: []string{"BOB"}},
			edit: func(r *forgejo.Review) { r.State, r.Official = forgejo.ReviewComment, false }, want: true},
		{name: "reviewers narrow: an official approval by an unlisted account does not count",
			rule: ReviewRule{Reviewers: []string{"carol"}}},
		{name: "reviewers never widen to unofficial accounts", rule: ReviewRule{Reviewers: []string{"bob"}},
			edit: func(r *forgejo.Review) { r.Official = false }},
		{name: "allow_unofficial widens for listed accounts", rule: ReviewRule{Reviewers: []string{"bob"}, AllowUnofficial: true},
			edit: func(r *forgejo.Review) { r.Official = false }, want: true},
		{name: "allow_unofficial without a list widens nothing", rule: ReviewRule{AllowUnofficial: true},
			edit: func(r *forgejo.Review) { r.Official = false }},
		{name: "whitelisted (official) listed reviewer counts", rule: ReviewRule{Reviewers: []string{"bob"}}, want: true},
		{name: "a review with no author does not", edit: func(r *forgejo.Review) { r.Author = "" }},
		{name: "a review requested from a team does not, even for an official listed team", rule: ReviewRule{Reviewers: []string{"core"}, AllowUnofficial: true},
			edit: func(r *forgejo.Review) { r.Author, r.Team, r.State = "", "core", forgejo.ReviewRequested }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			if tt.edit != nil {
				tt.edit(&r)
			}
			if got := tt.rule.Counts("alice", "head", r); got != tt.want {
				t.Errorf("Counts = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHeadVerdict(t *testing.T) {
	rv := func(id int64, author, state string, official bool) forgejo.Review {
		return forgejo.Review{ID: id, Author: author, State: state, CommitID: "head", Official: official}
	}
	tests := []struct {
		name    string
		reviews []forgejo.Review
		want    Verdict
	}{
		{name: "nothing", want: Verdict{}},
		{name: "one approval", reviews: []forgejo.Review{rv(1, "bob", forgejo.ReviewApproved, true)},
			want: Verdict{State: forgejo.ReviewApproved, Approvers: []string{"bob"}}},
		{name: "a later approval by the same account replaces its request for changes",
			reviews: []forgejo.Review{rv(1, "bob", forgejo.ReviewRequestChanges, true), rv(2, "bob", forgejo.ReviewApproved, true)},
			want:    Verdict{State: forgejo.ReviewApproved, Approvers: []string{"bob"}}},
		{name: "another account's request for changes wins over an approval",
			reviews: []forgejo.Review{rv(1, "bob", forgejo.ReviewApproved, true), rv(2, "carol", forgejo.ReviewRequestChanges, true)},
			want:    Verdict{State: forgejo.ReviewRequestChanges, Approvers: []string{"bob"}}},
		{name: "an outsider's approval is listed as uncounted", reviews: []forgejo.Review{rv(1, "mallory", forgejo.ReviewApproved, false)},
			want: Verdict{Uncounted: []string{"mallory"}}},
		{name: "an outsider's request for changes is ignored",
			reviews: []forgejo.Review{rv(1, "bob", forgejo.ReviewApproved, true), rv(2, "mallory", forgejo.ReviewRequestChanges, false)},
			want:    Verdict{State: forgejo.ReviewApproved, Approvers: []string{"bob"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ReviewRule{}.HeadVerdict("alice", "head", tt.reviews)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("HeadVerdict = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestVoices(t *testing.T) {
	reviews := []forgejo.Review{
		{Author: "bob", State: forgejo.ReviewApproved, CommitID: "old", Official: true},
		{Author: "mallory", State: forgejo.ReviewApproved, CommitID: "head"},
		{Author: "alice", State: forgejo.ReviewApproved, CommitID: "head", Official: true},
	}
	got := ReviewRule{}.Voices("pool-bot", "alice", reviews)
	want := map[string]bool{"pool-bot": true, "bob": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Voices = %v, want %v (a counted reviewer at any commit, and the pool; not outsiders or the author)", got, want)
	}
}

// TestTeamRequestIsNoVoice: a review requested from a team (no author) never
// makes a voice, so it keeps no claim alive and answers no item.
func TestTeamRequestIsNoVoice(t *testing.T) {
	teamRequest := forgejo.Review{ID: 3, Team: "core", State: forgejo.ReviewRequested, CommitID: "head", Official: true}
	got := ReviewRule{}.Voices("pool-bot", "alice", []forgejo.Review{teamRequest})
	if want := map[string]bool{"pool-bot": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("Voices = %v, want only the pool's own %v", got, want)
	}
}
