package clone

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// A work tree is a repository of its own, not a linked work tree of
// repo.git: its .git directory holds its own HEAD, index, refs and config,
// and borrows repo.git's objects through objects/info/alternates. A linked
// work tree would need the agent server's user to read repo.git's config
// (git refuses to run without it) and write beside it (the index, HEAD,
// and, for a fixer's commit, the shared object store, where one session's
// objects would be another's checkout). Here the agent's git reads the
// pool's objects and writes only into the work tree's own .git. The pool
// runs git in a work tree only while it is the pool's alone (checkOut,
// before ShareTree), and never again: it removes a work tree by deleting it.

// checkOut makes dir, a new empty directory only the pool can enter, a
// repository borrowing repo.git's objects, with the base branch as
// refs/remotes/origin/<base> (the reviewer diffs against it) and head
// checked out, detached. Callers hold mu.
func (c *Clone) checkOut(ctx context.Context, dir, head string) error {
	if _, err := runGit(ctx, dir, "init", "--quiet", "--template=", "."); err != nil {
		return err
	}
	objects, err := filepath.Abs(filepath.Join(c.repoDir(), "objects"))
	if err != nil {
		return err
	}
	alternates := filepath.Join(dir, ".git", "objects", "info", "alternates")
	if err := os.MkdirAll(filepath.Dir(alternates), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(alternates, []byte(objects+"\n"), 0o600); err != nil {
		return err
	}
	base, err := c.gitOut(ctx, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+c.branch+"^{commit}")
	if err != nil {
		return fmt.Errorf("read the base branch %s: %w", c.branch, err)
	}
	if _, err := runGit(ctx, dir, "update-ref", "refs/remotes/origin/"+c.branch, base); err != nil {
		return err
	}
	for i, key := range []string{"user.name", "user.email"} {
		if c.ident[i] == "" {
			continue
		}
		if _, err := runGit(ctx, dir, "config", key, c.ident[i]); err != nil {
			return err
		}
	}
	_, err = runGit(ctx, dir, "checkout", "--quiet", "--detach", head)
	return err
}
