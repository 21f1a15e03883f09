package pool

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"pool/forge"
	"pool/lifecycle"
	"pool/store"
	"pool/texts"
)

// TestPoolsOfOneRepositoryShareTheDiagnosticPause: two pools serve one
// repository; an approved PR whose check stays pending gets the
// diagnostics one pool would post, not one series per pool (the
// simulation found three pools posting theirs a minute apart).
func TestPoolsOfOneRepositoryShareTheDiagnosticPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge(1)
		f.now = time.Now
		f.statuses[f.prs[1].HeadSHA] = []forge.Status{{ID: 1, Context: "ci", State: "pending"}}
		f.review(1, "reviewer", forge.ReviewApproved)
		ctx, cancel := context.WithCancel(context.Background())
		startTwoPools(t, ctx, f, 7*time.Second, func(string) *fakeAgent { return newFakeAgent(approver(f, time.Minute)) }) // cycles not in step
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
		f.review(1, "reviewer", forge.ReviewApproved)
		ctx, cancel := context.WithCancel(context.Background())
		startTwoPools(t, ctx, f, 0, func(string) *fakeAgent { return newFakeAgent(approver(f, time.Minute)) })
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

// TestARetriedSessionRenewsItsClaim: a pool whose sessions on a head left
// no review starts the next one under the claim it posted for the first;
// the claim lives a whole claim's life from then, so no other pool takes
// the head over while the session runs (the simulation: a third session
// began 22 minutes into the claim's 30 and another pool started a fourth
// 8 minutes later).
func TestARetriedSessionRenewsItsClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge(1)
		f.now = time.Now
		var mu sync.Mutex
		sessions := map[string]int{}
		lengths := []time.Duration{14 * time.Minute, 7 * time.Minute, 44 * time.Minute}
		behave := func(id string) func(int) (time.Duration, func(), string) {
			return func(pr int) (time.Duration, func(), string) {
				mu.Lock()
				defer mu.Unlock()
				sessions[id]++
				if id == "pool-1" && sessions[id] < len(lengths) {
					return lengths[sessions[id]-1], nil, "I could not finish."
				}
				return lengths[len(lengths)-1], func() { f.review(pr, "reviewer", forge.ReviewApproved) }, approvedReply
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		startTwoPools(t, ctx, f, 7*time.Second, func(id string) *fakeAgent { return newFakeAgent(behave(id)) }) // pool-1 claims first
		time.Sleep(90 * time.Minute)
		cancel()
		mu.Lock()
		defer mu.Unlock()
		if sessions["pool-1"] != 3 || sessions["pool-2"] != 0 {
			t.Errorf("sessions on the head: pool-1 %d, pool-2 %d; want 3 and 0: %v", sessions["pool-1"], sessions["pool-2"], f.Effects())
		}
	})
}

// TestAnAdoptedSessionRenewsItsClaim: a pool restarted 14 minutes after
// it claimed a head and started a session adopts the session and renews
// its claim at once: the first renewal of the follower came half a claim's
// life after the adoption, when the claim had gone stale, and the pool
// claimed the head a second time (the simulation: 2 claims on one head).
func TestAnAdoptedSessionRenewsItsClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge(1)
		f.now = time.Now
		a := newFakeAgent(approver(f, 40*time.Minute))
		state := store.NewMemory()
		cfg := testConfig(1)
		cfg.PollInterval, cfg.StatusInterval, cfg.IdleExit, cfg.ShutdownTimeout, cfg.SessionTimeout = 30*time.Second, 10*time.Second, 0, 30*time.Second, time.Hour
		run := func(d time.Duration) {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			p, err := New(ctx, cfg, Deps{Forge: f, Agent: a, Store: state})
			if err != nil {
				t.Fatal(err)
			}
			p.Run(ctx)
		}
		run(5 * time.Minute)
		time.Sleep(14 * time.Minute)
		run(40 * time.Minute)
		if c := f.claimsOn(1); c != 1 || !f.isMerged(1) {
			t.Errorf("%d claims on the head, merged %v; want 1 claim and merged: %v", c, f.isMerged(1), f.Effects())
		}
	})
}

// startTwoPools runs pools "pool-1" and "pool-2" of one repository on f
// until ctx ends, each with a store of its own and the agent agentFor
// gives its instance, the second starting after stagger.
func startTwoPools(t *testing.T, ctx context.Context, f *fakeForge, stagger time.Duration, agentFor func(instance string) *fakeAgent) {
	t.Helper()
	for i := 1; i <= 2; i++ {
		cfg := testConfig(1)
		cfg.PollInterval, cfg.StatusInterval, cfg.IdleExit, cfg.ShutdownTimeout, cfg.SessionTimeout = 30*time.Second, 10*time.Second, 0, 30*time.Second, time.Hour
		cfg.InstanceID = fmt.Sprintf("pool-%d", i)
		p, err := New(ctx, cfg, Deps{Forge: f, Agent: agentFor(cfg.InstanceID), Store: store.NewMemory()})
		if err != nil {
			t.Fatal(err)
		}
		go p.Run(ctx)
		time.Sleep(stagger)
	}
}

// TestAPoolCountsTheOtherPoolsDiagnosticsOfTheHead: three diagnostics of
// the head stand on the PR, 40, 20 and 8 minutes old, posted by the other
// pools of the repository; this pool's own track has counted one. The
// fourth is due 40 minutes after the third, whoever posts it: the pool
// posts none now (TestSim: seed 6 "#45 at pr-45-1: diagnostic 4 after
// 8m27s, want at least 10m0s", seed 4 "#24 at pr-24-1: diagnostic 4 after
// 8m58s"). Had the pool first seen another head since they were posted
// (the head pushed away and back), they belong to an earlier wait: it
// posts its own.
func TestAPoolCountsTheOtherPoolsDiagnosticsOfTheHead(t *testing.T) {
	for _, c := range []struct {
		name   string
		before time.Duration // how long ago the pool first saw the head before this one
		notes  int
	}{{"same wait", time.Hour, 0}, {"an earlier wait", 5 * time.Minute, 1}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeForge(1)
				f.now = time.Now
				cfg := testConfig(1)
				cfg.PollInterval = 30 * time.Second
				ctx := context.Background()
				p, err := New(ctx, cfg, Deps{Forge: f, Agent: newFakeAgent(nil)})
				if err != nil {
					t.Fatal(err)
				}
				head := f.prs[1].HeadSHA
				for _, age := range []time.Duration{40, 20, 8} {
					f.nextID++
					f.comments[1] = append(f.comments[1], forge.Comment{ID: f.nextID, Author: f.me, Created: time.Now().Add(-age * time.Minute),
						Body: texts.Sign(texts.DiagnosticBody(0, "pending", "checks pending", head))})
				}
				tr := lifecycle.Track{HeadSHA: head, HeadSeen: time.Now().Add(-time.Minute), HeadBefore: time.Now().Add(-c.before), Diagnostics: 1}
				if err := p.diagnose(ctx, 1, tr, "checks pending"); err != nil {
					t.Fatal(err)
				}
				if diags := effectsWith(f, "#1: comment Merge retry"); len(diags) != c.notes {
					t.Errorf("diagnostics posted %v, want %d", diags, c.notes)
				}
			})
		})
	}
}

// TestACopyOfADiagnosticIsTakenBack: two pools of one account posted the
// same diagnostic at once, and the one that posted second was killed before
// its read-back, which takes back a copy that is not the first. Its copy
// stood beside the first for good: the relaunched pool, as any other, found
// a recent diagnostic and posted nothing. Diagnostics of one head are at
// least the first pause apart by the pools' clocks, so the pool takes back
// each of its diagnostics of the head posted sooner than half of it after
// the one before, and posts none. Two diagnostics a pause apart both stay,
// and so do two a little less than a pause apart (a pool whose clock runs
// ahead of the forge's).
func TestACopyOfADiagnosticIsTakenBack(t *testing.T) {
	for _, c := range []struct {
		name  string
		apart time.Duration
		left  int
	}{{"posted at once", 10 * time.Second, 1}, {"a pause apart", 6 * time.Minute, 2}, {"a clock ahead", 4 * time.Minute, 2}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeForge(1)
			f.now = time.Now
			cfg := testConfig(1)
			cfg.PollInterval = 30 * time.Second // the first pause: 5 minutes
			ctx := context.Background()
			p, err := New(ctx, cfg, Deps{Forge: f, Agent: newFakeAgent(nil)})
			if err != nil {
				t.Fatal(err)
			}
			head := f.prs[1].HeadSHA
			first := time.Now().Add(-8 * time.Minute) // recent: the next is due 10 minutes after it
			for _, at := range []time.Time{first, first.Add(c.apart)} {
				f.nextID++
				f.comments[1] = append(f.comments[1], forge.Comment{ID: f.nextID, Author: f.me, Created: at,
					Body: texts.Sign(texts.DiagnosticBody(10, "pending", "checks pending", head))})
			}
			tr := lifecycle.Track{HeadSHA: head, HeadSeen: first.Add(-time.Hour), HeadBefore: first.Add(-2 * time.Hour), Diagnostics: 1}
			if err := p.diagnose(ctx, 1, tr, "checks pending"); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			left := len(f.comments[1])
			f.mu.Unlock()
			if left != c.left {
				t.Errorf("%d diagnostics on the PR, want %d: %v", left, c.left, f.Effects())
			}
		})
	}
}
