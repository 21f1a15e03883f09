package clone

import (
	"context"
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
// pool's objects and writes only into the work tree's own .git.
//
// The pool never runs git on a .git a session had: a new tree's is made
// while the tree is the pool's alone, and a reset (warm.go) makes a fresh
// one in a directory of the pool's (stage) and puts it in place of the
// session's.

// checkOut makes dir, a new empty directory only the pool can enter, a
// repository at head. Callers hold mu.
func (c *Clone) checkOut(ctx context.Context, dir, head string) error {
	gitDir := filepath.Join(dir, ".git")
	if err := c.makeGitDir(ctx, gitDir); err != nil {
		return err
	}
	_, err := c.gitIn(ctx, dir, gitDir, "checkout", "--quiet", "--detach", head)
	return err
}

// makeGitDir makes gitDir a new git directory for a work tree: no hooks,
// repo.git's objects as alternates, the base branch as
// refs/remotes/origin/<base> (the reviewer diffs against it), the commit
// identity, and links as plain files, as the pool checks them out
// (gitSafeArgs): the session's git then sees no change in them, and its
// commits keep them links. Callers hold mu.
func (c *Clone) makeGitDir(ctx context.Context, gitDir string) error {
	if _, err := runGit(ctx, "", []string{"init", "--quiet", "--bare", "--template=", gitDir}); err != nil {
		return err
	}
	objects, err := filepath.Abs(filepath.Join(c.repoDir(), "objects"))
	if err != nil {
		return err
	}
	alternates := filepath.Join(gitDir, "objects", "info", "alternates")
	if err := os.MkdirAll(filepath.Dir(alternates), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(alternates, []byte(objects+"\n"), 0o600); err != nil {
		return err
	}
	base, err := c.baseHead()
	if err != nil {
		return err
	}
	settings := [][]string{{"config", "core.bare", "false"}, {"config", "core.symlinks", "false"}, {"update-ref", "refs/remotes/origin/" + c.branch, base}}
	for i, key := range []string{"user.name", "user.email"} {
		if c.ident[i] != "" {
			settings = append(settings, []string{"config", key, c.ident[i]})
		}
	}
	for _, args := range settings {
		if _, err := runGit(ctx, "", append([]string{"--git-dir=" + gitDir}, args...)); err != nil {
			return err
		}
	}
	return nil
}
