package pool

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"pool/forge"
	"pool/forgejo"
	"pool/store"
)

// TestPoolsOfOneRepositoryShareTheDiagnosticPause: two pools serve one
// repository; an approved PR whose check stays pending gets the
// diagnostics one pool would post, not one series per pool (the
// simulation found three pools posting theirs a minute apart).
func TestPoolsOfOneRepositoryShareTheDiagnosticPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge(1)
		f.now = time.Now
		f.statuses[f.prs[1].HeadSHA] = []forgejo.Status{{ID: 1, Context: "ci", State: "pending"}}
		f.review(1, "reviewer", forgejo.ReviewApproved)
		ctx, cancel := context.WithCancel(context.Background())
		for i := 1; i <= 2; i++ {
			cfg := testConfig(1)
			cfg.PollInterval, cfg.StatusInterval, cfg.IdleExit, cfg.ShutdownTimeout, cfg.SessionTimeout = 30*time.Second, 10*time.Second, 0, 30*time.Second, time.Hour
			cfg.InstanceID = fmt.Sprintf("pool-%d", i)
			p, err := New(ctx, cfg, Deps{Forge: f, Agent: newFakeAgent(approver(f, time.Minute)), Store: store.NewMemory()})
			if err != nil {
				t.Fatal(err)
			}
			go p.Run(ctx)
			time.Sleep(7 * time.Second) // the pools' cycles are not in step
		}
		time.Sleep(2 * time.Hour)
		cancel()
		// One pool waits 5, 10, 20 and 40 minutes: 4 diagnostics in two hours.
		if diags := effectsWith(f, "#1: comment Merge retry"); len(diags) > 5 {
			t.Errorf("%d diagnostics in two hours from two pools, want at most 5 (one pool's)", len(diags))
		}
	})
}

// TestPoolsOfOneRepositoryNoteOnce: two pools whose cycles run at the
// same moment find no hold note on an approved, green WIP PR and both post
// one; the forge keeps one of them.
func TestPoolsOfOneRepositoryNoteOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge(1)
		f.now = time.Now
		f.prs[1].Draft = true
		f.commentDelay = time.Second // a real forge takes its time: both pools read before either posts
		f.review(1, "reviewer", forgejo.ReviewApproved)
		ctx, cancel := context.WithCancel(context.Background())
		for i := 1; i <= 2; i++ {
			cfg := testConfig(1)
			cfg.PollInterval, cfg.StatusInterval, cfg.IdleExit, cfg.ShutdownTimeout, cfg.SessionTimeout = 30*time.Second, 10*time.Second, 0, 30*time.Second, time.Hour
			cfg.InstanceID = fmt.Sprintf("pool-%d", i)
			p, err := New(ctx, cfg, Deps{Forge: f, Agent: newFakeAgent(approver(f, time.Minute)), Store: store.NewMemory()})
			if err != nil {
				t.Fatal(err)
			}
			go p.Run(ctx)
		}
		time.Sleep(10 * time.Minute)
		cancel()
		f.mu.Lock()
		defer f.mu.Unlock()
		notes := 0
		for _, c := range f.comments[1] {
			if forge.ParseMarker(c.Body, forge.MarkBlocked, &struct{}{}) {
				notes++
			}
		}
		if notes != 1 {
			t.Errorf("%d hold notes on the WIP PR, want 1: %v", notes, f.effects)
		}
	})
}
