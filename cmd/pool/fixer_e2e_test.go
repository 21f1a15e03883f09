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
// head, the pool starts one fixer session, the fixer commits in its work
// tree and stops, the pool pushes the commit, the new head is reviewed
// again, its check passes, and the pool merges it: three sessions in all.
func TestFailingCheckGetsOneFixer(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
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
	// its work tree and commits; no push.
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir()), "--workers", "1", "--agent", deploy.Fixer)

	fixed := mergedAtTheFixersHead(t, ctx, sb, pool, n, first, ci)
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
	if log := pool.stderr.String(); !strings.Contains(log, `msg="pushed the fixer's commits"`) || !strings.Contains(log, "head="+fixed) {
		t.Errorf("the pool's log does not say it pushed %s:\n%s", fixed, log)
	}
}

// noFixerFor runs the pool with the shipped fixer agent (and args) on PR n,
// whose check fails, until its reviewer has approved and a few cycles more
// have passed, and reports the fixer sessions the pool started (its log's
// "session started" lines, and prompts the model saw).
func noFixerFor(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, n int, head string, args ...string) []string {
	t.Helper()
	if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, head, "ci / test", "failure", "http://ci.invalid/run/1", "2 tests failed"); err != nil {
		t.Fatal(err)
	}
	sb.Model.SetScript(sandbox.Fixer(sandbox.Reviewer(sandbox.Approve)))
	bin := buildPool(t)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir(), "POOL_IDLE_EXIT=0"),
		append([]string{"--workers", "1", "--agent", deploy.Fixer}, args...)...)
	eventually(t, ctx, "the reviewer's approval", func() bool { return approvedAt(t, ctx, sb, n, head) }, pool)
	time.Sleep(8 * time.Second) // eight poll intervals: a fixer would have started by now
	if err := pool.cmd.Process.Signal(sigterm); err != nil {
		t.Fatal(err)
	}
	pool.wait(t, ctx)
	var fixers []string
	for _, line := range strings.Split(pool.stderr.String(), "\n") {
		if strings.Contains(line, `msg="session started"`) && strings.Contains(line, "kind=fix") {
			fixers = append(fixers, line)
		}
	}
	for _, p := range sb.Model.Prompts() {
		if strings.Contains(p, sandbox.FixerCue) {
			fixers = append(fixers, p)
		}
	}
	if getPR(t, ctx, sb, n).Merged {
		t.Error("merged with a failing check")
	}
	return fixers
}

// TestForkPRGetsNoFixer: on the real forge, an outsider forks the
// repository and opens a PR from the fork; the reviewer approves, its check
// fails. The pool starts no fixer: it would push to a stranger's repository
// (fixers.forks is off by default).
func TestForkPRGetsNoFixer(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 0, nil)
	outsider := "forker-" + sb.Owner
	token, err := sb.Forge.CreateUser(ctx, outsider)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Forge.Do(ctx, token, "POST", fmt.Sprintf("/repos/%s/%s/forks", sb.Owner, sb.Repo), map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := sb.Forge.CreateBranchWithFile(ctx, token, outsider, sb.Repo, "from-fork", "fork.txt", "from a fork\n"); err != nil {
		t.Fatal(err)
	}
	n, head, err := sb.Forge.CreatePR(ctx, token, sb.Owner, sb.Repo, outsider+":from-fork", "main", "Change from a fork", "")
	if err != nil {
		t.Fatal(err)
	}
	// The outsider is no collaborator: reviews.authors anyone gives the PR its review.
	if fixers := noFixerFor(t, ctx, sb, n, head, "--review-authors", "anyone"); len(fixers) != 0 {
		t.Errorf("%d fixer sessions on a PR from a fork, want none:\n%s", len(fixers), fixers[0])
	}
}

// TestFixersOffStartNone: with fixers.enabled false, an approved PR of the
// repository itself whose check fails gets no fixer.
func TestFixersOffStartNone(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 0, nil)
	n, head, err := sb.AddPRWithoutCI(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if fixers := noFixerFor(t, ctx, sb, n, head, "--fixers=false"); len(fixers) != 0 {
		t.Errorf("%d fixer sessions with fixers off, want none", len(fixers))
	}
}

// mergedAtTheFixersHead waits for a fixer to push a head of PR n other than
// first, passes check ci on it as a stand-in CI would, waits for the pool's
// exit and requires n merged at that head, which it returns.
func mergedAtTheFixersHead(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, pool *poolProc, n int, first, ci string) string {
	t.Helper()
	var fixed string
	eventually(t, ctx, "a new head pushed by the fixer", func() bool {
		fixed = getPR(t, ctx, sb, n).Head.Sha
		return fixed != first
	}, pool)
	if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, fixed, ci, "success", "http://ci.invalid/run/2", "passed"); err != nil {
		t.Fatal(err)
	}
	pool.wait(t, ctx)
	if final := getPR(t, ctx, sb, n); !final.Merged || final.Head.Sha != fixed {
		t.Fatalf("merged=%v at %s, want merged at the fixer's head %s", final.Merged, final.Head.Sha, fixed)
	}
	return fixed
}
