package clone

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// ErrNoMergeTree says the machine's git cannot compute a merge's tree
// without a work tree (git merge-tree --write-tree needs git 2.38).
var ErrNoMergeTree = errors.New("clone: git cannot compute merge trees (merge-tree --write-tree needs git 2.38 or later)")

// MergeTreeIs fetches the default branch and PR pr's head, and reports
// whether commit's tree is the tree of a clean merge of ours and theirs:
// what the forge's update of the PR's head ours with the base tip theirs
// makes, and nothing more. A merge of them that conflicts is no match.
func (c *Clone) MergeTreeIs(ctx context.Context, pr int, commit, ours, theirs string) (bool, error) {
	for _, id := range []string{commit, ours, theirs} {
		if !shaRE.MatchString(id) {
			return false, fmt.Errorf("clone: merge tree of #%d: %q is not a commit id", pr, id)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(); err != nil {
		return false, err
	}
	if err := c.fetch(ctx, c.branch, pr); err != nil {
		return false, err
	}
	have, err := c.gitOut(ctx, "rev-parse", "--verify", commit+"^{tree}")
	if err != nil {
		return false, fmt.Errorf("clone: merge tree of #%d: read %s: %w", pr, commit, err)
	}
	want, err := c.gitOut(ctx, "merge-tree", "--write-tree", "--no-messages", ours, theirs)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return false, nil // the merge conflicts: the forge made no such merge
	case errors.As(err, &exit) && exit.ExitCode() == 129:
		return false, ErrNoMergeTree // git's usage error: the option is unknown
	case err != nil:
		return false, fmt.Errorf("clone: merge tree of #%d: %w", pr, err)
	}
	tree, _, _ := strings.Cut(want, "\n")
	return tree == have, nil
}
