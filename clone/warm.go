package clone

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A session's work tree outlives the session: the next session the clone
// gives a tree to gets a free one, reset to its PR's head, so the agent
// server's instance for that directory (its config, tools and snapshot,
// about a second and a half to start) is ready. The reset leaves nothing of
// the previous session, in the tree or in git's files for it:
//
//   - the tree's .git file and its admin directory (repo.git/worktrees/<name>)
//     are put back as git wrote them: HEAD, gitdir and commondir rewritten,
//     everything else (the index, reflogs, per-tree refs, config.worktree,
//     ORIG_HEAD, an info/ of its own) removed;
//   - the index is read afresh from the commit last checked out and
//     refreshed, so no flag a session set (assume-unchanged, skip-worktree)
//     hides a change;
//   - `git checkout --detach --force <head>` then `git clean -ffdx` restore
//     every tracked file and remove every untracked and ignored one,
//     nested repositories included.
//
// git runs with --git-dir and --work-tree named, never through the tree's
// own .git file. A tree whose reset fails is removed and a new one made.
// The clone does not end processes a session left running: a session can
// write anywhere its user can, which only a separate OS user confines.

// tree is a work tree the clone made in this run, and what git wrote for
// it, to put back at each reset.
type tree struct {
	admin     string      // repo.git/worktrees/<name>
	dotGit    []byte      // the tree's .git file
	mode      os.FileMode // of the files above, as git made them
	gitdir    []byte      // admin/gitdir
	commondir []byte      // admin/commondir
	head      string      // the commit last checked out
	freeSince time.Time
	busy      bool
}

// adminFiles are the files of a tree's admin directory the reset keeps.
var adminFiles = []string{"HEAD", "gitdir", "commondir"}

// TakeTree fetches the default branch and PR pr's head, and returns a work
// tree detached at head that no session uses: a free one, reset, or a new
// one. It fails if head is not the commit the forge has for the PR.
func (c *Clone) TakeTree(ctx context.Context, pr int, head string) (string, error) {
	if !shaRE.MatchString(head) {
		return "", fmt.Errorf("clone: take a work tree for #%d: %q is not a commit id", pr, head)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(); err != nil {
		return "", err
	}
	if err := c.fetch(ctx, c.baseSpec(), prSpec(pr)); err != nil {
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
	return c.newTree(ctx, pr, head)
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

// newTree adds a work tree at head and records what git wrote for it.
// Callers hold mu.
func (c *Clone) newTree(ctx context.Context, pr int, head string) (string, error) {
	dir, err := c.addTree(ctx, pr, head)
	if err != nil {
		return "", err
	}
	t, err := c.record(dir)
	if err != nil {
		c.removeTree(ctx, dir)
		return "", fmt.Errorf("clone: add work tree for #%d: %w", pr, err)
	}
	t.busy, t.head = true, head
	if c.trees == nil {
		c.trees = map[string]*tree{}
	}
	c.trees[dir] = t
	return dir, nil
}

// record reads what git wrote for a new work tree.
func (c *Clone) record(dir string) (*tree, error) {
	dotGit, err := os.ReadFile(filepath.Join(dir, ".git"))
	if err != nil {
		return nil, err
	}
	admin, ok := strings.CutPrefix(strings.TrimSpace(string(dotGit)), "gitdir: ")
	if !ok || filepath.Dir(admin) != filepath.Join(c.repoDir(), "worktrees") {
		return nil, fmt.Errorf("unexpected .git file in %s: %q", dir, dotGit)
	}
	fi, err := os.Lstat(filepath.Join(dir, ".git"))
	if err != nil {
		return nil, err
	}
	t := &tree{admin: admin, dotGit: dotGit, mode: fi.Mode().Perm()}
	if t.gitdir, err = os.ReadFile(filepath.Join(admin, "gitdir")); err != nil {
		return nil, err
	}
	if t.commondir, err = os.ReadFile(filepath.Join(admin, "commondir")); err != nil {
		return nil, err
	}
	return t, nil
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
	return true, nil
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
	if err := c.restoreAdmin(dir, t); err != nil {
		return err
	}
	steps := [][]string{
		{"read-tree", t.head},
		{"update-index", "-q", "--refresh"},
		{"checkout", "--quiet", "--detach", "--force", head},
		{"clean", "-ffdxq"},
	}
	for _, args := range steps {
		if _, err := c.gitIn(ctx, dir, t.admin, args...); err != nil {
			return fmt.Errorf("clone: reset work tree %s: %w", dir, err)
		}
	}
	return nil
}

// restoreAdmin puts the tree's .git file and admin directory back as git
// wrote them, HEAD at the commit last checked out, and removes everything
// else from the admin directory.
func (c *Clone) restoreAdmin(dir string, t *tree) error {
	for _, d := range []string{dir, t.admin} {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			return fmt.Errorf("clone: reset work tree %s: %s is not a directory", dir, d)
		}
	}
	entries, err := os.ReadDir(t.admin)
	if err != nil {
		return fmt.Errorf("clone: reset work tree %s: %w", dir, err)
	}
	var errs []error
	for _, e := range entries {
		if !slices.Contains(adminFiles, e.Name()) {
			errs = append(errs, os.RemoveAll(filepath.Join(t.admin, e.Name())))
		}
	}
	errs = append(errs,
		os.RemoveAll(filepath.Join(dir, ".git")),
		putBack(filepath.Join(dir, ".git"), t.dotGit, t.mode),
		putBack(filepath.Join(t.admin, "gitdir"), t.gitdir, t.mode),
		putBack(filepath.Join(t.admin, "commondir"), t.commondir, t.mode),
		putBack(filepath.Join(t.admin, "HEAD"), []byte(t.head+"\n"), t.mode))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clone: reset work tree %s: %w", dir, err)
	}
	return nil
}

// putBack replaces path whole with data, keeping its mode if it has one
// (git's, as the umask made it), else with mode.
func putBack(path string, data []byte, mode os.FileMode) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		if got, err := os.ReadFile(path); err == nil && bytes.Equal(got, data) {
			return nil
		}
		mode = fi.Mode().Perm()
	}
	tmp := path + ".pool-tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
