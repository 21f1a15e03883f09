package pool

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"pool/forgejo"
)

// Start-up rides out a forge that fails for a moment (a 502, a reset, a cut
// answer): a step that fails with a retryable error is tried again, up to
// startAttempts times, the wait doubling from startFirstWait (about 3 s in
// all). A forge still failing after that stops the start (exit 1, "after a
// pause"); a permanent error, such as a rejected token, stops it at once.
const (
	startAttempts  = 5
	startFirstWait = 200 * time.Millisecond
)

// retryStart runs step until it succeeds, fails for good, has been tried
// startAttempts times, or ctx ends, and returns its last error.
func retryStart(ctx context.Context, log *slog.Logger, what string, firstWait time.Duration, retryable func(error) bool, step func() error) error {
	wait := firstWait
	for attempt := 1; ; attempt++ {
		err := step()
		if err == nil || attempt == startAttempts || !retryable(err) || ctx.Err() != nil {
			return err
		}
		log.Warn("start-up step failed; trying again", "step", what, "attempt", attempt, "err", err)
		if !sleep(ctx, wait) {
			return err
		}
		wait *= 2
	}
}

// forgeRetryable: a forge error marked retryable (a 5xx, a 429, a broken
// connection, an answer that did not parse).
func forgeRetryable(err error) bool {
	var fe *forgejo.Error
	return errors.As(err, &fe) && fe.Retryable
}

// cloneRetryable: any failed clone but a cancelled one. The token was
// checked just before, so a failure is the forge's or the network's.
func cloneRetryable(err error) bool { return !errors.Is(err, context.Canceled) }
