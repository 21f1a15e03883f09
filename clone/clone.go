// Package clone keeps the pool's isolated git clone of the repository: made
// in a fresh temporary directory, refreshed each cycle, removed on every way
// out. The token authenticates each fetch and is never written into the
// clone's config or remote URL. Every git operation has a deadline, so a
// stalled git endpoint cannot hang the discovery loop.
package clone

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"pool/internal/guard"
)

// deadlines of the git operations; tests shorten them.
var deadlines = struct {
	clone, fetch, reset time.Duration
}{clone: 10 * time.Minute, fetch: 2 * time.Minute, reset: 2 * time.Minute}

// errResetRunning says a reset that overran its deadline still runs.
var errResetRunning = errors.New("clone: the last reset overran its deadline and still runs")

// Options say what to clone and as whom.
type Options struct {
	URL      string // https URL of the repository, without credentials
	Token    string
	Branch   string // the default branch
	GitName  string
	GitEmail string
}

// Clone is one isolated working copy.
type Clone struct {
	Dir    string
	repo   *git.Repository
	auth   *githttp.BasicAuth
	branch string
	// overrun is the result of a reset that overran its deadline, nil when
	// none runs. Refresh is called from one goroutine only.
	overrun <-chan error
}

// New clones into a fresh temporary directory. On error nothing is left behind.
func New(ctx context.Context, opt Options) (*Clone, error) {
	dir, err := os.MkdirTemp("", "pool-clone-")
	if err != nil {
		return nil, fmt.Errorf("clone: make temp dir: %w", err)
	}
	c := &Clone{Dir: dir, branch: opt.Branch, auth: &githttp.BasicAuth{Username: "pool", Password: opt.Token}}
	ctx, cancel := context.WithTimeout(ctx, deadlines.clone)
	defer cancel()
	c.repo, err = git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{
		URL:           opt.URL,
		Auth:          c.auth,
		ReferenceName: plumbing.NewBranchReferenceName(opt.Branch),
		SingleBranch:  true,
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("clone: clone %s: %w", opt.URL, err)
	}
	if err := c.setIdentity(opt.GitName, opt.GitEmail); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

func (c *Clone) setIdentity(name, email string) error {
	if name == "" && email == "" {
		return nil
	}
	cfg, err := c.repo.Config()
	if err != nil {
		return fmt.Errorf("clone: read config: %w", err)
	}
	cfg.User.Name, cfg.User.Email = name, email
	if err := c.repo.SetConfig(cfg); err != nil {
		return fmt.Errorf("clone: set identity: %w", err)
	}
	return nil
}

// Refresh fetches and hard-resets the work tree to the remote default branch.
func (c *Clone) Refresh(ctx context.Context) error {
	if c.overrun != nil {
		select {
		case <-c.overrun:
			c.overrun = nil
		default:
			return errResetRunning
		}
	}
	remoteRef := plumbing.NewRemoteReferenceName("origin", c.branch)
	spec := gitconfig.RefSpec(fmt.Sprintf("+refs/heads/%s:%s", c.branch, remoteRef))
	fetchCtx, cancel := context.WithTimeout(ctx, deadlines.fetch)
	defer cancel()
	err := c.repo.FetchContext(fetchCtx, &git.FetchOptions{Auth: c.auth, RefSpecs: []gitconfig.RefSpec{spec}, Force: true})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("clone: fetch: %w", err)
	}
	ref, err := c.repo.Reference(remoteRef, true)
	if err != nil {
		return fmt.Errorf("clone: resolve %s: %w", remoteRef, err)
	}
	wt, err := c.repo.Worktree()
	if err != nil {
		return fmt.Errorf("clone: worktree: %w", err)
	}
	reset := func() error { return wt.Reset(&git.ResetOptions{Commit: ref.Hash(), Mode: git.HardReset}) }
	if err := c.within(ctx, deadlines.reset, reset); err != nil {
		return fmt.Errorf("clone: reset to %s: %w", ref.Hash(), err)
	}
	return nil
}

// within runs op, which takes no context (go-git's reset does not), and
// gives up waiting after d or when ctx ends. An op that overran goes on in
// the background, and Refresh refuses to start until it has finished.
func (c *Clone) within(ctx context.Context, d time.Duration, op func() error) error {
	done := make(chan error, 1)
	guard.Go(ctx, nil, "clone reset", func() { done <- op() })
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		c.overrun = done
		return fmt.Errorf("no answer after %s", d)
	case <-ctx.Done():
		c.overrun = done
		return ctx.Err()
	}
}

// Head is the commit the work tree is at.
func (c *Clone) Head() (string, error) {
	ref, err := c.repo.Head()
	if err != nil {
		return "", fmt.Errorf("clone: head: %w", err)
	}
	return ref.Hash().String(), nil
}

// Remove deletes the clone. It is safe to call more than once.
func (c *Clone) Remove() error {
	if c == nil || c.Dir == "" {
		return nil
	}
	err := os.RemoveAll(c.Dir)
	c.Dir = ""
	return err
}
