package pool

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"pool/agent"
	"pool/forgejo"
)

// slowReviews is a forge whose review listing takes a while.
type slowReviews struct {
	*fakeForge
	delay time.Duration
}

func (f slowReviews) Reviews(ctx context.Context, owner, repo string, n int) ([]forgejo.Review, error) {
	time.Sleep(f.delay)
	return f.fakeForge.Reviews(ctx, owner, repo, n)
}

// createFailsOnce is an agent server whose first session fails to start.
type createFailsOnce struct {
	*fakeAgent
	failed atomic.Bool
}

func (a *createFailsOnce) CreateSession(ctx context.Context, title, dir string) (agent.Session, error) {
	if a.failed.CompareAndSwap(false, true) {
		return agent.Session{}, errors.New("fault injected")
	}
	return a.fakeAgent.CreateSession(ctx, title, dir)
}

// TestAStaleBackOffDecisionIsDecidedAgain: a PR backing off after a session
// that could not start is decided on reads slower than the back-off, so the
// decision (wait) is stale when it returns. It must be decided again once the
// back-off has ended, not held as a quiet PR until the pool's idle exit.
func TestAStaleBackOffDecisionIsDecidedAgain(t *testing.T) {
	f := newFakeForge(1)
	cfg := testConfig(1) // back-off after one failed start: one poll interval, 20 ms
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a := &createFailsOnce{fakeAgent: newFakeAgent(approver(f, 0))}
	p, err := New(ctx, cfg, Deps{Forge: slowReviews{fakeForge: f, delay: 100 * time.Millisecond}, Agent: a})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Run(ctx)
	if err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v, %v", err, ctx.Err())
	}
	if !a.failed.Load() {
		t.Fatal("the first session start did not fail: the test tests nothing")
	}
	if !f.prs[1].Merged || rep.Merged != 1 {
		t.Errorf("PR #1 merged %v, report %d merged: the pool went idle with the PR waiting on a stale back-off", f.prs[1].Merged, rep.Merged)
	}
}
