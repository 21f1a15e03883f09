package lifecycle

import (
	"reflect"
	"testing"

	"pool/forge"
)

func TestReviewRuleCounts(t *testing.T) {
	base := forge.Review{ID: 5, Author: "bob", State: forge.ReviewApproved, CommitID: "head", Official: true}
	tests := []struct {
		name string
		rule ReviewRule
		edit func(r *forge.Review)
		want bool
	}{
		{name: "official approval on the head counts", want: true},
		{name: "official request for changes counts", edit: func(r *forge.Review) { r.State = forge.ReviewRequestChanges }, want: true},
		{name: "unofficial approval does not", edit: func(r *forge.Review) { r.Official = false }},
		{name: "the PR author's own approval does not", edit: func(r *forge.Review) { r.Author = "Alice" }},
		{name: "dismissed does not", edit: func(r *forge.Review) { r.Dismissed = true }},
		{name: "stale does not", edit: func(r *forge.Review) { r.Stale = true }},
		{name: "an older commit does not", edit: func(r *forge.Review) { r.CommitID = "old" }},
		{name: "a pending draft does not", edit: func(r *forge.Review) { r.State = "PENDING" }},
		{name: "a review request does not", edit: func(r *forge.Review) { r.State = forge.ReviewRequested }},
		{name: "a comment-only review by anyone does not", edit: func(r *forge.Review) { r.State = forge.ReviewComment }},
		{name: "a listed reviewer's comment-only review counts", rule: ReviewRule{Reviewers: []string{"BOB"}},
			edit: func(r *forge.Review) { r.State, r.Official = forge.ReviewComment, false }, want: true},
		{name: "reviewers narrow: an official approval by an unlisted account does not count",
			rule: ReviewRule{Reviewers: []string{"carol"}}},
		{name: "reviewers never widen to unofficial accounts", rule: ReviewRule{Reviewers: []string{"bob"}},
			edit: func(r *forge.Review) { r.Official = false }},
		{name: "allow_unofficial widens for listed accounts", rule: ReviewRule{Reviewers: []string{"bob"}, AllowUnofficial: true},
			edit: func(r *forge.Review) { r.Official = false }, want: true},
		{name: "allow_unofficial without a list widens nothing", rule: ReviewRule{AllowUnofficial: true},
			edit: func(r *forge.Review) { r.Official = false }},
		{name: "whitelisted (official) listed reviewer counts", rule: ReviewRule{Reviewers: []string{"bob"}}, want: true},
		{name: "a review with no author does not", edit: func(r *forge.Review) { r.Author = "" }},
		{name: "a review requested from a team does not, even for an official listed team", rule: ReviewRule{Reviewers: []string{"core"}, AllowUnofficial: true},
			edit: func(r *forge.Review) { r.Author, r.Team, r.State = "", "core", forge.ReviewRequested }},
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
	rv := func(id int64, author, state string, official bool) forge.Review {
		return forge.Review{ID: id, Author: author, State: state, CommitID: "head", Official: official}
	}
	tests := []struct {
		name    string
		reviews []forge.Review
		want    Verdict
	}{
		{name: "nothing", want: Verdict{}},
		{name: "one approval", reviews: []forge.Review{rv(1, "bob", forge.ReviewApproved, true)},
			want: Verdict{State: forge.ReviewApproved, Approvers: []string{"bob"}}},
		{name: "a later approval by the same account replaces its request for changes",
			reviews: []forge.Review{rv(1, "bob", forge.ReviewRequestChanges, true), rv(2, "bob", forge.ReviewApproved, true)},
			want:    Verdict{State: forge.ReviewApproved, Approvers: []string{"bob"}}},
		{name: "another account's request for changes wins over an approval",
			reviews: []forge.Review{rv(1, "bob", forge.ReviewApproved, true), rv(2, "carol", forge.ReviewRequestChanges, true)},
			want:    Verdict{State: forge.ReviewRequestChanges, Approvers: []string{"bob"}}},
		{name: "an outsider's approval is listed as uncounted", reviews: []forge.Review{rv(1, "mallory", forge.ReviewApproved, false)},
			want: Verdict{Uncounted: []string{"mallory"}}},
		{name: "an outsider's request for changes is ignored",
			reviews: []forge.Review{rv(1, "bob", forge.ReviewApproved, true), rv(2, "mallory", forge.ReviewRequestChanges, false)},
			want:    Verdict{State: forge.ReviewApproved, Approvers: []string{"bob"}}},
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
	reviews := []forge.Review{
		{Author: "bob", State: forge.ReviewApproved, CommitID: "old", Official: true},
		{Author: "mallory", State: forge.ReviewApproved, CommitID: "head"},
		{Author: "alice", State: forge.ReviewApproved, CommitID: "head", Official: true},
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
	teamRequest := forge.Review{ID: 3, Team: "core", State: forge.ReviewRequested, CommitID: "head", Official: true}
	got := ReviewRule{}.Voices("pool-bot", "alice", []forge.Review{teamRequest})
	if want := map[string]bool{"pool-bot": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("Voices = %v, want only the pool's own %v", got, want)
	}
}
