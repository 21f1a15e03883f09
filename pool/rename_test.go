package pool

import (
	"context"
	"testing"
	"time"
)

// TestARenamedDefaultBranchIsFollowed: the default branch is renamed from
// main to trunk while the pool runs (the forge moves the open PRs onto
// trunk). The next full listing reads the new name, and the PR into trunk
// is reviewed and merged without a restart.
func TestARenamedDefaultBranchIsFollowed(t *testing.T) {
	f := newFakeForge(1, 2)
	f.prs[2].BaseRef = "trunk" // into trunk, which is not the default branch yet
	cfg := testConfig(1)
	cfg.IdleExit = 2 * FullListEvery
	rep := runPoolWith(t, cfg, f, newFakeAgent(approver(f, time.Millisecond)), func(ctx context.Context, p *Pool) {
		waitFor(ctx, func() bool { return f.isMerged(1) })
		f.mu.Lock()
		f.defaultBranch = "trunk"
		f.mu.Unlock()
	})
	if !f.isMerged(2) || rep.Merged != 2 {
		t.Errorf("the PR into the renamed default branch: merged %v, report %d merged; want merged, 2", f.isMerged(2), rep.Merged)
	}
}
