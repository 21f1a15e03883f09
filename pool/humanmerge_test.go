package pool

import (
	"context"
	"strings"
	"testing"
	"time"

	"pool/forge"
)

// TestAHumansMergeIsNotThePools: the pool reviews two PRs that close
// issues; #1's checks stay pending and a human merges it, #2's pass and the
// pool merges it. The report counts one merge of the pool's and one of a
// human's, and only the pool's merge of a PR that waited is announced.
func TestAHumansMergeIsNotThePools(t *testing.T) {
	f := newFakeForge(1, 2)
	f.prs[1].Body, f.prs[2].Body = "Fixes #5", "Fixes #6"
	f.statuses[f.prs[1].HeadSHA] = []forge.Status{{ID: 1, Context: "ci", State: "pending"}}
	f.statuses[f.prs[2].HeadSHA] = []forge.Status{{ID: 2, Context: "ci", State: "pending"}}
	a := newFakeAgent(approver(f, time.Millisecond))
	rep := runPoolWith(t, testConfig(2), f, a, func(ctx context.Context, p *Pool) {
		waitFor(ctx, func() bool { return p.track(1).WaitedForChecks && p.track(2).WaitedForChecks })
		f.mu.Lock()
		defer f.mu.Unlock()
		f.prs[1].MergedBy = "alice"
		f.setMerged(1)
		f.statuses[f.prs[2].HeadSHA] = []forge.Status{{ID: 3, Context: "ci", State: "success"}}
	})
	if rep.Merged != 1 || rep.MergedByHumans != 1 {
		t.Errorf("report: %d merged by the pool, %d by humans; want 1 and 1", rep.Merged, rep.MergedByHumans)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.comments[5]) != 0 {
		t.Errorf("the human's merge of #1 was announced on #5: %q", f.comments[5][0].Body)
	}
	if len(f.comments[6]) != 1 || !strings.Contains(f.comments[6][0].Body, "#2 has been merged") {
		t.Errorf("the pool's merge of #2 was not announced once on #6: %v", f.comments[6])
	}
}
