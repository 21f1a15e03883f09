package pool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pool/forgejo"
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

// TestTheNextCarIsPushedBeforeTheLandingsMerge: with three green cars,
// the second car is pushed to its PR's branch before the first car's merge
// call, and the third before the second's: the forge tests each PR at its
// car when the base moves, first in its walk of the base's open PRs, instead
// of queueing it again behind the walk (README, "Merge trains"). Each car
// is pushed to its PR's branch once, and all three land at their cars.
func TestTheNextCarIsPushedBeforeTheLandingsMerge(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	cars := newFakeCars(f)
	allGreenAtOnce(f, cars)
	runTrain(t, f, cars, func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) })
	got := pushesAndMerges(f)
	var order []string
	for _, e := range got {
		order = append(order, strings.Fields(e)[0])
	}
	if want := []string{"pushed", "pushed", "merged", "pushed", "merged", "merged"}; !slices.Equal(order, want) {
		t.Errorf("pushes and merges %v, want each next car pushed before the merge ahead: %v", got, want)
	}
	if len(cars.holds[f.base]) != 3 {
		t.Errorf("the base is at %s, holding %v; want the last car, holding all three", f.base, cars.holds[f.base])
	}
}

// TestACarPushedAheadIsTakenBack: the forge refuses the front car's merge
// for good (a pre-receive hook) after the car behind it was pushed to its
// PR's branch. That branch is put back at its approved head, leased on the
// car, so it holds no commit of the refused PR; the refused PR leaves the
// train, the other two land without it, and no merge is at a car holding
// it.
func TestACarPushedAheadIsTakenBack(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	cars := newFakeCars(f)
	allGreenAtOnce(f, cars)
	heads := map[int]string{}
	for _, n := range []int{1, 2, 3} {
		heads[n] = f.prs[n].HeadSHA
	}
	refused := 0
	cars.onLand = func(pr int) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if refused == 0 {
			refused = pr
			f.mergeAnswer[pr] = forgejo.MergeAnswer(409, `{"message":"PushRejected with remote message: pre-receive hook declined"}`)
		}
	}
	runTrain(t, f, cars, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := 0
		for _, pr := range f.prs {
			if pr.Merged {
				n++
			}
		}
		return n == 2
	})
	trail := pushesAndMerges(f)
	back := slices.IndexFunc(trail, func(e string) bool { return strings.HasPrefix(e, "back ") })
	if back < 0 {
		t.Fatalf("pushes and merges %v: no branch put back", trail)
	}
	var ahead int
	fmt.Sscanf(trail[back], "back #%d", &ahead)
	if !slices.Contains(f.Effects(), fmt.Sprintf("#%d: branch back at %s", ahead, heads[ahead])) {
		t.Errorf("effects %v: PR %d's branch not put back at its approved head %s", f.Effects(), ahead, heads[ahead])
	}
	if f.isMerged(refused) {
		t.Errorf("PR %d merged, its merge refused", refused)
	}
	for _, c := range updatesAndMerges(f) {
		var n int
		var head string
		fmt.Sscanf(c, "#%d: merge at %s", &n, &head)
		if n != refused && slices.Contains(cars.holds[head], refused) {
			t.Errorf("%s: merged at a car holding the refused PR %d", c, refused)
		}
	}
	if slices.Contains(cars.holds[f.base], refused) {
		t.Errorf("the base holds the refused PR %d: %v", refused, cars.holds[f.base])
	}
}

// TestACarPushedAheadByAKilledPoolIsTakenBack: the pool is stopped while
// the front car's merge call hangs, after the car behind was pushed to its
// PR's branch; the take-back push dies with the pool. The front PR's merge
// is then refused for good. The pool relaunched on the same store puts
// the branch back at its approved head, leased on the car its track
// records, and the PR lands at a car of its own that does not hold the
// refused PR. (Without the take-back, the relaunched pool waited on that PR
// as an update the forge had not taken in, and it never merged.)
func TestACarPushedAheadByAKilledPoolIsTakenBack(t *testing.T) {
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
	trail := pushesAndMerges(f)
	if len(trail) != 2 || !strings.HasPrefix(trail[1], "pushed ") {
		t.Fatalf("pushes and merges %v, want the front car's landing push and the next car pushed ahead", trail)
	}
	var ahead int
	fmt.Sscanf(trail[1], "pushed #%d", &ahead)
	f.mu.Lock()
	delete(f.hangMerge, front)
	f.mergeAnswer[front] = forgejo.MergeAnswer(409, `{"message":"PushRejected with remote message: pre-receive hook declined"}`)
	f.prs[ahead].MergeBase = f.base
	f.mu.Unlock()
	cars.onLand = nil

	runTrainOn(t, f, cars, st, func() bool { return f.isMerged(ahead) })
	if !slices.Contains(f.Effects(), fmt.Sprintf("#%d: branch back at %s", ahead, heads[ahead])) {
		t.Errorf("effects %v: PR %d's branch not put back at its approved head %s", f.Effects(), ahead, heads[ahead])
	}
	for _, c := range updatesAndMerges(f) {
		var n int
		var head string
		fmt.Sscanf(c, "#%d: merge at %s", &n, &head)
		if n == ahead && slices.Contains(cars.holds[head], front) {
			t.Errorf("%s: PR %d merged at a car holding the refused PR %d", c, ahead, front)
		}
	}
}
