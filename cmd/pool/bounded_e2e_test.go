package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestOutsiderCommentsOverTheAnswerCap: on the real servers, with answers
// capped at 64 KiB, an account with no access to the repository writes
// 90 KB of comments on a PR before the pool starts, more than one answer
// may hold. The pool still reads the PR's comments (in pages, keeping the
// newest), reviews it once and merges it.
func TestOutsiderCommentsOverTheAnswerCap(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 1, nil)
	n := sb.PRs[0]
	token, err := sb.Forge.CreateUser(ctx, "chatty-"+sb.Owner)
	if err != nil {
		t.Fatal(err)
	}
	const comments, each = 30, 3000
	for i := range comments {
		body := fmt.Sprintf("Comment %d: %s", i, strings.Repeat("blah ", each/5))
		if _, err := sb.Forge.Do(ctx, token, "POST", fmt.Sprintf("/repos/%s/%s/issues/%d/comments", sb.Owner, sb.Repo, n),
			map[string]any{"body": body}, nil); err != nil {
			t.Fatal(err)
		}
	}
	bin := buildPool(t)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir()), "--workers", "1", "--max-body", "64KiB")
	pool.wait(t, ctx)

	if !getPR(t, ctx, sb, n).Merged {
		t.Errorf("not merged\nstderr:\n%s", pool.stderr.String())
	}
	if got := len(sb.Model.Prompts()); got != 1 {
		t.Errorf("reviewer sessions = %d, want 1", got)
	}
}
