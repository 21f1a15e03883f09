package main

import (
	"sort"
	"sync"
	"testing"
	"time"
)

// admission lets the end-to-end tests start at most limit at a time, the
// long ones first. The testing package releases every parallel test at once
// and starts them in no useful order; a test that runs for minutes and
// starts last would set the length of the whole run.
type admission struct {
	mu      sync.Mutex
	cond    *sync.Cond
	limit   int
	running int
	first   time.Time // the first arrival; admissions start a settle later
	waiting []*applicant
}

type applicant struct{ weight int }

// settle is how long admission waits after the first test arrives, so that
// every test released with it has arrived and the long ones go first.
const settle = 300 * time.Millisecond

func newAdmission(limit int) *admission {
	a := &admission{limit: max(limit, 1)}
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
	for time.Since(a.first) < settle || a.running >= a.limit || a.waiting[0] != me {
		a.cond.Wait()
	}
	a.waiting = a.waiting[1:]
	a.running++
	a.cond.Broadcast() // the next in line may fit too
}

func (a *admission) leave() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.running--
	a.cond.Broadcast()
}

// e2eAdmission admits this binary's end-to-end tests; TestMain sets its limit.
var e2eAdmission = newAdmission(e2eParallel)

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
	e2eAdmission.enter(weight)
	t.Cleanup(e2eAdmission.leave)
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
