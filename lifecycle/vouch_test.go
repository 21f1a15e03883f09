package lifecycle

import (
	"testing"

	"pool/forge"
)

// TestOnlySessionsApprovalsCount: with ReviewRule.Sessions, an official
// approval on the head counts only when a session of the pool filed it
// (Vouched) or a listed human did. Another one is noted once per head and
// the PR gets a session of its own; never a merge.
func TestOnlySessionsApprovalsCount(t *testing.T) {
	p := policy
	p.Rule = ReviewRule{Sessions: true, Humans: []string{"carol"}}
	unvouched := review(forge.ReviewApproved)
	vouched := unvouched
	vouched.Vouched = true
	human := unvouched
	human.Author = "carol"
	for _, tt := range []struct {
		name    string
		reviews []forge.Review
		noted   string
		want    Kind
	}{
		{"a session's approval merges", []forge.Review{vouched}, "", Merge},
		{"a listed human's approval merges", []forge.Review{human}, "", Merge},
		{"an approval no session filed is noted", []forge.Review{unvouched}, "", NoteUnvouched},
		{"noted once per head, then reviewed", []forge.Review{unvouched}, "h1", Review},
		{"noted for another head: noted again", []forge.Review{unvouched}, "h0", NoteUnvouched},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := open("h1")
			o.Reviews = tt.reviews
			_, act := Decide(p, Track{NotedUnvouched: tt.noted}, o)
			if act.Kind != tt.want {
				t.Errorf("action %s (%s), want %s", act.Kind, act.Reason, tt.want)
			}
			if act.Kind == NoteUnvouched && act.Marks.UnvouchedNoted != "h1" {
				t.Errorf("marks %+v, want the head noted", act.Marks)
			}
		})
	}
}
