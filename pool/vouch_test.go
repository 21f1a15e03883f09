package pool

import (
	"testing"

	"pool/forge"
	"pool/sessionmark"
)

// TestVouchChecksTheMark: a review is vouched for only when its mark is the
// one the pool made for a session of this PR at the review's commit, and
// only the first verdict with a mark: a copy of it on a later approval (a
// stolen token turning the session's request for changes around) is not.
func TestVouchChecksTheMark(t *testing.T) {
	cfg := testConfig(1)
	p := &Pool{cfg: cfg, marks: sessionmark.NewKey(cfg.Token)}
	mark := p.marks.Mark(cfg.Repo(), 3, "h1", "ses_1")
	other := sessionmark.NewKey("another pool's token").Mark(cfg.Repo(), 3, "h1", "ses_1")
	reviews := []forge.Review{
		{ID: 1, State: forge.ReviewComment, CommitID: "h1", Mark: mark},
		{ID: 2, State: forge.ReviewRequestChanges, CommitID: "h1", Mark: mark},
		{ID: 3, State: forge.ReviewApproved, CommitID: "h1", Mark: mark},
		{ID: 4, State: forge.ReviewApproved, CommitID: "h2", Mark: mark},
		{ID: 5, State: forge.ReviewApproved, CommitID: "h1", Mark: other},
		{ID: 6, State: forge.ReviewApproved, CommitID: "h1"},
	}
	got := p.vouch(3, reviews)
	want := []bool{true, true, false, false, false, false}
	for i, r := range got {
		if r.Vouched != want[i] {
			t.Errorf("review %d vouched %v, want %v", r.ID, r.Vouched, want[i])
		}
	}
	if p.vouch(4, []forge.Review{{ID: 1, State: forge.ReviewApproved, CommitID: "h1", Mark: mark}})[0].Vouched {
		t.Error("a mark for #3 vouched for a review of #4")
	}
}
