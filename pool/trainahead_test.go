package pool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pool/store"
)

// allGreenAtOnce has no car report until three are formed, then all
// three pass at once: the train lands them one after another. Cars formed
// later report after 30 ms.
func allGreenAtOnce(f *fakeForge, cars *fakeCars) {
	f.ciDelay = time.Hour
	go func() {
		waitFor(context.Background(), func() bool {
			cars.mu.Lock()
			defer cars.mu.Unlock()
			return len(cars.branches) == 3
		})
		cars.mu.Lock()
		defer cars.mu.Unlock()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, car := range cars.branches {
			f.ciAt[car] = f.now()
		}
		f.ciDelay = 30 * time.Millisecond
	}()
}

// pushesAndMerges is the trail's landing pushes, pushes back and merges,
// as "pushed #n", "back #n" and "merged #n".
func pushesAndMerges(f *fakeForge) []string {
	var out []string
	for _, e := range f.readTrail() {
		if strings.HasPrefix(e, "pushed ") || strings.HasPrefix(e, "back ") || strings.HasPrefix(e, "merged ") {
			out = append(out, e)
		}
	}
	return out
}

// TestTheNextCarIsPushedRightAfterTheLandingAhead: with three green
// cars, the second car is pushed to its PR's branch right after the first
// car's merge, before anything else reaches the forge (no read of a rider,
// no car formed: the forge is already testing every open PR of the moved
// base again), and the third right after the second's. Each car is pushed
// to its PR's branch once, and all three land at their cars.
func TestTheNextCarIsPushedRightAfterTheLandingAhead(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	cars := newFakeCars(f)
	allGreenAtOnce(f, cars)
	runTrain(t, f, cars, func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) })
	got := pushesAndMerges(f)
	var order []string
	for _, e := range got {
		order = append(order, strings.Fields(e)[0])
	}
	if want := []string{"pushed", "merged", "pushed", "merged", "pushed", "merged"}; !slices.Equal(order, want) {
		t.Errorf("pushes and merges %v, want each car pushed once: %v", got, want)
	}
	if len(got) == 0 {
		t.Fatalf("no landing push nor merge")
	}
	trail, last := f.readTrail(), got[len(got)-1]
	for i, e := range trail[:len(trail)-1] {
		if strings.HasPrefix(e, "merged ") && e != last && !strings.HasPrefix(trail[i+1], "pushed ") {
			t.Errorf("%s is followed by %s, want the next car's push: trail %v", e, trail[i+1], trail)
		}
	}
	if len(cars.holds[f.base]) != 3 {
		t.Errorf("the base is at %s, holding %v; want the last car, holding all three", f.base, cars.holds[f.base])
	}
}

// TestACarLeftByAKilledPoolIsTakenBack: the pool is stopped while the
// front car's merge call hangs, after its landing push. The pool relaunched
// on the same store puts that PR's branch back at its approved head,
// leased on the car its track records, and the PR lands at a car of that
// head: no reviewer session runs again. (Before, the relaunched pool took
// the car for the PR's approved head, merged it into a car of its own, a
// head no approval counted at, and the PR was reviewed again.)
func TestACarLeftByAKilledPoolIsTakenBack(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	cars := newFakeCars(f)
	allGreenAtOnce(f, cars)
	heads := map[int]string{}
	for _, n := range []int{1, 2, 3} {
		heads[n] = f.prs[n].HeadSHA
	}
	front := 0
	cars.onLand = func(pr int) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if front == 0 {
			front = pr
			f.hangMerge[pr] = true
		}
	}
	st := store.NewMemory()
	runTrainOn(t, f, cars, st, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return front != 0 && f.hung[front] > 0
	})
	f.mu.Lock()
	delete(f.hangMerge, front)
	f.mu.Unlock()
	cars.onLand = nil

	a := runTrainOn(t, f, cars, st, func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) })
	if !slices.Contains(f.Effects(), fmt.Sprintf("#%d: branch back at %s", front, heads[front])) {
		t.Errorf("effects %v: PR %d's branch not put back at its approved head %s", f.Effects(), front, heads[front])
	}
	if _, prompts, _ := a.count(); prompts != 0 {
		t.Errorf("%d reviewer sessions in the relaunched pool, want none: the approvals carry over to the cars", prompts)
	}
	for _, c := range updatesAndMerges(f) {
		var n int
		var head string
		fmt.Sscanf(c, "#%d: merge at %s", &n, &head)
		if n == front && f.isMerged(n) && len(f.parents[head]) == 2 && f.parents[head][1] != heads[front] {
			t.Errorf("%s: PR %d merged at a car of %s, want a car of its approved head %s", c, n, f.parents[head][1], heads[front])
		}
	}
}
