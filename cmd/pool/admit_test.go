package main

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"
)

// admission lets the end-to-end tests start at most limit at a time, the
// long ones first. The testing package releases every parallel test at once
// and starts them in no useful order; a test that runs for minutes and
// starts last would set the length of the whole run.
//
// Past floor running tests, a test is admitted only on a fresh reading
// (probe) that the shared servers are not saturated, one test per reading:
// the machine, not a constant, sets how many run at once.
type admission struct {
	mu      sync.Mutex
	cond    *sync.Cond
	limit   int
	floor   int // admitted without a reading
	running int
	first   time.Time // the first arrival; admissions start a settle later
	waiting []*applicant

	// probe reads whether the servers have room for one more test; nil
	// means they always have. fresh is a reading not yet spent on an
	// admission; probing is true while one is being taken.
	probe   func() bool
	every   time.Duration // the pause before each reading
	fresh   bool
	probing bool
	holds   int // readings that said no room
	peak    int // the most tests that ran at once
}

// summary says how the admission went, for the test binary's output.
func (a *admission) summary() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Sprintf("end-to-end admission: limit %d, floor %d, at most %d at once, %d readings of busy servers held a test back",
		a.limit, a.floor, a.peak, a.holds)
}

type applicant struct{ weight int }

// settle is how long admission waits after the first test arrives, so that
// every test released with it has arrived and the long ones go first.
const settle = 300 * time.Millisecond

func newAdmission(limit int) *admission {
	a := &admission{limit: max(limit, 1), floor: max(limit, 1), every: probeEvery}
	a.cond = sync.NewCond(&a.mu)
	return a
}

// enter blocks until the applicant may start, the heaviest first; leave
// must follow.
func (a *admission) enter(weight int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.first.IsZero() {
		a.first = time.Now()
		time.AfterFunc(settle, func() { a.mu.Lock(); a.cond.Broadcast(); a.mu.Unlock() })
	}
	me := &applicant{weight: weight}
	a.waiting = append(a.waiting, me)
	sort.SliceStable(a.waiting, func(i, j int) bool { return a.waiting[i].weight > a.waiting[j].weight })
	for time.Since(a.first) < settle || a.running >= a.limit || a.waiting[0] != me || !a.room() {
		a.cond.Wait()
	}
	a.waiting = a.waiting[1:]
	a.running++
	a.peak = max(a.peak, a.running)
	if a.running > a.floor {
		a.fresh = false // this admission spent the reading
	}
	a.cond.Broadcast() // the next in line may fit too
}

// room reports whether one more test fits: below the floor always, past it
// only on a fresh reading that the servers have room. Without one it starts
// a reading, which wakes the waiters when it is in. Called with a.mu held.
func (a *admission) room() bool {
	if a.probe == nil || a.running < a.floor || a.fresh {
		return true
	}
	if !a.probing {
		a.probing = true
		go a.read()
	}
	return false
}

// probeEvery spaces the readings: a test just admitted loads the servers
// only once it has seeded its repository and its pool starts sessions.
const probeEvery = 5 * time.Second

func (a *admission) read() {
	time.Sleep(a.every)
	ok := a.probe()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.probing = false
	a.fresh = ok
	if !ok {
		a.holds++
	}
	a.cond.Broadcast()
}

func (a *admission) leave() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.running--
	a.cond.Broadcast()
}

// e2eAdmission admits this binary's end-to-end tests; TestMain sets its limit, floor and probe.
var e2eAdmission = newAdmission(maxParallel)

// parallel marks an end-to-end test parallel and waits for its turn. Call
// it first, before the test's deadline starts counting.
func parallel(t *testing.T) { admit(t, 0) }

// parallelLong is parallel for a test that runs for minutes: it starts
// before the short ones.
func parallelLong(t *testing.T) { admit(t, 1) }

// parallelLongest is parallel for the test that sets the length of the
// whole run (the fault run: five minutes on an idle machine): it starts
// first of all.
func parallelLongest(t *testing.T) { admit(t, 2) }

func admit(t *testing.T, weight int) {
	t.Helper()
	t.Parallel()
	if testing.Short() {
		return // it skips at once
	}
	start := time.Now()
	e2eAdmission.enter(weight)
	t.Cleanup(e2eAdmission.leave)
	// internal/testsummary reads this line (its admissionWait) to leave
	// the wait out of the test's time in .ci/run's slowest tests
	t.Logf("admission: waited %.1fs for a slot", time.Since(start).Seconds())
}

// TestAdmissionStartsLongTestsFirst: of the applicants that arrive
// together, the long ones are admitted first, and never more than the
// limit run at once.
func TestAdmissionStartsLongTestsFirst(t *testing.T) {
	a := newAdmission(2)
	var mu sync.Mutex
	var order []string
	running, peak := 0, 0
	var wg sync.WaitGroup
	for _, long := range []bool{false, false, true, false, true, false} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			weight := 0
			if long {
				weight = 1
			}
			a.enter(weight)
			mu.Lock()
			running++
			peak = max(peak, running)
			kind := "short"
			if long {
				kind = "long"
			}
			order = append(order, kind)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			running--
			mu.Unlock()
			a.leave()
		}()
	}
	wg.Wait()
	if order[0] != "long" || order[1] != "long" {
		t.Errorf("admitted in the order %v, want the two long ones first", order)
	}
	if peak > 2 {
		t.Errorf("%d ran at once, want at most 2", peak)
	}
}

// TestAdmissionPastTheFloorWaitsForRoom: below the floor tests start at
// once; past it each needs a reading of its own that the servers have room,
// and a reading of busy servers holds the next test back.
func TestAdmissionPastTheFloorWaitsForRoom(t *testing.T) {
	a := newAdmission(4)
	a.floor, a.every = 1, 10*time.Millisecond
	var mu sync.Mutex
	readings, busy := 0, 3 // the first three readings find the servers busy
	a.probe = func() bool {
		mu.Lock()
		defer mu.Unlock()
		readings++
		return readings > busy
	}
	entered := make(chan int, 4)
	for i := range 4 {
		go func() { a.enter(0); entered <- i }()
	}
	for range 4 {
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatalf("only some tests were admitted: %s", a.summary())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// one test below the floor, then three more, each on a reading of its
	// own after the three busy ones
	if readings != busy+3 {
		t.Errorf("%d readings, want %d (3 busy, then one per test past the floor)", readings, busy+3)
	}
	if a.holds != busy {
		t.Errorf("%d holds, want %d", a.holds, busy)
	}
}

func TestParsePressure(t *testing.T) {
	text := "some avg10=98.86 avg60=98.27 avg300=96.69 total=2506063939\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
	if got, ok := parsePressure(text); !ok || got != 98.86 {
		t.Errorf("parsePressure = %v, %v; want 98.86, true", got, ok)
	}
	for _, bad := range []string{"", "full avg10=1.00", "some avg10=x", "some total=3"} {
		if _, ok := parsePressure(bad); ok {
			t.Errorf("parsePressure(%q) read a figure", bad)
		}
	}
}
