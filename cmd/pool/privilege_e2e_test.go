package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"pool/forgejo"
	"pool/internal/sandbox"
)

// TestReviewerWithReadAccessOnTheWhitelist: on the real forge, the
// reviewer account has read access only, and a place on the approvals
// whitelist of the protected base branch: the documented least-privilege
// setup. Its approval counts (the forge marks it official) and the pool
// merges the PR; its own merge call, made with its token the moment it has
// approved, is refused by the forge.
func TestReviewerWithReadAccessOnTheWhitelist(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 0, nil)
	n, _, err := sb.AddPRWithoutCI(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The forge keeps read-only collaborators of a public repository out of
	// the approvals whitelist (it stores no access row for them: Gitea
	// 1.26, models/git/protected_branch.go, updateApprovalWhitelist), so
	// the setup needs a private repository.
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, http.MethodPatch, fmt.Sprintf("/repos/%s/%s", sb.Owner, sb.Repo), map[string]any{"private": true}, nil); err != nil {
		t.Fatal(err)
	}
	// The shared reviewer account is a write collaborator of every
	// sandbox's repository; on this one it may only read.
	if err := sb.Forge.AddCollaborator(ctx, sb.OwnerToken, sb.Owner, sb.Repo, sb.ReviewerUser, "read"); err != nil {
		t.Fatal(err)
	}
	if err := sb.Forge.ProtectBranch(ctx, sb.OwnerToken, sb.Owner, sb.Repo, "main", map[string]any{
		"required_approvals": 1, "enable_approvals_whitelist": true, "approvals_whitelist_username": []string{sb.ReviewerUser}}); err != nil {
		t.Fatal(err)
	}
	// The pool's account (an admin of the repository) can read the
	// reviewer's permission, which the pool checks at start.
	fc, err := forgejo.New(ctx, sb.Forge.URL, sb.PoolToken, forgejo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if perm, err := fc.Permission(ctx, sb.Owner, sb.Repo, sb.ReviewerUser); err != nil || perm != "read" {
		t.Errorf("the reviewer's permission as the pool reads it: %q, %v; want read", perm, err)
	}
	var mergeOnce sync.Once
	var mergeStatus int
	var mergeErr error
	review := sandbox.Reviewer(sandbox.Approve)
	sb.Model.SetScript(func(prompt string, outputs []string) sandbox.Turn {
		turn := review(prompt, outputs)
		if turn.Text != "" { // approved: now it tries to merge, disobeying the prompt
			mergeOnce.Do(func() {
				mergeStatus, mergeErr = sb.Forge.Do(ctx, sb.ReviewerToken, http.MethodPost,
					fmt.Sprintf("/repos/%s/%s/pulls/%d/merge", sb.Owner, sb.Repo, n), map[string]any{"Do": "merge"}, nil)
			})
		}
		return turn
	})
	bin := buildPool(t)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir()), "--workers", "1", "--reviewers", sb.ReviewerUser)
	pool.wait(t, ctx)

	var reviews []struct {
		State    string `json:"state"`
		Official bool   `json:"official"`
		User     struct {
			Login string `json:"login"`
		} `json:"user"`
	}
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, http.MethodGet, fmt.Sprintf("/repos/%s/%s/pulls/%d/reviews", sb.Owner, sb.Repo, n), nil, &reviews); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(pool.stderr.String(), "the reviewer account could merge") {
		t.Errorf("the pool warned about a reviewer with read access:\n%s", pool.stderr.String())
	}
	official := false
	for _, r := range reviews {
		official = official || (r.User.Login == sb.ReviewerUser && r.State == "APPROVED" && r.Official)
	}
	if !official {
		t.Errorf("the whitelisted reviewer's approval is not official: %+v", reviews)
	}
	if mergeStatus == 0 {
		t.Fatalf("the reviewer's merge call was not made (%v)", mergeErr)
	}
	if mergeErr == nil || mergeStatus == http.StatusOK {
		t.Errorf("the forge let the read-only reviewer merge: HTTP %d", mergeStatus)
	}
	t.Logf("the reviewer's own merge call: HTTP %d: %v", mergeStatus, mergeErr)
	var pr struct {
		Merged   bool `json:"merged"`
		MergedBy struct {
			Login string `json:"login"`
		} `json:"merged_by"`
	}
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, http.MethodGet, fmt.Sprintf("/repos/%s/%s/pulls/%d", sb.Owner, sb.Repo, n), nil, &pr); err != nil {
		t.Fatal(err)
	}
	if !pr.Merged || pr.MergedBy.Login != sb.PoolUser {
		t.Errorf("merged %v by %q, want merged by the pool's account %s\nstderr:\n%s", pr.Merged, pr.MergedBy.Login, sb.PoolUser, pool.stderr.String())
	}
}
