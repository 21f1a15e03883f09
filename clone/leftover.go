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

// endLeftovers ends the processes a session left running in work tree dir
// (package reap: those no live process outside the tree started, such as
// a `nohup cmd &` whose shell is gone), and logs them. Where the agent
// server's user is another, the pool can look into its processes only as
// root: it says so once. Callers hold mu.
func (c *Clone) endLeftovers(ctx context.Context, dir string) error {
	res, err := reap.Tree(ctx, dir, leftoverGrace, c.group)
	if len(res.Ended) > 0 {
		c.log.Warn("ended processes a session left in its work tree", "dir", dir,
			"ended", fmt.Sprint(res.Ended), "killed_after_grace", fmt.Sprint(res.Killed))
	}
	if res.Hidden > 0 && !c.blind {
		c.blind = true
		c.log.Warn("the pool cannot look into the processes of the work trees' group (another user's): "+
			"processes a session leaves in its work tree are not ended (README, Work trees)", "hidden", res.Hidden)
	}
	return err
}
