package clone

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// A merge train's cars (package train) are made here: a car is a merge
// commit of the car ahead (or the base tip) and a PR's approved head, made
// in the bare clone without a work tree (git merge-tree --write-tree, then
// git commit-tree), pushed to a branch of the pool's own for CI, and at
// landing pushed to the PR's own branch, leased on the approved head.

// ErrCarConflict says the PR's approved head does not merge cleanly onto
// the car ahead: the PR cannot ride this train.
var ErrCarConflict = errors.New("clone: the PR does not merge cleanly onto the car ahead")

// ErrLeaseLost says a push to a PR's branch was refused because the branch
// is no longer at the head the pool leased: someone pushed meanwhile, and
// their push stands.
var ErrLeaseLost = errors.New("clone: the branch moved since the pool read it; nothing was pushed")

// MakeCar fetches the base and PR pr's head, and makes the car of pr: a
// merge commit whose first parent is parent (the car ahead, or the base
// tip) and whose second is head (the PR's approved head), with the tree of
// their clean merge. It returns the car's commit; ErrCarConflict when the
// merge conflicts. The same parent and head make the same tree.
func (c *Clone) MakeCar(ctx context.Context, pr int, parent, head string) (string, error) {
	if !fullSHA.MatchString(parent) || !fullSHA.MatchString(head) {
		return "", fmt.Errorf("clone: make the car of #%d: %q or %q is not a commit id", pr, parent, head)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(); err != nil {
		return "", err
	}
	if err := c.fetch(ctx, c.branch, pr); err != nil {
		return "", err
	}
	out, err := c.gitOut(ctx, "merge-tree", "--write-tree", "--no-messages", parent, head)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return "", fmt.Errorf("make the car of #%d: %w", pr, ErrCarConflict)
	case errors.As(err, &exit) && exit.ExitCode() == 129:
		return "", ErrNoMergeTree
	case err != nil:
		return "", fmt.Errorf("clone: make the car of #%d: %w", pr, err)
	}
	tree, _, _ := strings.Cut(out, "\n")
	// "PR 12", not "#12": the forge links a reference in a pushed commit's
	// message to the PR, a timeline entry on it for every car pushed.
	msg := fmt.Sprintf("Merge PR %d (%s) onto %s\n\nA car of the pool's merge train.", pr, head[:12], parent[:12])
	if c.inst != "" {
		msg += "\nMade by pool instance " + c.inst + "."
	}
	car, err := runGitEnv(ctx, "", []string{"-C", c.repoDir(), "commit-tree", tree, "-p", parent, "-p", head, "-m", msg}, c.identEnv())
	if err != nil {
		return "", fmt.Errorf("clone: make the car of #%d: %w", pr, err)
	}
	// A ref keeps the car from git's pruning until it is pushed.
	if err := c.git(ctx, "update-ref", fmt.Sprintf("refs/pool/cars/%d", pr), car); err != nil {
		return "", fmt.Errorf("clone: make the car of #%d: %w", pr, err)
	}
	return car, nil
}

// identEnv names the pool as the car's author and committer: the clone's
// configured identity, or "pool" where none was configured.
func (c *Clone) identEnv() []string {
	name, email := c.ident[0], c.ident[1]
	if name == "" {
		name = "pool"
	}
	if email == "" {
		email = "pool@localhost"
	}
	return []string{"GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + email, "GIT_COMMITTER_NAME=" + name, "GIT_COMMITTER_EMAIL=" + email}
}

// PushCar pushes car to branch (the pool's own, pool-train/<base>/<PR>)
// of the repository, whatever the branch held: a car re-formed replaces
// the one before.
func (c *Clone) PushCar(ctx context.Context, branch, car string) error {
	if !fullSHA.MatchString(car) || !trainBranch(branch) {
		return fmt.Errorf("clone: push car %q to %q: not a car or not a train branch", car, branch)
	}
	return c.push(ctx, "push car "+car[:12]+" to "+branch, "--force", car+":refs/heads/"+branch)
}

// DeleteCar deletes train branch branch; one already gone is no error.
func (c *Clone) DeleteCar(ctx context.Context, branch string) error {
	if !trainBranch(branch) {
		return fmt.Errorf("clone: delete %q: not a train branch", branch)
	}
	err := c.push(ctx, "delete "+branch, ":refs/heads/"+branch)
	if err != nil && strings.Contains(err.Error(), "unable to delete") {
		return nil
	}
	return err
}

// LandCar pushes car to branch, PR pr's own head branch, only if the
// branch is still at lease, the approved head the car merges: a
// fast-forward, as the car descends from it. ErrLeaseLost: the branch
// moved (an author pushed), and nothing was pushed.
func (c *Clone) LandCar(ctx context.Context, pr int, branch, lease, car string) error {
	if !fullSHA.MatchString(car) || !fullSHA.MatchString(lease) || !branchRE.MatchString(branch) || strings.Contains(branch, "..") {
		return fmt.Errorf("clone: push the car of #%d to %q: not a car, a head or a branch to push to", pr, branch)
	}
	ref := "refs/heads/" + branch
	err := c.push(ctx, fmt.Sprintf("push the car of #%d to %s", pr, branch), "--force-with-lease="+ref+":"+lease, car+":"+ref)
	if err != nil && (strings.Contains(err.Error(), "stale info") || strings.Contains(err.Error(), "[rejected]")) {
		return fmt.Errorf("push the car of #%d to %s: %w", pr, branch, ErrLeaseLost)
	}
	return err
}

// push runs git push to the repository with the pool's token, under mu.
// Not --porcelain: that puts a refusal's reason on the standard output,
// and the error carries only the error output.
func (c *Clone) push(ctx context.Context, what string, args ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(); err != nil {
		return err
	}
	all := append([]string{"-C", c.repoDir(), "push", "--no-verify", c.url}, args...)
	if _, err := runGitEnv(ctx, "", all, tokenEnv(c.auth.Password)); err != nil {
		return fmt.Errorf("clone: %s: %w", what, err)
	}
	return nil
}

// trainBranch reports whether branch is one of the pool's train branches.
func trainBranch(branch string) bool {
	return strings.HasPrefix(branch, "pool-train/") && branchRE.MatchString(branch) && !strings.Contains(branch, "..")
}

// BaseTreeIs fetches the base and reports whether its tree is car's: the
// landed tree is the tested one. tip is the base's commit fetched.
func (c *Clone) BaseTreeIs(ctx context.Context, car string) (same bool, tip string, err error) {
	if !fullSHA.MatchString(car) {
		return false, "", fmt.Errorf("clone: compare the base with car %q: not a commit id", car)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(); err != nil {
		return false, "", err
	}
	c.net.Lock() // the base's ref is read after the fetch
	defer c.net.Unlock()
	if err := c.fetchHeld(ctx, c.branch, 0); err != nil {
		return false, "", err
	}
	base := "refs/remotes/origin/" + c.branch
	out, err := c.gitOut(ctx, "rev-parse", base, base+"^{tree}", car+"^{tree}")
	if err != nil {
		return false, "", fmt.Errorf("clone: compare the base with car %s: %w", car[:12], err)
	}
	ids := strings.Fields(out)
	if len(ids) != 3 {
		return false, "", fmt.Errorf("clone: compare the base with car %s: git answered %q", car[:12], out)
	}
	return ids[1] == ids[2], ids[0], nil
}
