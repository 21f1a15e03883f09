package serve

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"pool/forge"
	"pool/internal/retry"
)

// Start-up rides out a forge that fails for a moment (a 502, a reset, a cut
// answer): a step that fails with a retryable error is tried again, up to
// startAttempts times, the wait doubling from startFirstWait up to
// startMaxWait (about 6.5 s in all). A step makes several calls (the account,
// the repository, its protection), and each try makes them all again, so at
// 20 % faulted calls one try in two fails. A forge still failing after that
// stops the start (exit 1, "after a pause"); a permanent error, such as a
// rejected token, stops it at once.
const (
	startAttempts  = 10
	startFirstWait = 100 * time.Millisecond
	startMaxWait   = time.Second
)

// retryStart runs step until it succeeds, fails for good, has been tried
// startAttempts times, or ctx ends, and returns its last error.
func retryStart(ctx context.Context, log *slog.Logger, what string, firstWait time.Duration, retryable func(error) bool, step func() error) error {
	waits := forge.Backoff{Base: firstWait, Max: startMaxWait}
	for attempt := 1; ; attempt++ {
		err := step()
		if err == nil || attempt == startAttempts || !retryable(err) || ctx.Err() != nil {
			return err
		}
		log.Warn("start-up step failed; trying again", "step", what, "attempt", attempt, "err", err)
		if !retry.Wait(ctx, waits.Delay(attempt, 0)) {
			return err
		}
	}
}

// forgeRetryable: a forge error marked retryable (a 5xx, a 429, a broken
// connection, an answer that did not parse), by the one rule (retry.Later).
func forgeRetryable(err error) bool { return retry.Later(err) }

// cloneRetryable: any failed clone but a cancelled one. The token was
// checked just before, so a failure is the forge's or the network's.
func cloneRetryable(err error) bool { return !errors.Is(err, context.Canceled) }
