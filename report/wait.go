package report

import (
	"context"
	"time"

	"pool/forge"
	"pool/forgejo"
	"pool/internal/retry"
	"pool/lifecycle"
)

// Polling defaults of --wait.
const (
	DefaultInterval = 30 * time.Second
	DefaultCap      = 20 * time.Minute
)

// Wait says how Produce polls: every Interval until the PR settles, for
// at most Cap.
type Wait struct {
	Interval, Cap time.Duration
}

// Produce observes the PR once, or with w until it settles, and builds its
// report under the supervisor's policy p (configs.Config.Policy): the
// report judges by it and lists its rule's reviewers. ownContext is the
// pool's own commit status context, which is no check.
func Produce(ctx context.Context, f Forge, t forge.Target, p lifecycle.Policy, ownContext string, w *Wait) (Report, error) {
	observeOnce := func(ctx context.Context) (Report, error) {
		s, err := observe(ctx, f, t, false, ownContext)
		if err != nil {
			return Report{}, err
		}
		return Build(s, p), nil
	}
	if w == nil {
		return observeOnce(ctx)
	}
	return poller{interval: w.Interval, cap: w.Cap, clock: realClock}.run(ctx, observeOnce)
}

// clock is the time a poller sees; tests replace it.
type clock struct {
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
}

var realClock = clock{now: time.Now, sleep: sleepCtx}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if !retry.Wait(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// poller repeats an observation until it settles or the cap passes.
type poller struct {
	interval, cap time.Duration
	clock         clock
}

// run observes until every check is terminal and every listed reviewer is
// done. At the cap, what is still pending becomes timeout. A PR that cannot
// be read is retried while the failure is transient and the cap allows;
// once the context ends, the last report is returned as it stands.
func (p poller) run(ctx context.Context, observe func(context.Context) (Report, error)) (Report, error) {
	deadline := p.clock.now().Add(p.cap)
	var last Report
	var lastErr error
	have := false
	for {
		r, err := observe(ctx)
		switch {
		case err == nil && r.settled():
			return r, nil
		case err == nil:
			last, have = r, true
		case !forgejo.IsRetryable(err):
			return Report{}, err
		default:
			lastErr = err
		}
		remaining := deadline.Sub(p.clock.now())
		if remaining <= 0 {
			if !have {
				return Report{}, lastErr
			}
			last.timeOut()
			return last, nil
		}
		if err := p.clock.sleep(ctx, min(p.interval, remaining)); err != nil {
			if !have {
				return Report{}, err
			}
			return last, nil
		}
	}
}
