package pool

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pool/agent"
	"pool/forge"
)

// slowReviews is a forge whose review listing takes a while.
type slowReviews struct {
	*fakeForge
	delay time.Duration
}

func (f slowReviews) Reviews(ctx context.Context, owner, repo string, n int) ([]forge.Review, error) {
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

// holdNoteFailsOnce is a forge that fails the first post of a note that
// merging is on hold.
type holdNoteFailsOnce struct {
	*fakeForge
	failed atomic.Bool
}

func (f *holdNoteFailsOnce) PostComment(ctx context.Context, owner, repo string, n int, body string) (forge.Comment, error) {
	if strings.HasPrefix(body, "Merging is on hold") && f.failed.CompareAndSwap(false, true) {
		return forge.Comment{}, errors.New("fault injected")
	}
	return f.fakeForge.PostComment(ctx, owner, repo, n, body)
}

// TestAHoldNoteThatFailedIsPostedAgain: the note saying why a PR cannot
// merge is posted on a later cycle when posting it failed, once.
func TestAHoldNoteThatFailedIsPostedAgain(t *testing.T) {
	f := newFakeForge(1)
	f.protection = forge.Protection{Protected: true, UserCanMerge: true, RequiredApprovals: 2}
	forge := &holdNoteFailsOnce{fakeForge: f}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := New(ctx, testConfig(1), Deps{Forge: forge, Agent: newFakeAgent(approver(f, 0))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v, %v", err, ctx.Err())
	}
	if !forge.failed.Load() {
		t.Fatal("no note failed: the test tests nothing")
	}
	if n := len(effectsWith(f, "#1: comment Merging is on hold: needs 2 approvals; has 1")); n != 1 {
		t.Errorf("%d hold notes on the forge after the first post failed; want 1: %v", n, f.Effects())
	}
}
