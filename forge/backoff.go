package forge

import (
	"math"
	"time"
)

// Backoff shapes the waits before the next try after consecutive failures:
// exponential, capped, and shortened by jitter so that many clients that
// failed together do not retry in step. It is pure: the caller supplies the
// random number, so tests and deterministic callers (the lifecycle decision)
// pass a fixed one.
type Backoff struct {
	Base time.Duration // the wait after the first failure
	Max  time.Duration // no wait is longer; 0: no cap
	// Jitter is the largest fraction of a wait taken off at random: 0 for
	// none, 0.25 for up to a quarter. It is clamped to [0, 1].
	Jitter float64
}

// Delay is the wait after n consecutive failures: Base for the first,
// doubled for each one after, capped at Max, then shortened by
// Jitter × r of itself, where r in [0, 1) comes from the caller's random
// source (rand.Float64). n < 1 or Base <= 0 gives 0.
func (p Backoff) Delay(n int, r float64) time.Duration {
	if n < 1 || p.Base <= 0 {
		return 0
	}
	d := p.Base
	for i := 1; i < n && d <= math.MaxInt64/2 && (p.Max <= 0 || d < p.Max); i++ {
		d *= 2
	}
	if p.Max > 0 {
		d = min(d, p.Max)
	}
	cut := min(max(p.Jitter, 0), 1) * min(max(r, 0), 1)
	return d - time.Duration(cut*float64(d))
}

// DelayAtLeast is Delay, or the wait a server asked for (an HTTP
// Retry-After) when that is longer, capped at Max.
func (p Backoff) DelayAtLeast(n int, r float64, asked time.Duration) time.Duration {
	d := p.Delay(n, r)
	if p.Max > 0 {
		asked = min(asked, p.Max)
	}
	return max(d, asked)
}
