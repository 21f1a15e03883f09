package slots

import (
	"fmt"
	"slices"
	"testing"
)

// grantAll plays a shared slots through: repositories want what waiting
// says, every free slot goes to whichever repository's take succeeds, and
// the oldest running session ends first. It returns the repositories in
// the order they were given slots, and the most slots one held at once.
func grantAll(t *testing.T, s *Slots, waiting map[string]int) ([]string, map[string]int) {
	t.Helper()
	var repos []string
	for r := range waiting {
		repos = append(repos, r)
		s.Join(r, func() {})
	}
	// The busiest asks first: a first come, first served grant would give
	// it every slot.
	slices.SortFunc(repos, func(a, b string) int { return waiting[b] - waiting[a] })
	for r, n := range waiting {
		s.Want(r, n)
	}
	var order, running []string
	peak := map[string]int{}
	held := map[string]int{}
	for left := sumOf(waiting); left > 0; {
		took := false
		for _, r := range repos {
			if waiting[r] > 0 && s.Take(r) {
				waiting[r]--
				left--
				held[r]++
				peak[r] = max(peak[r], held[r])
				order, running, took = append(order, r), append(running, r), true
				s.Want(r, waiting[r])
				break
			}
		}
		if took {
			continue
		}
		if len(running) == 0 {
			t.Fatalf("no slot given with %d PRs waiting (%v) and none running", left, waiting)
		}
		s.Release(running[0])
		held[running[0]]--
		running = running[1:]
	}
	return order, peak
}

func sumOf(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestSlotsAreFairAcrossRepositories: one repository with 100 waiting PRs
// and nine with one each share 4 slots: every small repository starts
// within the first 12 sessions, and max_per_repo caps the big one.
func TestSlotsAreFairAcrossRepositories(t *testing.T) {
	for _, maxPerRepo := range []int{0, 2} {
		t.Run(fmt.Sprintf("max_per_repo %d", maxPerRepo), func(t *testing.T) {
			waiting := map[string]int{"acme/big": 100}
			for i := 1; i <= 9; i++ {
				waiting[fmt.Sprintf("acme/small-%d", i)] = 1
			}
			order, peak := grantAll(t, New(4, maxPerRepo), waiting)
			if len(order) != 109 {
				t.Fatalf("%d sessions started, want 109", len(order))
			}
			for i := 1; i <= 9; i++ {
				r := fmt.Sprintf("acme/small-%d", i)
				if at := slices.Index(order, r); at < 0 || at >= 12 {
					t.Errorf("%s started as session %d, want among the first 12; order %v", r, at+1, order[:12])
				}
			}
			if maxPerRepo > 0 && peak["acme/big"] > maxPerRepo {
				t.Errorf("acme/big held %d slots at once, cap %d", peak["acme/big"], maxPerRepo)
			}
		})
	}
}

// TestSlotsWaitForEveryRepositorysFirstWord: no slot is given until every
// repository has said what it wants, so the first to ask cannot take all.
func TestSlotsWaitForEveryRepositorysFirstWord(t *testing.T) {
	s := New(2, 0)
	woken := 0
	s.Join("a/a", func() {})
	s.Join("b/b", func() { woken++ })
	s.Want("a/a", 5)
	if s.Take("a/a") {
		t.Fatal("a/a took a slot before b/b said what it wants")
	}
	s.Want("b/b", 1)
	if !s.Take("a/a") {
		t.Fatal("a/a got no slot once both had spoken")
	}
	if s.Take("a/a") {
		t.Fatal("a/a took a second slot while b/b, holding none, waits")
	}
	if woken == 0 {
		t.Error("b/b was not woken for its turn")
	}
	if !s.Take("b/b") {
		t.Fatal("b/b got no slot on its turn")
	}
	if s.Take("a/a") || s.Take("b/b") {
		t.Fatal("a third slot given out of two")
	}
}

// TestSlotsAloneAreJustACount: a pool of one repository gets a free slot
// whenever it asks, as before slots were shared.
func TestSlotsAloneAreJustACount(t *testing.T) {
	s := New(2, 0)
	s.Join("o/r", func() {})
	if !s.Take("o/r") || !s.Take("o/r") || s.Take("o/r") {
		t.Fatal("want exactly two slots")
	}
	s.Release("o/r")
	if !s.Take("o/r") {
		t.Fatal("a released slot was not free again")
	}
}

// TestSlotsLateJoinerHoldsNoOneUp: a repository that joins once slots have
// been given (an organisation's new one, still cloning) does not stop them.
func TestSlotsLateJoinerHoldsNoOneUp(t *testing.T) {
	s := New(2, 0)
	s.Join("a/a", func() {})
	s.Join("b/b", func() {})
	s.Want("a/a", 3)
	s.Want("b/b", 0)
	if !s.Take("a/a") {
		t.Fatal("no first slot")
	}
	s.Join("c/c", func() {})
	if !s.Take("a/a") {
		t.Fatal("a late joiner that has not cycled yet held up the slots")
	}
}
