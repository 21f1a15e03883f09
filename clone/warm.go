package clone

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"pool/sessionmark"
)

// A session's work tree outlives the session: the next session the clone
// gives a tree to gets a free one, reset to its PR's head, so the agent
// server's instance for that directory (its config, tools and snapshot,
// about a second and a half to start) is ready. The reset leaves nothing of
// the previous session, in the tree or in git's files for it:
//
//   - the tree's .git (the session's: its index, reflogs, refs, config,
//     hooks, objects of its commits) is not used: the pool makes a fresh git
//     directory in a directory of its own (makeGitDir), reads the commit
//     last checked out into its index and refreshes it, so no flag a
//     session set (assume-unchanged, skip-worktree) hides a change;
//   - `git checkout --detach --force <head>` then `git clean -ffdx` with
//     that git directory restore every tracked file and remove every
//     untracked and ignored one, nested repositories included;
//   - the session's .git is deleted, the fresh one put in its place, and
//     the tree shared again (ShareTree).
//
// git runs with --git-dir and --work-tree named, never through the tree's
// own .git. A tree whose reset fails is removed and a new one made. The
// processes a session left running in its tree are ended when the tree is
// given back, again before it is reset, and before it is removed
// (leftover.go). A session can still write anywhere its user can, which
// only a separate OS user confines.

// tree is a work tree the clone made in this run.
type tree struct {
	head      string // the commit last checked out
	freeSince time.Time
	busy      bool
}

// TakeTree fetches the default branch and PR pr's head, and returns a work
// tree detached at head that no session uses: a free one, reset, or a new
// one. It fails if head is not the commit the forge has for the PR. The
// fetch holds net, not mu: other slots take and give back trees
// meanwhile (with mu held across it, slots given PRs at once started
// their sessions 4–5 s apart on a loaded machine).
func (c *Clone) TakeTree(ctx context.Context, pr int, head string) (string, error) {
	if !shaRE.MatchString(head) {
		return "", fmt.Errorf("clone: take a work tree for #%d: %q is not a commit id", pr, head)
	}
	if err := c.fetchPR(ctx, pr); err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(); err != nil {
		return "", err
	}
	for dir := c.warmest(); dir != ""; dir = c.warmest() {
		t := c.trees[dir]
		err := c.reset(ctx, dir, t, head)
		if err == nil {
			t.busy, t.head = true, head
			return dir, nil
		}
		c.log.Warn("resetting a work tree failed; removing it", "dir", dir, "err", err)
		c.retire(ctx, dir)
	}
	return c.newTree(ctx, fmt.Sprintf("#%d", pr), head)
}

// fetchPR fetches the default branch and PR pr's head without holding mu.
func (c *Clone) fetchPR(ctx context.Context, pr int) error {
	c.mu.Lock()
	err := c.check()
	branch := c.branch
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.fetch(ctx, branch, pr)
}

// warmest is the free tree freed last, or "". Callers hold mu.
func (c *Clone) warmest() string {
	best := ""
	for dir, t := range c.trees {
		if !t.busy && (best == "" || t.freeSince.After(c.trees[best].freeSince)) {
			best = dir
		}
	}
	return best
}

// newTree adds a work tree at head, for what, and records it busy.
// Callers hold mu.
func (c *Clone) newTree(ctx context.Context, what, head string) (string, error) {
	dir, err := c.addTree(ctx, what, head)
	if err != nil {
		return "", err
	}
	t := &tree{busy: true, head: head}
	if c.trees == nil {
		c.trees = map[string]*tree{}
	}
	c.trees[dir] = t
	return dir, nil
}

// GiveTree takes back a work tree TakeTree gave, once no session works in
// it any more. It keeps it for the next TakeTree and reports true, unless
// keep free trees are kept already or the clone did not make it in this
// run: then it removes it, and the caller frees the agent server's instance
// for it.
func (c *Clone) GiveTree(ctx context.Context, dir string, keep int) (bool, error) {
	if !c.Owns(dir) {
		return false, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(); err != nil {
		return false, err
	}
	t := c.trees[dir]
	if t == nil || c.free() >= keep {
		delete(c.trees, dir)
		return false, c.removeTree(ctx, dir)
	}
	t.busy, t.freeSince = false, time.Now()
	if err := c.endLeftovers(ctx, dir); err != nil {
		c.log.Warn("ending the processes left in a work tree failed; the reset tries again", "dir", dir, "err", err)
	}
	return true, sessionmark.Remove(dir) // no session works there
}

// free counts the free trees. Callers hold mu.
func (c *Clone) free() int {
	n := 0
	for _, t := range c.trees {
		if !t.busy {
			n++
		}
	}
	return n
}

// RetireTrees removes the free trees freed before idleSince, and returns
// them with those a failed reset removed since the last call: the caller
// frees the agent server's instances for them.
func (c *Clone) RetireTrees(ctx context.Context, idleSince time.Time) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for dir, t := range c.trees {
		if !t.busy && t.freeSince.Before(idleSince) {
			c.retire(ctx, dir)
		}
	}
	out := c.retired
	c.retired = nil
	return out
}

// retire removes a free tree for good. Callers hold mu.
func (c *Clone) retire(ctx context.Context, dir string) {
	delete(c.trees, dir)
	if err := c.removeTree(ctx, dir); err != nil {
		c.log.Warn("removing a work tree failed", "dir", dir, "err", err)
	}
	c.retired = append(c.retired, dir)
}

// reset brings a free tree to head with nothing of its last session left.
// Callers hold mu.
func (c *Clone) reset(ctx context.Context, dir string, t *tree, head string) error {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("clone: reset work tree %s: not a directory", dir)
	}
	if err := c.endLeftovers(ctx, dir); err != nil {
		return fmt.Errorf("clone: reset work tree %s: %w", dir, err)
	}
	stage, err := os.MkdirTemp(c.Dir, "stage-")
	if err != nil {
		return fmt.Errorf("clone: reset work tree %s: %w", dir, err)
	}
	defer os.RemoveAll(stage)
	gitDir := filepath.Join(stage, ".git")
	if err := c.makeGitDir(ctx, gitDir); err != nil {
		return fmt.Errorf("clone: reset work tree %s: %w", dir, err)
	}
	steps := [][]string{
		{"read-tree", t.head},
		{"update-index", "-q", "--refresh"},
		{"checkout", "--quiet", "--detach", "--force", head},
		{"clean", "-ffdxq"},
	}
	for _, args := range steps {
		if _, err := c.gitIn(ctx, dir, gitDir, args...); err != nil {
			return fmt.Errorf("clone: reset work tree %s: %w", dir, err)
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
		return fmt.Errorf("clone: reset work tree %s: %w", dir, err)
	}
	if err := os.Rename(gitDir, filepath.Join(dir, ".git")); err != nil {
		return fmt.Errorf("clone: reset work tree %s: %w", dir, err)
	}
	return c.ShareTree(dir)
}

// Spare trees. A pool starting on agent servers that have never seen its
// work trees has one made per slot, at the default branch's head, and the
// servers' instances for them started (package fleet, Warm) before any PR
// needs them: each slot's first session then finds its tree warm. A tree
// is lent while its instance starts, so that no session works in it
// meanwhile, and given back (GiveTree) to be kept free.

// SpareTree makes a work tree at the default branch's head, as the clone
// last fetched it, and lends it; "" when the clone has most trees already,
// free or lent.
func (c *Clone) SpareTree(ctx context.Context, most int) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.trees) >= most {
		return "", nil
	}
	if err := c.check(); err != nil {
		return "", err
	}
	base, err := c.baseHead()
	if err != nil {
		return "", fmt.Errorf("clone: add a spare work tree: %w", err)
	}
	return c.newTree(ctx, "a spare", base)
}

// FreeTrees are the free work trees, in no order.
func (c *Clone) FreeTrees() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for dir, t := range c.trees {
		if !t.busy {
			out = append(out, dir)
		}
	}
	slices.Sort(out)
	return out
}

// LendTree lends free work tree dir, reset to the default branch's head:
// an instance started for it then reads no PR's files. false: it is not
// free (a session took it), or its reset failed and it was removed.
func (c *Clone) LendTree(ctx context.Context, dir string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.trees[dir]
	if t == nil || t.busy {
		return false, nil
	}
	if err := c.check(); err != nil {
		return false, err
	}
	base, err := c.baseHead()
	if err != nil {
		return false, fmt.Errorf("clone: lend work tree %s: %w", dir, err)
	}
	if err := c.reset(ctx, dir, t, base); err != nil {
		c.retire(ctx, dir)
		return false, err
	}
	t.busy, t.head = true, base
	return true, nil
}

// baseHead is the default branch's commit as the clone last fetched it:
// noted by the fetch, since reading the ref would race the next one, which
// rewrites it in place. Callers hold mu.
func (c *Clone) baseHead() (string, error) {
	if f := c.fetched.Load(); f != nil && f.branch == c.branch {
		return f.commit, nil
	}
	return "", fmt.Errorf("the base branch %s is not fetched yet", c.branch)
}
