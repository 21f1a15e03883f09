package pool

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"pool/lifecycle"
	"pool/ops"
)

func TestReportsOfSeveralRepositoriesAdd(t *testing.T) {
	a := Report{Repo: "acme/b", InstanceID: "i-a", Reviewed: 8, Merged: 7, Retrying: 1, PendingMerge: []int{3}, Cycles: 20, PeakSlots: 2}
	b := Report{Repo: "acme/a", InstanceID: "i-b", Reviewed: 1, Merged: 1, Cycles: 5, PeakSlots: 1}
	got := Report{}.Add(a).Add(b)
	if got.InstanceID != "i-a" || got.Reviewed != 9 || got.Merged != 8 || got.Retrying != 1 || got.Cycles != 25 ||
		got.PeakSlots != 2 || !slices.Equal(got.PendingMerge, []int{3}) || len(got.Repos) != 2 || got.Repos[0].Repo != "acme/a" {
		t.Errorf("sum = %+v", got)
	}
	var out strings.Builder
	if err := got.Write(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"TOTAL_PRS_REVIEWED: 9\n", "  - Approved and merged: 8\n", "PENDING_MERGE_PRS: [acme/b#3]\n",
		"BY_REPOSITORY:\n  - acme/a: reviewed 1, merged 1,", "\n  - acme/b: reviewed 8, merged 7,"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestReportOfOneRepositoryIsAsBefore(t *testing.T) {
	var out strings.Builder
	if err := (Report{InstanceID: "i", Reviewed: 2, Merged: 1, PendingMerge: []int{4}}).Write(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "BY_REPOSITORY") || !strings.Contains(out.String(), "PENDING_MERGE_PRS: [#4]\n") {
		t.Errorf("report:\n%s", out.String())
	}
}

// TestStatusOfSeveralRepositories: the status page's data names each PR's
// repository and counts each repository's PRs.
func TestStatusOfSeveralRepositories(t *testing.T) {
	ctx := context.Background()
	slots := NewSlots(2, 0)
	var each []ops.Status
	for _, repo := range []string{"o/b", "o/a"} {
		cfg := testConfig(2)
		cfg.Owner, cfg.Name = "o", repo[2:]
		f := newFakeForge(1, 2)
		p, err := New(ctx, cfg, Deps{Forge: f, Agent: newFakeAgent(approver(f, time.Millisecond)), Slots: slots})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 2} {
			p.book.decided(*f.prs[n], lifecycle.Track{State: lifecycle.Unreviewed}, lifecycle.Action{Kind: lifecycle.Review}, time.Now())
			p.tracks[n] = lifecycle.Track{State: lifecycle.Unreviewed} // a fixture: no pool runs
		}
		st := p.Status()
		st.Repo = repo
		each = append(each, st)
	}
	st := ops.Combine(ops.Status{Workers: 2}, each)
	if len(st.Repos) != 2 || st.Repos[0].Repo != "o/a" || st.Repos[0].Open != 2 || st.Total().Open != 4 {
		t.Errorf("repositories %+v", st.Repos)
	}
	var names []string
	for _, pr := range st.PRs {
		names = append(names, ops.PRName(pr.Repo, pr.Number))
	}
	if want := []string{"o/a#1", "o/a#2", "o/b#1", "o/b#2"}; !slices.Equal(names, want) {
		t.Errorf("PRs %v, want %v", names, want)
	}
}
