package pool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"log/slog"
	"maps"
	"os"

	"pool/clone"
	"pool/forge"
	"pool/forgejo"
	"pool/store"
)

// fakeCars makes cars on the fake forge: a car's commit has the parents
// (car ahead, approved head); pushing it to its train branch starts the
// stand-in CI on it, which fails every car holding a PR of bad; landing
// moves the PR's head to it, leased on the approved head.
type fakeCars struct {
	f        *fakeForge
	mu       sync.Mutex
	bad      map[int]bool
	holds    map[string][]int // the PRs in each car
	branches map[string]string
	formed   int // cars pushed: CI runs
	// authorPush: the author of these PRs pushes this commit to the
	// branch just before the pool's first landing of its car.
	authorPush map[int]string
	// staleBehind: right after a car is pushed to these PRs' branches the
	// forge still counts them behind their base (Gitea works out how far a
	// PR is behind after a push, apart from its mergeable flag), and
	// refuses their merge as outdated, for 100 ms.
	staleBehind map[int]bool
	// stillChecking: right after a car is pushed to these PRs' branches the
	// forge shows them mergeable (its flag from before the push) for 20 ms,
	// then not mergeable while it tests the new head, until 300 ms after
	// the push; its merge is answered "Please try again later" till then.
	stillChecking map[int]bool
	// untested: after each of the first untested[n] pushes of a car to PR
	// n's branch, the forge never shows the PR mergeable (its test of the
	// new head does not end, as a stuck check queue's), until the next push.
	untested map[int]int
	// untestedFirst, if set, is untested for the first PR a car is pushed
	// to, whichever it is.
	untestedFirst int
	// cancel: the run of the first car of these PRs is cancelled (a
	// failure "Has been cancelled"), and run again 200 ms later: it passes.
	cancel map[int]bool
	// leases is the forge's train lease, shared by the pools on f
	// (trainlease_test.go); instance names this one's pool.
	leases   *fakeLeases
	instance string
	// made counts the cars tried for each PR (MakeCar), formed or not.
	made map[int]int
	// conflicts: PR k does not merge cleanly onto a car holding PR
	// conflicts[k] while that PR is not merged (clone.ErrCarConflict).
	conflicts map[int]int
	// flaky: the first car of these PRs fails (a flake: the cars behind
	// it, which hold it, pass), and reports after three times the CI's
	// delay, once the cars behind it have.
	flaky map[int]bool
	// onLand, when set, runs after each car's push to its PR's branch,
	// without the locks: what happens on the forge just after it.
	onLand func(pr int)
	// actions: the stand-in CI is the forge's Actions: each car's status
	// points at its run's job, as Gitea's do (the run numbered as the
	// status), and the forge can run it again (fakeForge.RerunFailedJobs).
	actions bool
}

func newFakeCars(f *fakeForge) *fakeCars {
	return &fakeCars{f: f, bad: map[int]bool{}, holds: map[string][]int{}, branches: map[string]string{}, authorPush: map[int]string{},
		cancel: map[int]bool{}, staleBehind: map[int]bool{}, stillChecking: map[int]bool{}, untested: map[int]int{}, leases: &fakeLeases{}, instance: "pool-test",
		made: map[int]int{}, conflicts: map[int]int{}, flaky: map[int]bool{}}
}

func (c *fakeCars) MakeCar(_ context.Context, pr int, parent, head string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.made[pr]++
	car := fakeSHA(fmt.Sprintf("car-%d-%s", pr, parent))
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if q, ok := c.conflicts[pr]; ok && slices.Contains(c.holds[parent], q) && !c.f.prs[q].Merged {
		return "", clone.ErrCarConflict
	}
	if _, again := c.f.parents[car]; again {
		car = fakeSHA(fmt.Sprintf("car-%d-%s-%d", pr, parent, c.made[pr])) // a commit of its own, as the clone's, made later
	}
	c.f.parents[car] = []string{parent, head}
	c.holds[car] = append(slices.Clone(c.holds[parent]), pr)
	return car, nil
}

func (c *fakeCars) PushCar(_ context.Context, branch, car string) error {
	c.leases.check(c.instance, "car "+car+" to "+branch)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.formed++
	c.branches[branch] = car
	state := "success"
	for _, n := range c.holds[car] {
		if c.bad[n] {
			state = "failure"
		}
	}
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	id := int64(len(c.f.statuses) + 100)
	c.f.statuses[car] = []forge.Status{{ID: id, Context: "ci", State: state}}
	if c.actions {
		c.f.statuses[car][0].TargetURL = fmt.Sprintf("/o/r/actions/runs/%d/jobs/%d", id, 10*id)
	}
	c.f.ciAt[car] = c.f.now().Add(c.f.ciDelay)
	if pr := c.holds[car][len(c.holds[car])-1]; c.flaky[pr] {
		delete(c.flaky, pr)
		c.f.statuses[car][0].State = "failure"
		c.f.ciAt[car] = c.f.now().Add(3 * c.f.ciDelay)
	}
	if pr := c.holds[car][len(c.holds[car])-1]; c.cancel[pr] {
		delete(c.cancel, pr)
		c.f.statuses[car][0].State, c.f.statuses[car][0].Description = "failure", "Has been cancelled"
		time.AfterFunc(c.f.ciDelay+200*time.Millisecond, func() {
			c.f.mu.Lock()
			defer c.f.mu.Unlock()
			c.f.statuses[car] = append(c.f.statuses[car], forge.Status{ID: id + 1000, Context: "ci", State: state})
		})
	}
	return nil
}

func (c *fakeCars) DeleteCar(_ context.Context, branch string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.branches, branch)
	c.f.mu.Lock()
	c.f.trail = append(c.f.trail, "deleted "+branch)
	c.f.mu.Unlock()
	return nil
}

func (c *fakeCars) LandCar(ctx context.Context, pr int, branch, lease, car string) error {
	if ctx.Err() != nil {
		return ctx.Err() // as git push, killed with its context
	}
	err := c.landCar(pr, branch, lease, car)
	if err == nil && c.onLand != nil {
		c.onLand(pr)
	}
	return err
}

func (c *fakeCars) landCar(pr int, branch, lease, car string) error {
	c.leases.check(c.instance, "car "+car+" to "+branch)
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	p := c.f.prs[pr]
	if pushed, ok := c.authorPush[pr]; ok {
		delete(c.authorPush, pr)
		c.f.parents[pushed] = []string{p.HeadSHA}
		c.f.statuses[pushed] = []forge.Status{{ID: 900, Context: "ci", State: "success"}}
		p.HeadSHA = pushed
		c.f.contentChanged(pr)
		c.f.touch(pr)
	}
	if p.HeadSHA != lease || p.HeadRef != branch {
		return clone.ErrLeaseLost
	}
	if len(c.holds[car]) == 0 { // not a car: a car pushed ahead taken back to the approved head
		c.f.record("#%d: branch back at %s", pr, car)
		c.f.trail = append(c.f.trail, fmt.Sprintf("back #%d", pr))
		p.HeadSHA = car
		c.f.touch(pr)
		return nil
	}
	c.f.record("#%d: car %s pushed", pr, car)
	c.f.trail = append(c.f.trail, fmt.Sprintf("pushed #%d", pr))
	p.HeadSHA, p.MergeBase, p.Mergeable = car, c.f.parents[car][0], true
	if c.untestedFirst > 0 {
		c.untested[pr], c.untestedFirst = c.untestedFirst, 0
	}
	if c.untested[pr] > 0 {
		c.untested[pr]--
		p.Mergeable = false
	}
	c.f.touch(pr)
	if c.staleBehind[pr] {
		msg := `{"message":"not ready to merge: The head branch is behind the base branch"}`
		c.f.mergeAnswer[pr] = forge.MergeResult{Outcome: forgejo.ClassifyMerge(405, msg), Status: 405, Message: msg, Rule: forge.RefusalRule(405, msg)}
		time.AfterFunc(100*time.Millisecond, func() {
			c.f.mu.Lock()
			defer c.f.mu.Unlock()
			delete(c.f.mergeAnswer, pr)
		})
	}
	if c.stillChecking[pr] {
		c.f.mergeAnswer[pr] = forge.MergeResult{Outcome: forge.MergeNotReady, Status: 405, Message: `{"message":"Please try again later"}`}
		time.AfterFunc(20*time.Millisecond, func() { // the test begins: not mergeable while it runs
			c.f.mu.Lock()
			defer c.f.mu.Unlock()
			c.f.prs[pr].Mergeable = false
		})
		time.AfterFunc(300*time.Millisecond, func() {
			c.f.mu.Lock()
			defer c.f.mu.Unlock()
			c.f.prs[pr].Mergeable = true
			delete(c.f.mergeAnswer, pr)
		})
	}
	return nil
}

func (c *fakeCars) BaseTreeIs(_ context.Context, car string) (bool, string, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	return c.f.base == car, c.f.base, nil
}

// runTrain runs a pool with trains on over f until stop holds.
func runTrain(t *testing.T, f *fakeForge, cars *fakeCars, stop func() bool) *fakeAgent {
	t.Helper()
	return runTrainWith(t, f, cars, nil, nil, stop)
}

// runTrainOn is runTrain with the pool's store st (nil: a fresh memory).
func runTrainOn(t *testing.T, f *fakeForge, cars *fakeCars, st State, stop func() bool) *fakeAgent {
	t.Helper()
	return runTrainAll(t, f, cars, nil, nil, st, nil, stop)
}

// runTrainWith is runTrain with metrics m (nil: none) and during, if set,
// running beside the pool.
func runTrainWith(t *testing.T, f *fakeForge, cars *fakeCars, m Metrics, during func(context.Context, *Pool), stop func() bool) *fakeAgent {
	t.Helper()
	return runTrainAll(t, f, cars, m, during, nil, nil, stop)
}

// runTrainAll is runTrainWith on the pool's store st (nil: a fresh memory),
// logging to log (nil: testLog).
func runTrainAll(t *testing.T, f *fakeForge, cars *fakeCars, m Metrics, during func(context.Context, *Pool), st State, log *slog.Logger,
	stop func() bool) *fakeAgent {
	t.Helper()
	a := newFakeAgent(approver(f, time.Millisecond))
	cfg := testConfig(2)
	cfg.IdleExit, cfg.MergeTrain = 0, "always"
	cfg.HumanReviewers = append(cfg.HumanReviewers, "alice") // a human whose reviews count
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if log == nil {
		log = testLog()
	}
	p, err := New(ctx, cfg, Deps{Forge: f, Agent: a, Now: f.now, History: &fakeHistory{}, Cars: cars, Store: st, Log: log, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	if during != nil {
		go during(ctx, p)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	go func() {
		waitFor(ctx, stop)
		stopRun()
	}()
	if _, err := p.Run(runCtx); err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v, %v", err, ctx.Err())
	}
	return a
}

// mergedAndSwept is a stop condition: PRs prs are merged and no train
// branch is left. The pool deletes the branches of landed cars once a turn
// lands nothing (sweep), so a test that stops at the merges alone may stop
// between the two (the stop sweeps too, but a test of the train's own
// sweep must not lean on that).
func mergedAndSwept(f *fakeForge, cars *fakeCars, prs ...int) func() bool {
	return func() bool {
		for _, n := range prs {
			if !f.isMerged(n) {
				return false
			}
		}
		cars.mu.Lock()
		defer cars.mu.Unlock()
		return len(cars.branches) == 0
	}
}

// TestATrainLandsThreePRs: three approved PRs on a branch that blocks
// outdated branches ride one train: three cars, one CI run each, no
// update by the forge; each PR is merged fast-forward at its car, the
// base ends at the last car, the approvals carry over to the cars (one
// session per PR), and no train branch is left.
func TestATrainLandsThreePRs(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	f.ciDelay = 30 * time.Millisecond
	cars := newFakeCars(f)
	a := runTrain(t, f, cars, mergedAndSwept(f, cars, 1, 2, 3))
	calls := updatesAndMerges(f)
	if len(calls) != 3 || strings.Contains(strings.Join(calls, " "), "update") {
		t.Errorf("calls %v, want three merges and no update", calls)
	}
	for _, c := range calls {
		var n int
		var head string
		fmt.Sscanf(c, "#%d: merge at %s", &n, &head)
		if len(f.parents[head]) != 2 || !strings.HasPrefix(c, fmt.Sprintf("#%d:", n)) || cars.holds[head][len(cars.holds[head])-1] != n {
			t.Errorf("%s: not merged at its car", c)
		}
	}
	if cars.formed != 3 {
		t.Errorf("%d cars formed (CI runs), want 3", cars.formed)
	}
	if _, prompts, _ := a.count(); prompts != 3 {
		t.Errorf("%d reviewer sessions, want 3: the approvals carry over to the cars", prompts)
	}
	if len(cars.holds[f.base]) != 3 {
		t.Errorf("the base is at %s, holding %v; want the last car, holding all three", f.base, cars.holds[f.base])
	}
	if len(cars.branches) != 0 {
		t.Errorf("train branches left: %v", cars.branches)
	}
}

// TestTheTrainIsShownAndCounted: while three PRs ride one train, the
// status page's row and the pool's commit status of each say its car and
// its train ("car 2 of 3 on main's merge train"), and the API rows carry
// the car, the cars and the train's base; the metrics count one train,
// three cars (three CI runs for three merged PRs) and no ejection, nor any
// update by the forge. With PR 2's car failing, one ejection is counted.
func TestTheTrainIsShownAndCounted(t *testing.T) {
	for _, bad := range []bool{false, true} {
		t.Run(fmt.Sprint("failing car ", bad), func(t *testing.T) {
			f := outdatedForge(true, 1, 2, 3)
			f.ciDelay = 300 * time.Millisecond // the cars stand while all three are approved and ride
			cars := newFakeCars(f)
			cars.bad[2] = bad
			m := &recordingMetrics{}
			var mu sync.Mutex
			seen := map[string]bool{}
			watch := func(ctx context.Context, p *Pool) {
				for ctx.Err() == nil {
					for _, pr := range p.Status().PRs {
						if pr.Car == 0 {
							continue
						}
						mu.Lock()
						seen[fmt.Sprintf("%d/%d %s | %s | %s", pr.Car, pr.Cars, pr.Train, pr.Next, pr.Commit)] = true
						mu.Unlock()
					}
					time.Sleep(time.Millisecond)
				}
			}
			runTrainWith(t, f, cars, m, watch, func() bool { // an ejected PR 2 waits for a new head
				return f.isMerged(1) && f.isMerged(3) && (f.isMerged(2) || bad && m.count("car ejected") > 0)
			})
			mu.Lock()
			defer mu.Unlock()
			if !bad {
				for car := 1; car <= 3; car++ {
					text := fmt.Sprintf("approved, checks green; car %d of 3 on main's merge train", car)
					want := fmt.Sprintf("%d/3 main | %s | %s", car, text, text) // the queue's order decides which PR
					if !seen[want] {
						t.Errorf("never shown: %q; shown: %v", want, slices.Sorted(maps.Keys(seen)))
					}
				}
			}
			wantEjected := 0
			if bad {
				wantEjected = 1
			}
			if got := m.count("train formed"); got < 1 {
				t.Errorf("%d trains formed counted, want at least 1", got)
			}
			if got := m.count("car formed"); got != cars.formed {
				t.Errorf("%d cars counted, %d formed", got, cars.formed)
			}
			if got := m.count("car ejected"); got != wantEjected {
				t.Errorf("%d ejections counted, want %d", got, wantEjected)
			}
			if got, calls := m.count("updated"), updatesAndMerges(f); got != strings.Count(strings.Join(calls, " "), "update by") {
				t.Errorf("%d updates counted, calls %v", got, calls)
			}
			if !bad && (m.count("train formed") != 1 || m.count("car formed") != 3 || m.count("updated") != 0) {
				t.Errorf("counted %d trains, %d cars, %d updates; want 1, 3 and 0", m.count("train formed"), m.count("car formed"), m.count("updated"))
			}
		})
	}
}

// TestAFailingCarIsEjected: PR 2's car fails (the stand-in CI fails every
// car holding it, and passes PR 2's own head). PRs 1 and 3 land at cars
// without PR 2; PR 2 leaves the train with one note naming the check, and
// then waits for a new head: no update one by one (it would be the tree
// its car tested: one more CI run, and the notes of a failing PR), no
// merge, no other comment, no car again, neither from this pool nor from
// one relaunched on the same store. The CI runs: one per PR, and the cars
// behind PR 2's formed again without it.
func TestAFailingCarIsEjected(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	f.ciDelay = 30 * time.Millisecond
	cars := newFakeCars(f)
	cars.bad[2] = true
	st := store.NewMemory()
	var settled time.Time
	runTrainOn(t, f, cars, st, func() bool {
		f.mu.Lock()
		noted := len(f.comments[2]) > 0
		f.mu.Unlock()
		if settled.IsZero() && f.isMerged(1) && f.isMerged(3) && noted {
			settled = time.Now()
		}
		return !settled.IsZero() && time.Since(settled) > 300*time.Millisecond // 15 polls more
	})
	formed := cars.formed
	runTrainOn(t, f, cars, st, func() bool { time.Sleep(300 * time.Millisecond); return true })
	if f.isMerged(2) {
		t.Errorf("PR 2 merged: %v", updatesAndMerges(f))
	}
	notes := 0
	for _, c := range f.comments[2] {
		if strings.Contains(c.Body, "left the merge train") && strings.Contains(c.Body, "ci failed") {
			notes++
		}
	}
	if notes != 1 || len(f.comments[2]) != 1+claimsIn(f.comments[2]) {
		t.Errorf("%d ejection notes on PR 2 of %d comments, want the one: %v", notes, len(f.comments[2]), f.comments[2])
	}
	for _, c := range updatesAndMerges(f) {
		var n int
		var head string
		if strings.HasPrefix(c, "#2:") {
			t.Errorf("%s: PR 2 updated or merged after its ejection", c)
		}
		if _, err := fmt.Sscanf(c, "#%d: merge at %s", &n, &head); err != nil {
			continue
		}
		if held := cars.holds[head]; !slices.Contains(held, n) || slices.Contains(held, 2) {
			t.Errorf("%s: merged at a commit holding %v, want its car without PR 2", c, held)
		}
	}
	for car, held := range cars.holds {
		if slices.Contains(held, 2) && held[len(held)-1] == 2 && car != "" && f.statuses[car][0].State != "failure" {
			t.Errorf("car %s of PR 2 passed", car)
		}
	}
	if formed > 5 || cars.formed != formed {
		t.Errorf("%d cars formed, %d after a relaunch; want at most 5 (one per PR, the cars behind PR 2's again), none after", formed, cars.formed)
	}
	// The control: a pool relaunched without the store tries PR 2 again.
	runTrainOn(t, f, cars, nil, func() bool { time.Sleep(300 * time.Millisecond); return true })
	if cars.formed == formed {
		t.Errorf("a pool relaunched on a fresh store formed no car for PR 2: the store is not what keeps it off")
	}
}

// TestASoloPRStaysSoloAcrossARelaunch: PR 2 rides no train at its head,
// for a conflict with the car of PR 1 ahead of it, or for a possible
// flake (its car failed, the car behind it, which holds it, passed). It
// merges one by one (its merge call hangs here, so it stays open, at its
// head or at the pool's update of it). A pool relaunched on the same store
// tries no car of it: each would cost a CI run (a flaky PR a second car).
// A new head of the author's rides again: a car of it lands.
func TestASoloPRStaysSoloAcrossARelaunch(t *testing.T) {
	for _, why := range []string{"conflict", "flake"} {
		t.Run(why, func(t *testing.T) {
			f := outdatedForge(true, 1, 2, 3)
			f.ciDelay = 30 * time.Millisecond
			for _, n := range []int{1, 2, 3} {
				f.review(n, "reviewer", forge.ReviewApproved) // queued in order: PR 2 has PR 1's car ahead
			}
			f.hangMerge[2] = true
			cars := newFakeCars(f)
			if why == "conflict" {
				cars.conflicts[2] = 1
			} else {
				cars.flaky[2] = true
			}
			made := func() int {
				cars.mu.Lock()
				defer cars.mu.Unlock()
				return cars.made[2]
			}
			hung := func(n int) func() bool {
				return func() bool {
					f.mu.Lock()
					defer f.mu.Unlock()
					return f.hung[2] >= n
				}
			}
			st := store.NewMemory()
			runTrainOn(t, f, cars, st, hung(1))
			f.mu.Lock()
			head, notes := f.prs[2].HeadSHA, fmt.Sprint(f.comments[2])
			f.mu.Unlock()
			if why == "flake" && !strings.Contains(notes, "may be a flake") {
				t.Fatalf("PR 2 was not ejected as a possible flake: %v", notes)
			}
			tried := made()
			if tried == 0 {
				t.Fatalf("no car tried for PR 2")
			}
			runTrainOn(t, f, cars, st, hung(2))
			f.mu.Lock()
			now := f.prs[2].HeadSHA
			f.mu.Unlock()
			if n := made() - tried; n != 0 {
				t.Errorf("a relaunched pool tried %d cars of PR 2 at %s (at %s before), which merges one by one (%s)", n, now, head, why)
			}

			pushed := fakeSHA("author-push-2") // resolves the conflict
			cars.mu.Lock()
			delete(cars.conflicts, 2)
			cars.mu.Unlock()
			f.mu.Lock()
			delete(f.hangMerge, 2)
			f.parents[pushed] = []string{f.prs[2].HeadSHA}
			f.statuses[pushed] = []forge.Status{{ID: 901, Context: "ci", State: "success"}}
			f.prs[2].HeadSHA = pushed
			f.contentChanged(2)
			f.touch(2)
			f.mu.Unlock()
			tried = made()
			runTrainOn(t, f, cars, st, func() bool { return f.isMerged(2) })
			if made() == tried {
				t.Errorf("no car tried for the author's new head of PR 2")
			}
			for _, c := range updatesAndMerges(f) {
				var at string
				if _, err := fmt.Sscanf(c, "#2: merge at %s", &at); err == nil && !slices.Contains(cars.holds[at], 2) {
					t.Errorf("%s: the author's new head merged one by one, want at a car", c)
				}
			}
		})
	}
}

// TestACancelledCarIsNoFailure: the run of PR 2's car is cancelled, then
// run again, and passes. The cancellation ejects no one: PR 2 gets no
// note, all three land, at their first cars (three CI runs).
func TestACancelledCarIsNoFailure(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	f.ciDelay = 30 * time.Millisecond
	cars := newFakeCars(f)
	cars.cancel[2] = true
	runTrain(t, f, cars, func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) })
	if n := len(f.comments[2]) - claimsIn(f.comments[2]); n != 0 {
		t.Errorf("%d notes on PR 2, want none: %v", n, f.comments[2])
	}
	if cars.formed != 3 {
		t.Errorf("%d cars formed, want 3: a cancelled run is run again, not a reason to re-form", cars.formed)
	}
}

// TestALandingRefusedAsBehindIsNoNote: just after each car is pushed to
// its PR's branch the forge still counts the PR behind its base and
// refuses the merge as outdated. The car stays at the front and lands at
// the next try: no note on any PR, and no car formed again.
func TestALandingRefusedAsBehindIsNoNote(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	f.ciDelay = 30 * time.Millisecond
	cars := newFakeCars(f)
	for _, n := range []int{1, 2, 3} {
		cars.staleBehind[n] = true
	}
	runTrain(t, f, cars, func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) })
	for _, n := range []int{1, 2, 3} {
		if notes := len(f.comments[n]) - claimsIn(f.comments[n]); notes != 0 {
			t.Errorf("%d notes on PR %d, want none: %v", notes, n, f.comments[n])
		}
	}
	if cars.formed != 3 {
		t.Errorf("%d cars formed, want 3", cars.formed)
	}
}

// noTurnWithinALanding fails t where trail shows anything but a read of
// the landing PR between its landing push and its merge: a turn of the
// train (which reads every rider), not a merge asked again. A car pushed
// right after the merge ahead (pushAhead) lands after a turn: its landing
// is not checked. It returns the landings it checked.
func noTurnWithinALanding(t *testing.T, trail []string) (checked int) {
	t.Helper()
	landing, prev := "", ""
	for _, e := range trail {
		switch {
		case strings.HasPrefix(e, "merged "):
			landing = ""
		case strings.HasPrefix(e, "pushed ") && strings.HasPrefix(prev, "merged "):
		case landing == "" && strings.HasPrefix(e, "pushed "):
			landing = strings.TrimPrefix(e, "pushed ")
			checked++
		case landing != "" && e != "read "+landing:
			t.Errorf("%s between the landing push of %s and its merge: a turn of the train, not a merge asked again", e, landing)
		}
		prev = e
	}
	return checked
}

// TestABehindRefusalIsAskedAgainInTheLanding: the forge refuses each
// car's merge as behind for 100 ms after the landing push. The pool asks
// again within the landing, without a turn of the train in between (a
// turn reads every rider): between a PR's landing push and its merge the
// forge is read for that PR only.
func TestABehindRefusalIsAskedAgainInTheLanding(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	f.ciDelay = 30 * time.Millisecond
	cars := newFakeCars(f)
	for _, n := range []int{1, 2, 3} {
		cars.staleBehind[n] = true
	}
	runTrain(t, f, cars, func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) })
	if pushed := noTurnWithinALanding(t, f.readTrail()); pushed == 0 || f.calls["merge"] < 3+pushed {
		t.Errorf("%d merge calls, %d landings pushed at their turn; want one call for each of the 3, and each landing pushed at its turn refused once at least",
			f.calls["merge"], pushed)
	}
}

// TestATryAgainLaterIsAskedAgainInTheLanding: the forge answers a car's
// merge "Please try again later" just after its push (its test of the new
// head is queued behind the base's other PRs). The landing waits for the
// forge to show the PR tested and asks again, reading no other PR between
// the push and the merge (a turn of the train, which reads every rider,
// cost 5 to 14 s a landing in the K = 20 bench).
func TestATryAgainLaterIsAskedAgainInTheLanding(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	f.ciDelay = 30 * time.Millisecond
	cars := newFakeCars(f)
	for _, n := range []int{1, 2, 3} {
		cars.stillChecking[n] = true
	}
	runTrain(t, f, cars, func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) })
	if pushed := noTurnWithinALanding(t, f.readTrail()); pushed == 0 || f.calls["merge"] < 3+pushed {
		t.Errorf("%d merge calls, %d landings pushed at their turn; want one call for each of the 3, and each landing pushed at its turn answered \"try again later\" once at least",
			f.calls["merge"], pushed)
	}
	for _, n := range []int{1, 2, 3} {
		if notes := len(f.comments[n]) - claimsIn(f.comments[n]); notes > 0 {
			t.Errorf("%d notes on PR %d, want none: %v", notes, n, f.comments[n])
		}
	}
}

// TestLandedCarsAreSweptWhenTheTrainWaits: three cars green before the
// first lands land one after another with no deletion of a train branch
// between them (a push, with the forge's hooks); the branches are deleted
// once the train waits, and none is left.
func TestLandedCarsAreSweptWhenTheTrainWaits(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	cars := newFakeCars(f)
	allGreenAtOnce(f, cars) // no car reports until all three are formed
	runTrain(t, f, cars, mergedAndSwept(f, cars, 1, 2, 3))
	trail, merges := f.readTrail(), 0
	for _, e := range trail {
		switch {
		case strings.HasPrefix(e, "merged "):
			merges++
		case strings.HasPrefix(e, "deleted ") && merges > 0 && merges < 3:
			t.Errorf("%s after %d of 3 landings: a deletion between two landings", e, merges)
		}
	}
}

// TestAStoppedPoolSweepsItsLandedCars: three cars green at once land one
// after another with no sweep between them; the pool is stopped as the
// third car is pushed to its PR's branch (the operator's SIGTERM). The
// stop deletes the train branches of the two cars that landed: no later
// run knows them, and they would stay on the forge for ever. The third
// car's branch may stay: it still rides, and its next car replaces it.
func TestAStoppedPoolSweepsItsLandedCars(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	cars := newFakeCars(f)
	allGreenAtOnce(f, cars)
	var stopping atomic.Bool
	cars.onLand = func(pr int) {
		if pr == 3 {
			stopping.Store(true)
			time.Sleep(20 * time.Millisecond) // the stop is taken while the push is answered
		}
	}
	runTrain(t, f, cars, stopping.Load)
	if !f.isMerged(1) || !f.isMerged(2) {
		t.Fatalf("PRs 1 and 2 merged: %v %v, want both before the stop", f.isMerged(1), f.isMerged(2))
	}
	cars.mu.Lock()
	defer cars.mu.Unlock()
	for _, n := range []int{1, 2} {
		if car, ok := cars.branches[trainBranch("main", n)]; ok {
			t.Errorf("the train branch of landed PR #%d is left after the stop, at %s", n, car)
		}
	}
}

// TestAnAuthorsPushWinsOverTheTrain: the author of PR 1 pushes just as
// its car is about to land. The lease refuses the car, the author's
// commit stays the head, no approval carries to it: it is reviewed again
// (four sessions for three PRs), and it merges at the author's head or a
// car of it, never at the car of the old head.
func TestAnAuthorsPushWinsOverTheTrain(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	f.ciDelay = 30 * time.Millisecond
	cars := newFakeCars(f)
	pushed := fakeSHA("author-push-1")
	cars.authorPush[1] = pushed
	a := runTrain(t, f, cars, func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) })
	if _, prompts, _ := a.count(); prompts != 4 {
		t.Errorf("%d reviewer sessions, want 4: the author's push is reviewed", prompts)
	}
	for _, c := range updatesAndMerges(f) {
		var head string
		if _, err := fmt.Sscanf(c, "#1: merge at %s", &head); err != nil {
			continue
		}
		if head != pushed && !slices.Contains(f.parents[head], pushed) {
			t.Errorf("%s: PR 1 merged at %s (parents %v), want the author's push %s or a car of it", c, head, f.parents[head], pushed)
		}
	}
}

func testLog() *slog.Logger {
	if os.Getenv("TRAIN_DEBUG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, nil))
}

// TestNoTrainWhereNoApprovalCarriesOver: where the protection dismisses
// stale approvals no approval would carry over to a car: with merge.train
// always the PRs merge one by one (updated by the forge), and no car is
// formed.
func TestNoTrainWhereNoApprovalCarriesOver(t *testing.T) {
	for _, tt := range []struct {
		name     string
		readable bool
		dismiss  bool
	}{{"dismiss stale approvals", true, true}} {
		t.Run(tt.name, func(t *testing.T) {
			f := outdatedForge(tt.readable, 1, 2)
			f.protection.DismissStale = tt.dismiss
			cars := newFakeCars(f)
			runTrain(t, f, cars, func() bool { return f.isMerged(1) && f.isMerged(2) })
			if cars.formed != 0 {
				t.Errorf("%d cars formed, want none", cars.formed)
			}
			if calls := updatesAndMerges(f); !strings.Contains(strings.Join(calls, " "), "update by merge") {
				t.Errorf("calls %v, want the forge's update one by one", calls)
			}
		})
	}
}

// TestATrainRunsWithAnUnreadableRule: a token that cannot read the
// protection whole (a write collaborator's) rides trains too: the forge
// keeps each approval over the landing push of its car (not stale, not
// dismissed), so the approvals carry over, one session per PR, and every
// PR lands at its car.
func TestATrainRunsWithAnUnreadableRule(t *testing.T) {
	f := outdatedForge(false, 1, 2, 3)
	cars := newFakeCars(f)
	a := runTrain(t, f, cars, func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) })
	if cars.formed == 0 {
		t.Errorf("no car formed, want a train: %v", updatesAndMerges(f))
	}
	if calls := updatesAndMerges(f); strings.Contains(strings.Join(calls, " "), "update by") {
		t.Errorf("calls %v, want no update by the forge", calls)
	}
	if _, prompts, _ := a.count(); prompts != 3 {
		t.Errorf("%d reviewer sessions, want 3: the approvals carry over to the cars", prompts)
	}
}

// TestNoTrainWhereFastForwardIsNotAllowed: the repository does not allow
// fast-forward-only merges, with which cars land. Its settings say so: the
// pool reads them at start, says in one line that it merges one by one and
// why, and forms no car. An older
// forge whose settings do not say: one line at start says trains run, the
// first landing is refused for its style, trains go off with one line, and
// no note blames the PR. Either way every PR merges one by one.
func TestNoTrainWhereFastForwardIsNotAllowed(t *testing.T) {
	const off = "merge.train is on, but the pool merges one by one: the repository does not allow fast-forward-only merges"
	for _, tt := range []struct {
		name      string
		older     bool
		maxFormed int
		unsaid    int // lines saying the forge does not say
	}{
		{name: "said by the repository's settings", maxFormed: 0},
		{name: "an older forge that does not say", older: true, maxFormed: 3, unsaid: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := outdatedForge(true, 1, 2, 3)
			f.noFastForward, f.olderForge = true, tt.older
			cars := newFakeCars(f)
			var log lockedBuffer
			runTrainAll(t, f, cars, nil, nil, nil, slog.New(slog.NewTextHandler(&log, nil)),
				func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) })
			for n, cs := range f.comments {
				for _, c := range cs {
					if strings.Contains(c.Body, "on hold") || strings.Contains(c.Body, "merge train") {
						t.Errorf("#%d: a note on the refused style: %s", n, c.Body)
					}
				}
			}
			if formed := cars.formed; formed > tt.maxFormed {
				t.Errorf("%d cars formed, want at most %d", formed, tt.maxFormed)
			}
			if got := strings.Count(log.String(), off); got != 1 {
				t.Errorf("%d lines %q, want 1; log:\n%s", got, off, log.String())
			}
			if got := strings.Count(log.String(), "the forge does not say whether the repository allows fast-forward-only merges"); got != tt.unsaid {
				t.Errorf("%d lines saying the forge does not say, want %d", got, tt.unsaid)
			}
		})
	}
}

// TestTrainsImpossible: which settings of the forge make trains
// pointless or impossible. A setting the forge does not say, or a rule the
// token cannot read whole, does not.
func TestTrainsImpossible(t *testing.T) {
	dismissing := forge.Protection{Protected: true, Full: true, DismissStale: true}
	hidden := forge.Protection{Protected: true, DismissStale: true} // Full false: not read, the forge's flags decide
	for _, tt := range []struct {
		name    string
		prot    forge.Protection
		ff      forge.Setting
		refused bool
		want    string // a part of the reason; "": trains possible
	}{
		{"fast-forward-only allowed", forge.Protection{Protected: true, Full: true}, forge.Yes, false, ""},
		{"stale approvals dismissed", dismissing, forge.Yes, false, "dismisses stale approvals"},
		{"an unread rule", hidden, forge.Yes, false, ""},
		{"fast-forward-only not allowed", forge.Protection{}, forge.No, false, "does not allow fast-forward-only merges, which land a train's cars (its merge settings)"},
		{"the forge does not say", forge.Protection{}, forge.Unsaid, false, ""},
		{"the forge does not say and refused the style", forge.Protection{}, forge.Unsaid, true, "the forge refused a car's merge for its style"},
		{"allowed but refused", forge.Protection{}, forge.Yes, true, "the forge refused"},
		{"not allowed, stale approvals dismissed", dismissing, forge.No, false, "dismisses stale approvals"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := trainsImpossible(tt.prot, tt.ff, tt.refused)
			if (got == "") != (tt.want == "") || !strings.Contains(got, tt.want) {
				t.Errorf("trainsImpossible = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTrainsOffIsSaidOnce: where the forge's settings make trains
// impossible, the pool says in one line why it merges one by one; it says
// nothing more while they stay so, nothing while trains are possible, and
// one line again when the rule changes back. A rule the token cannot read
// whole does not make trains impossible. The repository's merge settings,
// read again, turn trains off and on as the protection does.
func TestTrainsOffIsSaidOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := outdatedForge(true, 1)
	f.protection.DismissStale = true
	var buf lockedBuffer
	cfg := testConfig(1)
	cfg.MergeTrain = "auto"
	p, err := New(ctx, cfg, Deps{Forge: f, Agent: newFakeAgent(nil), Now: f.now, History: &fakeHistory{}, Cars: newFakeCars(f),
		Log: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	const said = "merge.train is on, but the pool merges one by one"
	turns := func(rule forge.Protection, wantOn bool, wantLines int, why string) {
		t.Helper()
		f.mu.Lock()
		f.protection = rule
		f.mu.Unlock()
		p.protectionRead = time.Time{}
		p.refreshProtection(ctx)
		for range 3 {
			if on := p.trainsOn(); on != wantOn {
				t.Errorf("trainsOn = %v under %+v, want %v", on, rule, wantOn)
			}
		}
		if got := strings.Count(buf.String(), said); got != wantLines {
			t.Errorf("%d lines %q, want %d; log:\n%s", got, said, wantLines, buf.String())
		}
		if why != "" && !strings.Contains(buf.String(), said+": "+why) {
			t.Errorf("no line says %q; log:\n%s", why, buf.String())
		}
	}
	dismissing := f.protection
	keeping := dismissing
	keeping.DismissStale = false
	unread := forge.Protection{Protected: true, Rule: "main", UserCanMerge: true, StatusCheck: true, StatusContexts: []string{"ci"}}
	turns(dismissing, false, 1, "the branch protection dismisses stale approvals")
	turns(keeping, true, 1, "")
	turns(unread, false, 1, "") // auto: off until the forge's refusal names block_on_outdated_branch, but possible
	p.learn("block_on_outdated_branch")
	if !p.trainsOn() {
		t.Errorf("trains off under an unreadable rule that blocks outdated branches")
	}
	turns(dismissing, false, 2, "the branch protection dismisses stale approvals")
	p.noFastForward.Store(true)
	turns(keeping, false, 3, "the repository does not allow fast-forward-only merges")
	// The repository's merge settings, read again with each full listing
	// (followBase): unchanged, the forge's refusal stands; a change to
	// allowed forgets it; not allowed is said once more.
	settings := func(fastForward bool, wantOn bool, wantLines int, why string) {
		t.Helper()
		f.mu.Lock()
		f.noFastForward = !fastForward
		f.mu.Unlock()
		p.followBase(ctx)
		turns(keeping, wantOn, wantLines, why)
	}
	settings(true, false, 3, "")
	settings(false, false, 4, "the repository does not allow fast-forward-only merges, which land a train's cars (its merge settings)")
	settings(false, false, 4, "")
	settings(true, true, 4, "")
	settings(false, false, 5, "")
}

// lockedBuffer is a bytes.Buffer safe for a logger and a reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// claimsIn counts the review claims among comments (the pool's reviews of
// the fake's PRs claim them first).
func claimsIn(comments []forge.Comment) int {
	n := 0
	for _, c := range comments {
		if strings.Contains(c.Body, "pool-claim") {
			n++
		}
	}
	return n
}
