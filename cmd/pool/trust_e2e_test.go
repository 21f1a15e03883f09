package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"pool/internal/sandbox"
)

// TestOutsiderApprovalIsNotAReview: on the real forge, an account with no
// access to the repository approves a fresh PR (the forge lets any signed-in
// account do that on a public repository, and marks it unofficial). The pool
// starts its own reviewer, who requests changes, and nothing is merged.
func TestOutsiderApprovalIsNotAReview(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sb := startSandbox(t, ctx, 1, sandbox.Reviewer(func(string) sandbox.Verdict {
		return sandbox.Verdict{Event: "REQUEST_CHANGES"}
	}))
	n := sb.PRs[0]
	mallory, err := sb.Forge.CreateUser(ctx, "mallory")
	if err != nil {
		t.Fatal(err)
	}
	official, err := sb.Forge.Review(ctx, mallory, sb.Owner, sb.Repo, n, getPR(t, ctx, sb, n).Head.Sha, "APPROVED", "LGTM, ship it")
	if err != nil {
		t.Fatal(err)
	}
	if official {
		t.Fatal("the forge marked an outsider's approval official; the test's premise does not hold")
	}
	bin := buildPool(t)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir()), "--workers", "1")
	pool.wait(t, ctx)

	if prompts := sb.Model.Prompts(); len(prompts) != 1 {
		t.Errorf("reviewer sessions = %d, want 1: the outsider's approval is no review", len(prompts))
	}
	if getPR(t, ctx, sb, n).Merged {
		t.Error("merged on an outsider's approval")
	}
	if strings.Contains(pool.stderr.String(), "merge answered") {
		t.Errorf("the pool called merge:\n%s", pool.stderr.String())
	}
	if !strings.Contains(pool.stdout.String(), "Changes requested: 1") {
		t.Errorf("report:\n%s", pool.stdout.String())
	}
}

// TestProtectionIsTheFloor: the branch protection first requires two
// approvals; the pool's reviewer gives one, and the pool says so once and
// never calls merge. Then the rule asks for one approval and a status
// context nobody has reported: the pool waits. When the context reports
// success, it merges.
func TestProtectionIsTheFloor(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	sb := startSandbox(t, ctx, 0, nil)
	n, head, err := sb.AddPRWithoutCI(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Forge.ProtectBranch(ctx, sb.OwnerToken, sb.Owner, sb.Repo, "main", map[string]any{"required_approvals": 2}); err != nil {
		t.Fatal(err)
	}
	bin := buildPool(t)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir(), "POOL_IDLE_EXIT=0"), "--workers", "1")

	const hold = "Merging is on hold: needs 2 approvals; has 1."
	holdNotes := func() int {
		count := 0
		for _, c := range prComments(t, ctx, sb, n) {
			if strings.HasPrefix(c.Body, hold) {
				count++
			}
		}
		return count
	}
	eventually(t, ctx, "the note that two approvals are needed", func() bool { return holdNotes() > 0 }, pool)
	time.Sleep(8 * time.Second) // eight poll intervals
	if got := holdNotes(); got != 1 {
		t.Errorf("hold notes = %d, want 1", got)
	}
	if strings.Contains(pool.stderr.String(), "merge answered") || getPR(t, ctx, sb, n).Merged {
		t.Fatalf("the pool called merge while the protection refused it:\n%s", pool.stderr.String())
	}

	err = sb.Forge.ProtectBranch(ctx, sb.OwnerToken, sb.Owner, sb.Repo, "main", map[string]any{
		"required_approvals": 1, "enable_status_check": true, "status_check_contexts": []string{"ci/test"}})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "the new rule read", func() bool {
		return strings.Contains(pool.stderr.String(), "required_contexts=[ci/test]")
	}, pool)
	time.Sleep(5 * time.Second)
	if getPR(t, ctx, sb, n).Merged || strings.Contains(pool.stderr.String(), "merge answered") {
		t.Fatal("merged with a required context unreported")
	}
	if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, head, "ci/test", "success", "", "passed"); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "the merge", func() bool { return getPR(t, ctx, sb, n).Merged }, pool)
	if got := len(sb.Model.Prompts()); got != 1 {
		t.Errorf("reviewer sessions = %d, want 1", got)
	}
	if err := pool.cmd.Process.Signal(sigterm); err != nil {
		t.Fatal(err)
	}
	pool.wait(t, ctx)
}
