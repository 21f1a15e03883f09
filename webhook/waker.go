package webhook

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"pool/internal/guard"
)

// maxPending bounds the PRs waiting for a wake. Beyond it they are merged
// into one wake(0): a full look covers them all.
const maxPending = 1024

// minWakeInterval is the least time between two wakes, so that a flood of
// valid deliveries costs at most one discovery cycle a second.
const minWakeInterval = time.Second

// waker calls wake off the request goroutines, at most once per interval:
// what arrives meanwhile is merged into the next wake, never lost. A
// goroutine runs only while wakes are pending (and for one interval after
// the last), so an idle handler holds none.
type waker struct {
	wake  Wake
	log   *slog.Logger
	every time.Duration
	pause func(time.Duration) // time.Sleep; tests hold it

	mu      sync.Mutex
	pending map[int]struct{} // guarded by mu: PRs not yet handed to wake
	running bool             // guarded by mu: a run goroutine exists
}

func newWaker(wake Wake, log *slog.Logger) *waker {
	return &waker{wake: wake, log: log, every: minWakeInterval, pause: time.Sleep, pending: make(map[int]struct{})}
}

// add queues a wake for pr and returns at once. ctx is the request's: it
// carries where a panic of the wake goroutine goes (see guard).
func (w *waker) add(ctx context.Context, pr int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.pending[pr]; !ok && len(w.pending) >= maxPending {
		clear(w.pending)
		pr = 0
	}
	w.pending[pr] = struct{}{}
	if !w.running {
		w.running = true
		guard.Go(ctx, w.log, "webhook waker", w.run)
	}
}

// run wakes once for everything pending, then pauses for the interval;
// while anything came meanwhile, again.
func (w *waker) run() {
	for batch := w.take(); batch != nil; batch = w.take() {
		pr := batch[0]
		if len(batch) > 1 {
			pr = 0 // several PRs: a full look covers them all
		}
		w.wake(pr)
		w.pause(w.every)
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
