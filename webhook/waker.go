package webhook

import (
	"maps"
	"slices"
	"sync"
)

// maxPending bounds the PRs waiting for a slow wake. Beyond it they are
// merged into one wake(0): a full look covers them all.
const maxPending = 1024

// waker calls wake off the request goroutines. A goroutine runs only while
// wakes are pending, so an idle handler holds none.
type waker struct {
	wake Wake

	mu      sync.Mutex
	pending map[int]struct{} // guarded by mu: PRs not yet handed to wake
	running bool             // guarded by mu: a run goroutine exists
}

func newWaker(wake Wake) *waker {
	return &waker{wake: wake, pending: make(map[int]struct{})}
}

// add queues a wake for pr and returns at once.
func (w *waker) add(pr int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.pending[pr]; !ok && len(w.pending) >= maxPending {
		clear(w.pending)
		pr = 0
	}
	w.pending[pr] = struct{}{}
	if !w.running {
		w.running = true
		go w.run()
	}
}

func (w *waker) run() {
	for batch := w.take(); batch != nil; batch = w.take() {
		for _, pr := range batch {
			w.wake(pr)
		}
	}
}

// take empties the pending set, lowest PR first, or, when it is already
// empty, marks the run goroutine as gone and returns nil.
func (w *waker) take() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) == 0 {
		w.running = false
		return nil
	}
	batch := slices.Sorted(maps.Keys(w.pending))
	clear(w.pending)
	return batch
}
