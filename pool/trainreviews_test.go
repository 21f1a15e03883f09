package pool

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"pool/forge"
)

// TestARequestForChangesFiledWhileATrainLandsStopsItsMerge: PRs 1 and 2
// are approved and ride one train. A human (alice) requests changes on
// PR 1 after the train read its riders, before the merge of its car:
//   - while the train reads the front car's checks, which turn green (the
//     train's decision that PR 1 rides is from turns before);
//   - just after the car's push to PR 1's branch, on the car;
//   - while the landing reads the checks of the car pushed to PR 1's
//     branch, which the forge answers 5 s late (its reviews were read
//     before).
//
// PR 1 is not merged: it leaves the train, and the normal path decides it
// again (changes requested: it waits for a new head). PR 2's car, formed
// again without PR 1, lands. In the first case no car is pushed to PR 1's
// branch either. Before, the first case pushed the car, the second stalled
// the train (the landing car "waits for the forge" for ever), the third
// merged PR 1.
func TestARequestForChangesFiledWhileATrainLandsStopsItsMerge(t *testing.T) {
	for _, when := range []string{"before the landing push", "after the landing push", "during the landing's reads"} {
		t.Run(when, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := outdatedForge(true, 1, 2)
				for _, n := range []int{1, 2} {
					f.review(n, "reviewer", forge.ReviewApproved) // queued in order: PR 1's car is the front car
				}
				f.ciDelay = 3 * time.Second // the cars' CI: the train decided its riders seconds before a landing
				cars := newFakeCars(f)
				var filed atomic.Bool
				f.mu.Lock()
				f.onStatuses = func(sha string) {
					if filed.Load() {
						return
					}
					f.mu.Lock()
					head := f.prs[1].HeadSHA
					pushed := len(f.parents[head]) == 2 // PR 1's head is its car
					green := !f.now().Before(f.ciAt[sha])
					car := len(f.parents[sha]) == 2 && f.parents[sha][1] == head
					f.mu.Unlock()
					switch {
					case when == "before the landing push" && car && green && !pushed:
					case when == "during the landing's reads" && sha == head && pushed:
						time.Sleep(5 * time.Second) // a slow answer: the forge takes the review meanwhile
					default:
						return
					}
					filed.Store(true)
					f.review(1, "alice", forge.ReviewRequestChanges)
				}
				f.mu.Unlock()
				cars.onLand = func(pr int) {
					if when == "after the landing push" && pr == 1 && !filed.Swap(true) {
						f.review(1, "alice", forge.ReviewRequestChanges)
					}
				}
				runTrain(t, f, cars, func() bool { return f.isMerged(2) || f.isMerged(1) })
				if !filed.Load() {
					t.Fatal("the request for changes was never filed")
				}
				if f.isMerged(1) {
					t.Errorf("PR 1 merged after alice requested changes while its car landed; effects %v", f.Effects())
				}
				for _, c := range updatesAndMerges(f) {
					var head string
					if _, err := fmt.Sscanf(c, "#2: merge at %s", &head); err == nil && slices.Contains(cars.holds[head], 1) {
						t.Errorf("%s: PR 2 merged at a car holding PR 1", c)
					}
				}
				pushed := slices.ContainsFunc(f.Effects(), func(e string) bool { return strings.HasPrefix(e, "#1: car ") })
				if when == "before the landing push" && pushed {
					t.Errorf("PR 1's car pushed to its branch after alice requested changes: %v", f.Effects())
				}
			})
		})
	}
}
