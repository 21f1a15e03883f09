package serve

import (
	"slices"
	"testing"

	"pool/pool"
)

func TestMergeTargetsKeepsEachRepositoryOnce(t *testing.T) {
	got := mergeTargets([]string{"x/y", "acme/a"}, []string{"ACME/A", "acme/b"})
	if want := []string{"x/y", "acme/a", "acme/b"}; !slices.Equal(got, want) {
		t.Errorf("mergeTargets = %v, want %v", got, want)
	}
}

// TestPoolsTakeFullListingTurns: the pools of a process take consecutive
// phases; with more repositories than pool.FullListEvery, one turn per
// repository, so that a round holds one full listing at most.
func TestPoolsTakeFullListingTurns(t *testing.T) {
	for _, n := range []int{3, 20, 100} {
		s := &process{listEvery: max(pool.FullListEvery, n)}
		phases := map[int]bool{}
		for range n {
			turn := s.nextTurn("acme")
			if turn.Every != max(pool.FullListEvery, n) || phases[turn.Phase] {
				t.Fatalf("%d repositories: turn %+v (phases so far %v)", n, turn, phases)
			}
			phases[turn.Phase] = true
		}
	}
}
