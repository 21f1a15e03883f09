// Package slots owns the sharing of one process's workers (the sessions
// that may run at once) among the pools of the repositories it serves:
// who may start a session next, fairly, and who to wake when a slot frees.
package slots

import (
	"slices"
	"sync"
)

// Slots shares the pool's workers among the repositories it serves. Each
// repository's discovery loop says how many PRs it has waiting (Want) and
// asks for a slot per PR (Take); a slot goes to the repository, among
// those with PRs waiting and under maxPerRepo, that holds the fewest
// slots, and among equals to the next one in turn after the repository
// served last (round-robin), so a busy repository cannot starve the
// others. Until every repository has said what it wants once, no slot is
// given: the first loop to finish its cycle would otherwise take them all.
//
// A pool of one repository has Slots of one: a slot is free or not.
type Slots struct {
	workers, maxPerRepo int

	mu       sync.Mutex // guards the fields below
	repos    []string   // joined repositories, sorted
	held     map[string]int
	waiting  map[string]int // PRs each repository's last cycle left without a slot
	reported map[string]bool
	wake     map[string]func() // wakes a repository's discovery loop; never blocks
	last     string            // the repository given the last slot
	grants   int               // slots given so far: one who joins later holds no one up
}

// New shares workers slots; maxPerRepo caps one repository (0: no cap).
func New(workers, maxPerRepo int) *Slots {
	return &Slots{workers: workers, maxPerRepo: maxPerRepo, held: map[string]int{}, waiting: map[string]int{},
		reported: map[string]bool{}, wake: map[string]func(){}}
}

// Join adds a repository; wake must not block. One that joins after slots
// were given (an organisation's new repository) holds no one up.
func (s *Slots) Join(repo string, wake func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, found := slices.BinarySearch(s.repos, repo); !found {
		s.repos = slices.Insert(s.repos, i, repo)
	}
	s.wake[repo] = wake
	if s.grants > 0 {
		s.reported[repo] = true
	}
}

// Leave drops a repository that stopped; its slots must have been released.
func (s *Slots) Leave(repo string) {
	s.mu.Lock()
	if i, found := slices.BinarySearch(s.repos, repo); found {
		s.repos = slices.Delete(s.repos, i, i+1)
	}
	delete(s.held, repo)
	delete(s.waiting, repo)
	delete(s.reported, repo)
	delete(s.wake, repo)
	next := s.next("")
	s.mu.Unlock()
	next()
}

// Want records how many PRs repo has waiting for a slot now.
func (s *Slots) Want(repo string, n int) {
	s.mu.Lock()
	s.waiting[repo] = max(n, 0)
	s.reported[repo] = true
	next := s.next(repo)
	s.mu.Unlock()
	next()
}

// Take gives repo a slot if one is free and it is repo's turn. When it is
// another repository's, that one is woken to take it.
func (s *Slots) Take(repo string) bool {
	s.mu.Lock()
	turn := s.turn()
	if turn == repo {
		s.held[repo]++
		s.waiting[repo] = max(s.waiting[repo]-1, 0)
		s.last = repo
		s.grants++
	}
	next := s.next(repo)
	s.mu.Unlock()
	next()
	return turn == repo
}

// Hold counts a slot repo already uses, even past the limit: an adopted
// session runs whatever the count.
func (s *Slots) Hold(repo string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[repo]++
}

// Release frees one of repo's slots and wakes the repository whose turn it
// is, unless that is repo: its pool wakes its own loop.
func (s *Slots) Release(repo string) {
	s.mu.Lock()
	s.held[repo] = max(s.held[repo]-1, 0)
	next := s.next(repo)
	s.mu.Unlock()
	next()
}

// PerRepo is the most slots one repository may hold at once.
func (s *Slots) PerRepo() int {
	if s.maxPerRepo > 0 {
		return min(s.workers, s.maxPerRepo)
	}
	return s.workers
}

// Free is how many slots are free in all.
func (s *Slots) Free() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.workers - s.total()
}

func (s *Slots) total() int {
	n := 0
	for _, h := range s.held {
		n += h
	}
	return n
}

// turn is the repository the next free slot goes to, or "" when none is
// free or no one waits. The caller holds mu.
func (s *Slots) turn() string {
	if s.total() >= s.workers {
		return ""
	}
	if len(s.repos) == 1 {
		return s.repos[0] // alone: a free slot is its own, asked or not
	}
	for _, r := range s.repos {
		if !s.reported[r] {
			return "" // a repository has not said what it wants yet
		}
	}
	best, fewest := "", 0
	start, found := slices.BinarySearch(s.repos, s.last)
	if found {
		start++
	}
	for i := range s.repos {
		r := s.repos[(start+i)%len(s.repos)]
		if s.waiting[r] == 0 || (s.maxPerRepo > 0 && s.held[r] >= s.maxPerRepo) {
			continue
		}
		if best == "" || s.held[r] < fewest {
			best, fewest = r, s.held[r]
		}
	}
	return best
}

// next returns the wake of the repository whose turn it is, to call after
// mu is released; nothing when that is caller, which is at work already.
// The caller holds mu.
func (s *Slots) next(caller string) func() {
	if turn := s.turn(); turn != caller {
		if w := s.wake[turn]; w != nil {
			return w
		}
	}
	return func() {}
}
