package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"
)

// MergeBehindTheForgesBack leaves a PR as a merge cut off mid-call can: it
// pushes a merge commit of the base branch and the PR's head to the base
// with git, as the owner, so the head is on the base while the forge still
// lists the PR open. It returns the merge commit once the forge has tested
// the PR against the new base (its merge base is then the head).
func (f *Forge) MergeBehindTheForgesBack(ctx context.Context, token, owner, repo, base string, pr int) (string, error) {
	dir, err := os.MkdirTemp("", "sandbox-merge-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	g := gitRunner{dir: dir, env: append(gitAuthEnv(token), "GIT_AUTHOR_NAME=owner", "GIT_AUTHOR_EMAIL=owner@example.com",
		"GIT_COMMITTER_NAME=owner", "GIT_COMMITTER_EMAIL=owner@example.com")}
	remote := fmt.Sprintf("%s/%s/%s.git", f.URL, owner, repo)
	steps := [][]string{
		{"init", "-q", "--bare"},
		{"fetch", "-q", remote, fmt.Sprintf("+refs/heads/%s:refs/heads/base", base), fmt.Sprintf("+refs/pull/%d/head:refs/heads/head", pr)},
	}
	for _, args := range steps {
		if _, err := g.run(ctx, nil, args...); err != nil {
			return "", fmt.Errorf("sandbox: merge #%d behind the forge's back: %w", pr, err)
		}
	}
	// The head branched from the base's tip: its tree is the merge's.
	merge, err := g.run(ctx, nil, "commit-tree", "head^{tree}", "-p", "base", "-p", "head", "-m", fmt.Sprintf("Merge PR #%d", pr))
	if err != nil {
		return "", fmt.Errorf("sandbox: merge #%d behind the forge's back: %w", pr, err)
	}
	if _, err := g.run(ctx, nil, "push", "-q", remote, merge+":refs/heads/"+base); err != nil {
		return "", fmt.Errorf("sandbox: merge #%d behind the forge's back: %w", pr, err)
	}
	head, err := g.run(ctx, nil, "rev-parse", "head")
	if err != nil {
		return "", err
	}
	return merge, f.awaitMergeBase(ctx, token, owner, repo, pr, head)
}

// awaitMergeBase waits until the forge reads PR pr's merge base as want.
func (f *Forge) awaitMergeBase(ctx context.Context, token, owner, repo string, pr int, want string) error {
	for {
		var got struct {
			MergeBase string `json:"merge_base"`
		}
		if _, err := f.Do(ctx, token, http.MethodGet, fmt.Sprintf("/repos/%s/%s/pulls/%d", owner, repo, pr), nil, &got); err != nil {
			return err
		}
		if got.MergeBase == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sandbox: the forge never tested #%d against the new base (merge base %s): %w", pr, got.MergeBase, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
