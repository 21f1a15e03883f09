package pool

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"pool/clone"
	"pool/forge"
)

// fakeLeases is the forge's train lease of main, shared by the fakeCars of
// pools on one fake forge. Each car a pool pushes (to a train branch or to
// a PR's branch) is checked against it: the lease must name the pool.
type fakeLeases struct {
	mu         sync.Mutex
	commit     string
	holder     string
	n          int
	dropped    int      // leases given back
	takeovers  []string // "<new holder> over <old holder>"
	violations []string // cars pushed by a pool the lease did not name
	formedBy   map[string]int
}

func (l *fakeLeases) check(who, what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder != who {
		l.violations = append(l.violations, fmt.Sprintf("%s pushed %s while the lease named %q", who, what, l.holder))
	}
	if l.formedBy == nil {
		l.formedBy = map[string]int{}
	}
	l.formedBy[who]++
}

// share gives c the train lease of cars and names it its pool's instance.
func (c *fakeCars) share(l *fakeLeases, instance string) *fakeCars {
	c.leases, c.instance = l, instance
	return c
}

func (c *fakeCars) Lease(_ context.Context, base string) (string, string, error) {
	c.leases.mu.Lock()
	defer c.leases.mu.Unlock()
	return c.leases.commit, c.leases.holder, nil
}

func (c *fakeCars) TakeLease(_ context.Context, base, holder, expect string, _ time.Time) (string, error) {
	l := c.leases
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.commit != expect {
		return "", clone.ErrLeaseLost
	}
	if l.holder != "" && l.holder != holder {
		l.takeovers = append(l.takeovers, holder+" over "+l.holder)
	}
	l.n++
	l.commit, l.holder = fakeSHA(fmt.Sprintf("lease-%d", l.n)), holder
	return l.commit, nil
}

func (c *fakeCars) DropLease(_ context.Context, base, held string) error {
	l := c.leases
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.commit != held {
		return clone.ErrLeaseLost
	}
	l.dropped++
	l.commit, l.holder = "", ""
	return nil
}

// runPools runs a pool with trains on over f for each of cars (named by
// their instance) until stop holds.
func runPools(t *testing.T, f *fakeForge, ttl time.Duration, stop func() bool, cars ...*fakeCars) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	runCtx, stopRun := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, c := range cars {
		cfg := testConfig(2)
		cfg.IdleExit, cfg.MergeTrain, cfg.InstanceID, cfg.ClaimTTL = 0, "always", c.instance, ttl
		p, err := New(ctx, cfg, Deps{Forge: f, Agent: newFakeAgent(approver(f, time.Millisecond)), Now: f.now, History: &fakeHistory{}, Cars: c, Log: testLog()})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.Run(runCtx); err != nil {
				t.Errorf("Run %s: %v", c.instance, err)
			}
		}()
	}
	waitFor(ctx, stop)
	stopRun()
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("the pools did not finish: effects %v", f.Effects())
	}
}

// TestTwoPoolsRunOneTrain: two pools with trains on share one forge and
// four approved PRs on main. Every car either pushes, to a train branch or
// to a PR's branch, is pushed while the train lease names that pool: at no
// time do two pools' trains run on the base. Every PR merges.
func TestTwoPoolsRunOneTrain(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3, 4)
	f.ciDelay = 30 * time.Millisecond
	l := &fakeLeases{}
	a, b := newFakeCars(f).share(l, "pool-a"), newFakeCars(f).share(l, "pool-b")
	runPools(t, f, time.Minute, func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) && f.isMerged(4) }, a, b)
	for _, v := range l.violations {
		t.Error(v)
	}
	if len(l.takeovers) != 0 {
		t.Errorf("takeovers %v, want none: both pools lived", l.takeovers)
	}
	t.Logf("cars pushed by pool: %v", l.formedBy)
}

// TestAStaleTrainLeaseIsTakenOver: a pool that died left the train lease
// of main. It holds the train while its commit stays the same for the
// lease TTL; then the live pool takes it over (naming the dead one) and
// lands every PR. No car is pushed before the takeover.
func TestAStaleTrainLeaseIsTakenOver(t *testing.T) {
	f := outdatedForge(true, 1, 2)
	f.ciDelay = 30 * time.Millisecond
	l := &fakeLeases{commit: fakeSHA("lease-of-a-dead-pool"), holder: "dead-pool"}
	a := newFakeCars(f).share(l, "pool-a")
	runPools(t, f, 300*time.Millisecond, func() bool { return f.isMerged(1) && f.isMerged(2) }, a)
	for _, v := range l.violations {
		t.Error(v)
	}
	if len(l.takeovers) != 1 || l.takeovers[0] != "pool-a over dead-pool" {
		t.Errorf("takeovers %v, want pool-a over dead-pool", l.takeovers)
	}
}

// TestALiveTrainLeaseIsNotTakenOver: another pool holds the train lease
// and renews it (a new lease commit) every tenth of the TTL for five
// TTLs, then gives it back. The pool never pushes a car meanwhile, and
// lands both PRs after the give-back.
func TestALiveTrainLeaseIsNotTakenOver(t *testing.T) {
	f := outdatedForge(true, 1, 2)
	f.ciDelay = 30 * time.Millisecond
	ttl := 300 * time.Millisecond
	l := &fakeLeases{}
	other := newFakeCars(f).share(l, "pool-b")
	ctx := context.Background()
	held, _ := other.TakeLease(ctx, "main", "pool-b", "", time.Now())
	go func() {
		for range 50 {
			time.Sleep(ttl / 10)
			held, _ = other.TakeLease(ctx, "main", "pool-b", held, time.Now())
		}
		_ = other.DropLease(ctx, "main", held)
	}()
	a := newFakeCars(f).share(l, "pool-a")
	runPools(t, f, ttl, func() bool { return f.isMerged(1) && f.isMerged(2) }, a)
	for _, v := range l.violations {
		t.Error(v)
	}
	if len(l.takeovers) != 0 {
		t.Errorf("takeovers %v, want none: pool-b renewed its lease", l.takeovers)
	}
}

// TestACarMergedTwiceOnForgejoLands: the merge of PR 2's car merges it,
// but the answer is Forgejo's to a merge sent a second time: 405 with an
// empty message. The pool re-reads the PR before it takes the answer for a
// refusal: the car landed (the cars behind it are not re-formed), and no
// note on PR 2 calls its merge refused.
func TestACarMergedTwiceOnForgejoLands(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	f.ciDelay = 30 * time.Millisecond
	f.mergedTwice[2] = true
	cars := newFakeCars(f)
	runTrain(t, f, cars, func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) })
	for _, c := range f.comments[2] {
		if strings.Contains(c.Body, "on hold") {
			t.Errorf("a note on PR 2, merged: %s", c.Body)
		}
	}
	if cars.formed != 3 {
		t.Errorf("%d cars formed, want 3: PR 2's car landed, none re-formed", cars.formed)
	}
}

// TestAStoppingPoolGivesTheTrainLeaseBack: a pool that holds the train
// lease and stops (here its context ends while the train still has a car
// to land) gives the lease back, so another pool need not wait for it to go
// stale.
func TestAStoppingPoolGivesTheTrainLeaseBack(t *testing.T) {
	f := outdatedForge(true, 1, 2)
	f.ciDelay = time.Hour // the cars never go green: the lease is held when the pool stops
	l := &fakeLeases{}
	a := newFakeCars(f).share(l, "pool-a")
	held := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.holder == "pool-a"
	}
	runPools(t, f, time.Minute, held, a)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 || l.holder != "" || l.commit != "" {
		t.Errorf("after the stop: lease taken %d times, held by %q at %q; want it given back", l.n, l.holder, l.commit)
	}
}

// TestACarTheForgeNeverTestsIsPushedAgain: the forge never shows PR 1's
// front car, pushed to its branch, as a tested head (not mergeable, as
// when its test of the PR does not end; CI run of
// TestTwoPoolsRunOneTrainOnTheForge: pool-b read it again every 30 s until
// "no progress"). After a few reads the train is formed again and the new
// car pushed over the old one; the forge tests that push, and both PRs land
// at their cars, with no note and no second review.
func TestACarTheForgeNeverTestsIsPushedAgain(t *testing.T) {
	f := outdatedForge(true, 1, 2)
	f.ciDelay = 30 * time.Millisecond
	cars := newFakeCars(f)
	cars.untested[1] = 1
	a := runTrain(t, f, cars, func() bool { return f.isMerged(1) && f.isMerged(2) })
	calls := updatesAndMerges(f)
	for _, c := range calls {
		var n int
		var head string
		fmt.Sscanf(c, "#%d: merge at %s", &n, &head)
		if len(f.parents[head]) != 2 || cars.holds[head][len(cars.holds[head])-1] != n {
			t.Errorf("%s: not merged at its car (calls %v)", c, calls)
		}
	}
	for _, n := range []int{1, 2} {
		for _, c := range f.comments[n] {
			if !strings.Contains(c.Body, "pool-claim") {
				t.Errorf("a note on #%d: %s", n, c.Body)
			}
		}
	}
	if _, prompts, _ := a.count(); prompts != 2 {
		t.Errorf("%d reviewer sessions, want 2: the approvals carry over to the car pushed again", prompts)
	}
	pushed := 0
	for _, e := range f.Effects() {
		if strings.HasPrefix(e, "#1: car ") && strings.HasSuffix(e, " pushed") {
			pushed++
		}
	}
	if pushed != 2 {
		t.Errorf("PR 1's car pushed to its branch %d times, want 2: once, then formed again once", pushed)
	}
}

// TestACarTheForgeNeverTestsMergesOneByOne: the forge shows neither the
// front car, pushed to its PR's branch, nor the car formed again as
// tested. That PR then leaves the train, with no note, and merges one by
// one once the forge tests it again (here when the other PR's car, formed
// again without it, lands and moves the base).
func TestACarTheForgeNeverTestsMergesOneByOne(t *testing.T) {
	f := outdatedForge(true, 1, 2)
	f.ciDelay = 30 * time.Millisecond
	f.retest = map[int]bool{1: true, 2: true}
	cars := newFakeCars(f)
	cars.untestedFirst = 2
	runTrain(t, f, cars, func() bool { return f.isMerged(1) && f.isMerged(2) })
	for _, n := range []int{1, 2} {
		for _, c := range f.comments[n] {
			if !strings.Contains(c.Body, "pool-claim") {
				t.Errorf("a note on #%d: %s", n, c.Body)
			}
		}
	}
	var stuck, other int
	for _, e := range f.Effects() {
		if strings.Contains(e, ": car ") && stuck == 0 {
			fmt.Sscanf(e, "#%d:", &stuck)
			other = 3 - stuck
		}
	}
	calls := updatesAndMerges(f)
	if len(calls) < 2 || !strings.HasPrefix(calls[0], fmt.Sprintf("#%d: merge at ", other)) || !strings.HasPrefix(calls[len(calls)-1], fmt.Sprintf("#%d: merge at ", stuck)) {
		t.Errorf("calls %v; want #%d's car merged, then #%d merged one by one", calls, other, stuck)
	}
}

// TestSoloPRsTakeNoTrainLease: with trains on, the only queued PR is one
// that rides no train (from a fork), whose merge the forge keeps answering
// "try again later", so it stays queued for a minute. The pool takes the
// train lease at most once (to sort the PR, which it does not know yet) and
// gives it back at most once: each take and give-back is a push of
// refs/pool-train-lease/<base>, which the forge runs its hooks for. Before,
// the lease was taken and given back at every turn of the train.
func TestSoloPRsTakeNoTrainLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := outdatedForge(true, 1)
		f.prs[1].HeadRepo = "someone/r"
		f.review(1, "reviewer", forge.ReviewApproved)
		f.mergeAnswer[1] = forge.MergeResult{Outcome: forge.MergeNotReady, Status: 405, Message: "Please try again later"}
		cars := newFakeCars(f)
		start := time.Now()
		runTrain(t, f, cars, func() bool { return time.Since(start) > 10*time.Second })
		l := cars.leases
		l.mu.Lock()
		defer l.mu.Unlock()
		if merges := f.calls["merge"]; merges < 3 {
			t.Fatalf("%d merge calls of the fork PR, want it tried one by one a few times", merges)
		}
		if l.n > 1 || l.dropped > 1 {
			t.Errorf("the train lease was taken %d times and given back %d times while only a PR that rides no train was queued; want at most once each",
				l.n, l.dropped)
		}
	})
}
