// Package retry holds the one rule for whether a failed call is worth
// trying again later (the forge client, the agent client, the pool's start
// and `pool report --wait` all ask it), and the wait before that try.
package retry

import (
	"context"
	"errors"
	"time"
)

// Later reports whether err is worth retrying later. An error decides for
// itself, anywhere in its chain, by a method RetryLater() bool:
// forgejo.Error and agent.Error carry the verdict of the call that failed
// (no answer, a 5xx, a 429: yes; another 4xx, an unreadable or oversized
// answer, a cancelled call: no). Any other error is not worth retrying: the
// default is no, so that a bug, a cancelled context or an answer that does
// not decode never loops.
func Later(err error) bool {
	var m interface{ RetryLater() bool }
	return errors.As(err, &m) && m.RetryLater()
}

// Wait waits d before the next try, or until ctx ends; false if ctx ended.
func Wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
