package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pool/internal/sandbox"
)

// TestOutsiderApprovalIsNotAReview: on the real forge, an account with no
// access to the repository approves a fresh PR (the forge lets any signed-in
// account do that on a public repository, and marks it unofficial). The pool
// starts its own reviewer, who requests changes, and nothing is merged.
func TestOutsiderApprovalIsNotAReview(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
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
	parallel(t)
	ctx := testContext(t)
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
	eventually(t, ctx, "the merge", func() bool { return isMerged(t, ctx, sb, n) }, pool)
	if got := len(sb.Model.Prompts()); got != 1 {
		t.Errorf("reviewer sessions = %d, want 1", got)
	}
	if err := pool.cmd.Process.Signal(sigterm); err != nil {
		t.Fatal(err)
	}
	pool.wait(t, ctx)
}

// stopClauseRE reads the prompt's rule that tells the reviewer when to stop
// because the head is already reviewed.
var stopClauseRE = regexp.MustCompile(`If the head commit [0-9a-f]+ already carries (.*?), stop`)

// literalReviewer is a reviewer that obeys the prompt's stop rule to the
// letter: its first call reads the PR with the pr tool, and it stops,
// reporting "commented", if a review by another account on the head is one
// the rule names (one the forge marks official if the rule says so, any
// review by another account if it does not). Otherwise it reviews as
// review does. before runs once, at its first turn (the claim is posted).
func literalReviewer(before func(), review sandbox.Script) sandbox.Script {
	var once sync.Once
	return func(prompt string, outputs []string) sandbox.Turn {
		_, _, head, ok := sandbox.PromptTarget(prompt)
		if !ok {
			return sandbox.Turn{Text: "I cannot tell which PR to review."}
		}
		if len(outputs) == 0 {
			once.Do(before)
			return sandbox.WhereTurn
		}
		if len(outputs) == 1 {
			m := stopClauseRE.FindStringSubmatch(prompt)
			if m == nil {
				return sandbox.Turn{Text: "The prompt has no stop rule."}
			}
			officialOnly := strings.Contains(m[1], "official")
			var seen struct {
				Reviews []struct {
					Author, State string
					Commit        string `json:"commit_id"`
					Official      bool
				}
			}
			if err := json.Unmarshal([]byte(outputs[0]), &seen); err != nil {
				return sandbox.Turn{Text: "the pr tool gave no JSON: " + err.Error()}
			}
			for _, r := range seen.Reviews {
				if r.Commit == head && r.Author != "reviewer" && (r.Official || !officialOnly) {
					return sandbox.Turn{Text: fmt.Sprintf("The head already carries a review by %s; stopping as told.\n"+
						`REVIEW-RESULT: {"decision": "commented", "merge_status": "none"}`, r.Author)}
				}
			}
		}
		return review(prompt, outputs[1:])
	}
}

// TestOutsiderApprovalAfterTheClaimParksNothing: on the real servers, an
// account with no access to the repository approves the head right after
// the pool claims the PR, before its reviewer looks. The reviewer obeys the
// prompt's stop rule literally; the rule speaks only of reviews that count,
// so it reviews, and the PR merges. Had it stopped, the pool would still
// not take the outsider's approval for the session's outcome. No hold note.
func TestOutsiderApprovalAfterTheClaimParksNothing(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 1, nil)
	n := sb.PRs[0]
	outsider := "outsider-" + sb.Owner
	token, err := sb.Forge.CreateUser(ctx, outsider)
	if err != nil {
		t.Fatal(err)
	}
	var official atomic.Bool
	approve := func() {
		claimed := false
		for _, c := range prComments(t, ctx, sb, n) {
			claimed = claimed || strings.Contains(c.Body, "Review claimed by")
		}
		if !claimed {
			t.Errorf("the reviewer ran before the claim was posted")
		}
		ok, err := sb.Forge.Review(ctx, token, sb.Owner, sb.Repo, n, getPR(t, ctx, sb, n).Head.Sha, "APPROVED", "LGTM, ship it")
		if err != nil {
			t.Errorf("the outsider's approval: %v", err)
		}
		official.Store(ok)
	}
	sb.Model.SetScript(literalReviewer(approve, sandbox.Reviewer(sandbox.Approve)))
	bin := buildPool(t)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir()), "--workers", "1")
	pool.wait(t, ctx)

	if official.Load() {
		t.Fatal("the forge marked an outsider's approval official; the test's premise does not hold")
	}
	if len(sb.Model.Prompts()) == 0 {
		t.Fatal("no reviewer session ran")
	}
	if !getPR(t, ctx, sb, n).Merged {
		t.Errorf("not merged after an outsider's approval\nstderr:\n%s", pool.stderr.String())
	}
	for _, c := range prComments(t, ctx, sb, n) {
		if strings.HasPrefix(c.Body, "Merging is on hold") {
			t.Errorf("hold note: %s", c.Body)
		}
	}
	var reviews []struct {
		State string `json:"state"`
		User  struct {
			Login string `json:"login"`
		} `json:"user"`
	}
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/pulls/%d/reviews", sb.Owner, sb.Repo, n), nil, &reviews); err != nil {
		t.Fatal(err)
	}
	approvals := 0
	for _, r := range reviews {
		if r.State == "APPROVED" && r.User.Login == sb.ReviewerUser {
			approvals++
		}
	}
	if approvals != 1 {
		t.Errorf("approvals by the pool's reviewer = %d, want 1", approvals)
	}
}

// TestARequestOnTheMergedParentStandsOnTheForge: carol, a listed human
// reviewer with write access, requests changes on the PR's head A; then
// main moves and the PR's branch is updated by merge through the forge's
// own update (as another pool, or the author's "update branch" button,
// does), making head U. The forge finds the PR's content unchanged and
// leaves carol's request unmarked stale (the premise, checked). The pool,
// which made no update itself, weighs carol's request for U: it starts no
// reviewer session on U and merges nothing. Before, it weighed U's own
// reviews, none, and reviewed U as a fresh head.
func TestARequestOnTheMergedParentStandsOnTheForge(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 1, nil)
	n := sb.PRs[0]
	name := fmt.Sprintf("carol%d", time.Now().UnixNano()%1_000_000) // the forge may be shared: a name of its own
	carol, err := sb.Forge.CreateUser(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Forge.AddCollaborator(ctx, sb.OwnerToken, sb.Owner, sb.Repo, name, "write"); err != nil {
		t.Fatal(err)
	}
	a := getPR(t, ctx, sb, n).Head.Sha
	if official, err := sb.Forge.Review(ctx, carol, sb.Owner, sb.Repo, n, a, "REQUEST_CHANGES", "Not like this."); err != nil || !official {
		t.Fatalf("carol's request for changes: official %v, %v", official, err)
	}
	if _, err := sb.Forge.PushFile(ctx, sb.OwnerToken, sb.Owner, sb.Repo, "main", "MOVED.txt", "main moved\n", "main moves"); err != nil {
		t.Fatal(err)
	}
	update := fmt.Sprintf("/repos/%s/%s/pulls/%d/update?style=merge", sb.Owner, sb.Repo, n)
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "POST", update, nil, nil); err != nil {
		t.Fatal(err)
	}
	var reviews []struct {
		State    string `json:"state"`
		CommitID string `json:"commit_id"`
		Stale    bool   `json:"stale"`
		User     struct {
			Login string `json:"login"`
		} `json:"user"`
	}
	reviewsPath := fmt.Sprintf("/repos/%s/%s/pulls/%d/reviews", sb.Owner, sb.Repo, n)
	eventually(t, ctx, "the forge to take in the update", func() bool {
		var pr struct {
			MergeBase string `json:"merge_base"`
			Head      struct {
				Sha string `json:"sha"`
			} `json:"head"`
		}
		var main struct {
			Commit struct {
				ID string `json:"id"`
			} `json:"commit"`
		}
		_, err1 := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/pulls/%d", sb.Owner, sb.Repo, n), nil, &pr)
		_, err2 := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/branches/main", sb.Owner, sb.Repo), nil, &main)
		return err1 == nil && err2 == nil && pr.Head.Sha != a && pr.MergeBase == main.Commit.ID
	})
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", reviewsPath, nil, &reviews); err != nil {
		t.Fatal(err)
	}
	for _, rv := range reviews {
		if rv.User.Login == name && (rv.State != "REQUEST_CHANGES" || rv.CommitID != a || rv.Stale) {
			t.Fatalf("the premise does not hold: carol's review after the update is %+v, want a request for changes on %s, not stale", rv, a)
		}
	}

	bin := buildPool(t)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir()), "--workers", "1", "--human-reviewers", name)
	pool.wait(t, ctx)
	if prompts := sb.Model.Prompts(); len(prompts) != 0 {
		t.Errorf("reviewer sessions = %d, want none: carol's request on the head U merged the base into stands for U", len(prompts))
	}
	if getPR(t, ctx, sb, n).Merged {
		t.Error("merged over carol's request for changes")
	}
	if !strings.Contains(pool.stdout.String(), "Changes requested: 1") {
		t.Errorf("report:\n%s\nstderr:\n%s", pool.stdout.String(), pool.stderr.String())
	}
}
