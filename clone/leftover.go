package clone

import (
	"context"
	"fmt"
	"time"

	"pool/internal/reap"
)

// leftoverGrace is how long a process a session left in its tree has to
// end on SIGTERM before it gets SIGKILL.
const leftoverGrace = 2 * time.Second

// reaperTimeout bounds a request to the reaper helper.
const reaperTimeout = time.Minute

// endLeftovers ends the processes a session left running in work tree dir
// (package reap: those no live process outside the tree started, such as
// a `nohup cmd &` whose shell is gone), and logs them. Where the agent
// server runs as a user of its own, the pool may neither see nor signal its
// processes unless it runs as root: the helper at Options.Reaper, running
// as that user, does it; without one the pool says once that it cannot.
// A helper that does not answer is logged and does not stop the tree's
// reset. Callers hold mu.
func (c *Clone) endLeftovers(ctx context.Context, dir string) error {
	if c.reaper != "" {
		lines, err := reap.Ask(ctx, c.reaper, dir, reaperTimeout)
		if len(lines) > 0 {
			c.log.Warn("the reaper ended processes a session left in its work tree", "dir", dir,
				"count", len(lines), "ended", fmt.Sprint(firstOf(lines)))
		}
		if err != nil {
			c.log.Warn("asking the reaper to end the processes left in a work tree failed", "dir", dir, "err", err)
		}
	}
	res, err := reap.Tree(ctx, dir, leftoverGrace, c.group)
	if len(res.Ended) > 0 {
		c.log.Warn("ended processes a session left in its work tree", "dir", dir, "count", len(res.Ended),
			"ended", fmt.Sprint(firstOf(res.Ended)), "killed_after_grace", fmt.Sprint(firstOf(res.Killed)))
	}
	if res.Hidden > 0 && c.reaper == "" && !c.blind {
		c.blind = true
		c.log.Warn("the pool cannot look into the processes of the work trees' group (another user's), and has no reaper "+
			"(agent.reaper_socket): processes a session leaves in its work tree are not ended (docs/design.md, Work trees)", "hidden", res.Hidden)
	}
	return err
}

// leftoversLogged bounds how many of the processes a session left are named
// in the log: the tree's code decides how many there are (a fork loop).
const leftoversLogged = 20

func firstOf[T any](all []T) []T { return all[:min(len(all), leftoversLogged)] }
