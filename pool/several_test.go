package pool

import (
	"context"
	"slices"
	"testing"
	"time"

	"pool/lifecycle"
	"pool/ops"
	"pool/slots"
	"pool/statuspage"
)

// TestStatusOfSeveralRepositories: the status page's data names each PR's
// repository and counts each repository's PRs.
func TestStatusOfSeveralRepositories(t *testing.T) {
	ctx := context.Background()
	slots := slots.New(2, 0)
	var each []statuspage.Status
	for _, repo := range []string{"o/b", "o/a"} {
		cfg := testConfig(2)
		cfg.Owner, cfg.Name = "o", repo[2:]
		f := newFakeForge(1, 2)
		p, err := New(ctx, cfg, Deps{Forge: f, Agent: newFakeAgent(approver(f, time.Millisecond)), Slots: slots})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 2} {
			p.book.Decided(*f.prs[n], lifecycle.Track{State: lifecycle.Unreviewed}, lifecycle.Action{Kind: lifecycle.Review}, time.Now())
			p.tracks[n] = lifecycle.Track{State: lifecycle.Unreviewed} // a fixture: no pool runs
		}
		st := p.Status()
		st.Repo = repo
		each = append(each, st)
	}
	st := ops.Combine(statuspage.Status{Workers: 2}, each)
	if len(st.Repos) != 2 || st.Repos[0].Repo != "o/a" || st.Repos[0].Open != 2 || st.Total().Open != 4 {
		t.Errorf("repositories %+v", st.Repos)
	}
	var names []string
	for _, pr := range st.PRs {
		names = append(names, statuspage.PRName(pr.Repo, pr.Number))
	}
	if want := []string{"o/a#1", "o/a#2", "o/b#1", "o/b#2"}; !slices.Equal(names, want) {
		t.Errorf("PRs %v, want %v", names, want)
	}
}
