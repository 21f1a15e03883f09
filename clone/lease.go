package clone

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A merge train's lease (README, "Merge trains"): at most one pool runs
// the train of a base at a time. The lease is a ref of the repository,
// refs/pool-train-lease/<base>, at a commit of the pool's own with the
// empty tree whose message names the instance that holds it. It is taken,
// renewed and given back by pushes leased on the commit the pool read
// (--force-with-lease), which the forge applies all or nothing: of two
// pools that push on the same old value, one wins. Only an account that
// may push to the repository writes it; it is no branch, so no CI runs on
// it and no branch list shows it.

// leaseRef is the ref of the train lease of base.
func leaseRef(base string) string { return "refs/pool-train-lease/" + base }

// leaseLine opens the message of a lease commit; the holder follows.
const leaseLine = "Merge train lease held by pool instance "

var holderRE = regexp.MustCompile(`^[A-Za-z0-9._:@-]{1,200}$`)

// Lease reads the train lease of base: the lease commit ("" when no pool
// holds it) and the instance its message names.
func (c *Clone) Lease(ctx context.Context, base string) (commit, holder string, err error) {
	if !branchRE.MatchString(base) || strings.Contains(base, "..") {
		return "", "", fmt.Errorf("clone: read the train lease of %q: not a branch", base)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(); err != nil {
		return "", "", err
	}
	ref := leaseRef(base)
	local := "refs/pool/lease/" + base
	_, err = runGitEnv(ctx, "", []string{"-C", c.repoDir(), "fetch", "--no-tags", "--no-write-fetch-head", "--quiet", c.url, "+" + ref + ":" + local}, tokenEnv(c.auth.Password))
	if err != nil && strings.Contains(err.Error(), "couldn't find remote ref") {
		_ = c.git(ctx, "update-ref", "-d", local)
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("clone: read the train lease of %s: %w", base, err)
	}
	out, err := c.gitOut(ctx, "log", "-1", "--format=%H%n%B", local)
	if err != nil {
		return "", "", fmt.Errorf("clone: read the train lease of %s: %w", base, err)
	}
	commit, msg, _ := strings.Cut(out, "\n")
	first, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	holder = strings.TrimSuffix(strings.TrimPrefix(first, leaseLine), ".")
	if !strings.HasPrefix(first, leaseLine) || !holderRE.MatchString(holder) {
		holder = "" // not a lease the pool wrote: a holder nobody is
	}
	return commit, holder, nil
}

// TakeLease writes the train lease of base for holder, a new lease commit
// at now, if the lease is still at expect ("": no lease). It returns the
// lease commit; ErrLeaseLost when the lease moved (another pool took or
// renewed it) and nothing was written.
func (c *Clone) TakeLease(ctx context.Context, base, holder, expect string, now time.Time) (string, error) {
	if !branchRE.MatchString(base) || strings.Contains(base, "..") || !holderRE.MatchString(holder) || (expect != "" && !fullSHA.MatchString(expect)) {
		return "", fmt.Errorf("clone: take the train lease of %q for %q: not a branch, a holder or a commit", base, holder)
	}
	msg := fmt.Sprintf("%s%s.\n\nThe pool's train of %s; written %s.", leaseLine, holder, base, now.UTC().Format(time.RFC3339Nano))
	c.mu.Lock()
	empty, err := c.gitOut(ctx, "hash-object", "-t", "tree", "-w", "/dev/null")
	var commit string
	if err == nil {
		commit, err = runGitEnv(ctx, "", []string{"-C", c.repoDir(), "commit-tree", empty, "-m", msg}, c.identEnv())
	}
	if err == nil {
		err = c.git(ctx, "update-ref", "refs/pool/lease/"+base, commit) // kept from pruning
	}
	c.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("clone: take the train lease of %s: %w", base, err)
	}
	ref := leaseRef(base)
	err = c.push(ctx, "take the train lease of "+base, "--force-with-lease="+ref+":"+expect, commit+":"+ref)
	if lostLease(err) {
		return "", fmt.Errorf("take the train lease of %s: %w", base, ErrLeaseLost)
	}
	return commit, err
}

// DropLease gives the train lease of base back, if it is still at held.
// ErrLeaseLost: another pool holds it now; nothing was changed.
func (c *Clone) DropLease(ctx context.Context, base, held string) error {
	if !branchRE.MatchString(base) || strings.Contains(base, "..") || !fullSHA.MatchString(held) {
		return fmt.Errorf("clone: give back the train lease of %q: not a branch or a commit", base)
	}
	ref := leaseRef(base)
	err := c.push(ctx, "give back the train lease of "+base, "--force-with-lease="+ref+":"+held, ":"+ref)
	if lostLease(err) {
		return fmt.Errorf("give back the train lease of %s: %w", base, ErrLeaseLost)
	}
	return err
}

func lostLease(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "stale info") || strings.Contains(err.Error(), "[rejected]"))
}
