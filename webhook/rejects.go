package webhook

import (
	"sync"
	"time"
)

// rejectLogEvery is how often, at most, a rejected request is logged:
// anyone who can reach the listener can send them.
const rejectLogEvery = time.Second

// rejects counts the rejected requests and says when one may be logged.
type rejects struct {
	mu     sync.Mutex // guards last and count
	last   time.Time  // when a rejection was last logged
	count  int        // rejections since then, this one included
	logged bool       // one was logged already
}

// add counts a rejection at now, and returns how many were rejected since
// the last one logged (this one included) when this one may be logged,
// else 0.
func (r *rejects) add(now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	if r.logged && now.Sub(r.last) < rejectLogEvery {
		return 0
	}
	n := r.count
	r.last, r.count, r.logged = now, 0, true
	return n
}
