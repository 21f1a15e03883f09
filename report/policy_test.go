package report

import (
	"context"
	"slices"
	"testing"

	"pool/configs"
	"pool/forge"
	"pool/forgejo"
	"pool/lifecycle"
)

// snapshotForge answers every read with a snapshot's parts.
type snapshotForge struct{ s Snapshot }

func (f snapshotForge) Me(context.Context) (string, error) { return f.s.Self, nil }
func (f snapshotForge) PRDetail(context.Context, string, string, int) (forgejo.PRDetail, error) {
	return f.s.PR, nil
}
func (f snapshotForge) StatusHistory(context.Context, string, string, string) ([]forge.Status, error) {
	return f.s.Statuses, nil
}
func (f snapshotForge) ReviewDetails(context.Context, string, string, int) ([]forgejo.ReviewDetail, error) {
	return f.s.Reviews, nil
}
func (f snapshotForge) InlineComments(context.Context, string, string, int, int64) ([]forgejo.InlineComment, error) {
	return nil, nil
}
func (f snapshotForge) Comments(context.Context, string, string, int) ([]forge.Comment, error) {
	return nil, nil
}
func (f snapshotForge) DefaultBranch(context.Context, string, string) (string, error) {
	return f.s.PR.BaseRef, nil
}
func (f snapshotForge) AutoMergeArmed(context.Context, string, string, int) (bool, error) {
	return false, nil
}
func (f snapshotForge) Protection(context.Context, string, string, string) (forge.Protection, error) {
	return f.s.Protection, nil
}
func (f snapshotForge) OpenDependencies(context.Context, string, string, int) ([]string, error) {
	return nil, nil
}

// TestReportAndTickJudgeByTheSupervisorsSettings: an approved, green,
// mergeable PR that the supervisor would not merge now, because it carries
// the skip label or is behind its base under merge.update always. `pool
// report` must hold it and `pool tick --auto-merge` must not ask for an
// auto-merge; a PR the supervisor would merge is the control.
func TestReportAndTickJudgeByTheSupervisorsSettings(t *testing.T) {
	green := func() Snapshot {
		s := snapshotFixture()
		s.Statuses = []forge.Status{{ID: 1, Context: "ci", State: "success", Created: t0}}
		s.Reviews = []forgejo.ReviewDetail{{Review: forge.Review{ID: 10, Author: "review-bot",
			State: forge.ReviewApproved, CommitID: headA, Official: true, Submitted: t0}}}
		return s
	}
	always := configs.Default()
	always.MergeUpdate = string(lifecycle.UpdateAlways)
	tests := []struct {
		name     string
		edit     func(*Snapshot)
		settings configs.Config
		merges   bool
	}{
		{"may merge", func(*Snapshot) {}, configs.Default(), true},
		{"labelled for humans", func(s *Snapshot) { s.PR.Labels = []string{"Needs Feedback"} }, configs.Default(), false},
		{"behind, update always", func(s *Snapshot) { s.PR.BaseSHA = "3333333333333333333333333333333333333333" }, always, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.settings.Reviewers = []string{"review-bot"}
			s := green()
			tt.edit(&s)
			f := snapshotForge{s: s}
			r, err := Produce(context.Background(), f, s.Target, tt.settings.Policy(), tt.settings.StatusContext, nil)
			if err != nil {
				t.Fatal(err)
			}
			if held := r.MergeHold != ""; held == tt.merges {
				t.Errorf("pool report: merge hold %q; want held %v", r.MergeHold, !tt.merges)
			}
			d, err := tick(context.Background(), f, s.Target, TickOptionsFor(tt.settings.Policy(), tt.settings.StatusContext, true))
			if err != nil {
				t.Fatal(err)
			}
			asks := slices.ContainsFunc(d.Items, func(it forge.Item) bool { return it.Reason == forge.ReasonAutoMergeNotArmed })
			if asks != tt.merges {
				t.Errorf("pool tick: asks for an auto-merge %v, want %v (items %q)", asks, tt.merges, itemSummary(d))
			}
		})
	}
}
