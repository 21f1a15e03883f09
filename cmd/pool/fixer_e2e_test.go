package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"pool/deploy"
	"pool/internal/sandbox"
)

// TestFailingCheckGetsOneFixer tells the fixer story on the real forge and
// agent server: the reviewer approves, the required check fails on that
// head, the pool starts one fixer session, the fixer pushes a commit, the
// new head is reviewed again, its check passes, and the pool merges it:
// three sessions in all.
func TestFailingCheckGetsOneFixer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	sb := startSandbox(t, ctx, 0, nil)
	n, first, err := sb.AddPRWithoutCI(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	sb.Model.SetScript(sandbox.Fixer(sandbox.Reviewer(sandbox.Approve)))
	const ci = "ci / test"
	if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, first, ci, "failure", "http://ci.invalid/run/1", "2 tests failed"); err != nil {
		t.Fatal(err)
	}
	bin := buildPool(t)
	// The shipped fixer variant: the reviewer's permissions, plus edits in
	// its work tree, commits and pool-review push.
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir()), "--workers", "1", "--agent", deploy.Fixer)

	// The stand-in CI: a head pushed by the fixer passes.
	var fixed string
	eventually(t, ctx, "a new head pushed by the fixer", func() bool {
		fixed = getPR(t, ctx, sb, n).Head.Sha
		return fixed != first
	}, pool)
	if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, fixed, ci, "success", "http://ci.invalid/run/2", "passed"); err != nil {
		t.Fatal(err)
	}
	pool.wait(t, ctx)

	final := getPR(t, ctx, sb, n)
	if !final.Merged || final.Head.Sha != fixed {
		t.Fatalf("merged=%v at %s, want merged at the fixer's head %s", final.Merged, final.Head.Sha, fixed)
	}
	var fixers, reviews []string
	for _, p := range sb.Model.Prompts() {
		_, _, head, _ := sandbox.PromptTarget(p)
		if strings.Contains(p, sandbox.FixerCue) {
			fixers = append(fixers, head)
			if !strings.Contains(p, "http://ci.invalid/run/1") || !strings.Contains(p, "2 tests failed") {
				t.Errorf("the fixer prompt lacks the failing check's URL or text:\n%s", p)
			}
		} else {
			reviews = append(reviews, head)
		}
	}
	if len(fixers) != 1 || fixers[0] != first {
		t.Errorf("fixer sessions at heads %v, want exactly one at the failing head %s", fixers, first)
	}
	if fmt.Sprint(reviews) != fmt.Sprint([]string{first, fixed}) {
		t.Errorf("review sessions at heads %v, want one at %s, then one at %s", reviews, first, fixed)
	}
	t.Logf("figure: sessions for the fixer story (review, fixer, re-review): %d", len(sb.Model.Prompts()))
	if got := len(sb.Model.Prompts()); got != 3 {
		t.Errorf("sessions = %d, want 3", got)
	}
	if !strings.Contains(pool.stdout.String(), "CI_FIXES_ATTEMPTED: 1") {
		t.Errorf("report:\n%s", pool.stdout.String())
	}
}
