package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pool/internal/sandbox"
)

// standInCI reports success for the required context on every new head of
// the given PRs, as a CI that tests each push would, until ctx ends. It
// returns how many heads it reported on.
func standInCI(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, prs []int) func() int {
	t.Helper()
	var mu sync.Mutex
	reported := map[string]bool{}
	watched := map[int]bool{}
	for _, n := range prs {
		watched[n] = true
	}
	go func() {
		// One listing of the open PRs a second: a CI that tests each new
		// head within a second or two, at the cost of one forge request.
		for ctx.Err() == nil {
			var open []struct {
				Number int `json:"number"`
				Head   struct {
					Sha string `json:"sha"`
				} `json:"head"`
			}
			_, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/pulls?state=open&limit=50", sb.Owner, sb.Repo), nil, &open)
			for _, pr := range open {
				mu.Lock()
				seen := reported[pr.Head.Sha]
				mu.Unlock()
				if err != nil || !watched[pr.Number] || seen || pr.Head.Sha == "" {
					continue
				}
				if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, pr.Head.Sha, sandbox.CIContext, "success", "", "passed"); err == nil {
					mu.Lock()
					reported[pr.Head.Sha] = true
					mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(reported)
	}
}

// protectOutdated protects main as a team whose CI must test what lands
// would: a required context and block_on_outdated_branch, plus extra.
func protectOutdated(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, extra map[string]any) {
	t.Helper()
	settings := map[string]any{"enable_status_check": true, "status_check_contexts": []string{sandbox.CIContext},
		"block_on_outdated_branch": true}
	for k, v := range extra {
		settings[k] = v
	}
	if err := sb.Forge.ProtectBranch(ctx, sb.OwnerToken, sb.Owner, sb.Repo, "main", settings); err != nil {
		t.Fatal(err)
	}
}

// mergeRefusals counts, per PR, the merge calls the forge refused.
func mergeRefusals(forge *requestLog, sb *sandbox.Sandbox, prs []int) map[int]int {
	out := map[int]int{}
	for _, n := range prs {
		out[n] = forge.refusedCount(fmt.Sprintf("POST /api/v1/repos/%s/%s/pulls/%d/merge", sb.Owner, sb.Repo, n))
	}
	return out
}

// TestBehindRefusalIsLearned is issue 24's storm: a branch protection that
// blocks outdated branches and requires a check, and a pool account that is
// a write collaborator only (it cannot read the rule's settings). After the
// first merge every other approved PR is behind. The forge's refusal names
// the rule; the pool learns it, updates the PRs one at a time, and merges
// them all, with at most one merge call per PR refused for the rule (per
// head and rule), and one answered "try again later".
// The forge keeps each approval over the pool's updates (official, not
// stale, not dismissed), so the approvals carry over although the token
// cannot read the rule: one reviewer session per PR (issue 36; before,
// every updated head was reviewed again).
func TestBehindRefusalIsLearned(t *testing.T) {
	parallelLong(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 4, nil)
	protectOutdated(t, ctx, sb, nil)
	if err := sb.Forge.AddCollaborator(ctx, sb.OwnerToken, sb.Owner, sb.Repo, sb.PoolUser, "write"); err != nil {
		t.Fatal(err)
	}
	ciCtx, stopCI := context.WithCancel(ctx)
	defer stopCI()
	standInCI(t, ciCtx, sb, sb.PRs)
	forge := countRequests(t, sb.Forge.URL)
	bin := buildPool(t)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir(), "POOL_FORGEJO_URL="+forge.url, "POOL_IDLE_EXIT=0"), "--workers", "2")
	allMerged := func() bool {
		for _, n := range sb.PRs {
			if !isMerged(t, ctx, sb, n) {
				return false
			}
		}
		return true
	}
	// The updates are serial (one per base) and each waits for the stand-in
	// CI: on a machine busy with the other tests that takes minutes. The
	// wait ends when the pool stops making progress (testContext).
	for !allMerged() && ctx.Err() == nil && !pool.hasExited() {
		time.Sleep(time.Second)
	}
	if ctx.Err() != nil {
		t.Errorf("gave up waiting for every PR merged: %s", stopReason(ctx))
	}
	_ = pool.cmd.Process.Signal(sigterm)
	pool.wait(t, ctx)
	for _, n := range sb.PRs {
		if !getPR(t, ctx, sb, n).Merged {
			t.Errorf("PR #%d is not merged", n)
		}
	}
	refused := mergeRefusals(forge, sb, sb.PRs)
	notReady := notReadyAnswers(pool)
	total := 0
	for n, c := range refused {
		total += c
		if c-notReady[n] > 1 || notReady[n] > tryLaterPerPR {
			t.Errorf("the forge refused %d merge calls of PR #%d (%d of them \"try again later\"), want at most 1 for the rule (one per head and rule) and %d \"try again later\"",
				c, n, notReady[n], tryLaterPerPR)
		}
	}
	if !strings.Contains(pool.stderr.String(), "block_on_outdated_branch") {
		t.Errorf("the pool did not say at start that it cannot see block_on_outdated_branch")
	}
	sessions := len(sb.Model.Prompts())
	if sessions != len(sb.PRs) {
		t.Errorf("%d reviewer sessions for %d PRs, want one each: the forge keeps the approvals over the pool's updates, so they carry over", sessions, len(sb.PRs))
	}
	for _, p := range sb.Model.Prompts() {
		if n, _, head, ok := sandbox.PromptTarget(p); ok {
			t.Logf("reviewer session: PR #%s at %s", n, head)
		}
	}
	t.Logf("figure: refused merge calls %d, merge calls %d, updates %d, reviewer sessions %d (4 PRs, rule unreadable)", total,
		forge.countPOST("/merge"), forge.countPOST("/update?style=merge"), sessions)
	logUpdatesAndMerges(t, pool)
	if t.Failed() {
		t.Logf("pool stderr:\n%s", tailOf(pool.stderr.String(), 30000))
	}
}

// logUpdatesAndMerges logs the pool's update and merge answers, and what
// it learned.
func logUpdatesAndMerges(t *testing.T, pool *poolProc) {
	t.Helper()
	for _, line := range strings.Split(pool.stderr.String(), "\n") {
		if strings.Contains(line, `msg="update answered"`) || strings.Contains(line, `msg="merge answered"`) ||
			strings.Contains(line, "learned") || strings.Contains(line, "cannot read the whole") {
			t.Log(line)
		}
	}
}

// tryLaterPerPR bounds the merge calls of one PR the forge may answer "try
// again later" while the PR read mergeable (mergeQueue.tryLater): the
// forge's flag read after a merge, before the forge marked the PR for
// testing again; and a read between two tests of the PR after one merge
// (Gitea tests a PR again when a test was asked for while one ran; the PR
// reads mergeable in between). The one-core run of 3ac9f8e (2026-12-04)
// drew two in TestBehindRefusalIsLearned, most likely those: PR #2
// answered "try again later" at 16:35:37.3 and 16:35:38.9, 0.6 s and 2.2 s
// after the merge ahead, then "behind" at 16:35:41.0.
const tryLaterPerPR = 2

// notReadyAnswers counts, per PR, the merge calls the forge answered "try
// again later" (405: the PR is being checked), from the pool's log. After
// each merge and each update of a branch the forge starts a check of every
// open PR of the base in a goroutine of its own (Gitea 1.26
// services/pull/merge.go and update.go, AddTestPullRequestTask), which
// marks each PR "checking" when it reaches it: seconds late on a loaded
// machine. A merge call made after the pool read the PR mergeable and
// before that mark is answered so, whatever the pool does; the queue waits
// and merges at its next try. Such answers (tryLaterPerPR at most) are the
// forge's race, not a refusal of the pool's merge: a PR behind its base is
// refused with another answer, and a storm of them would count more.
func notReadyAnswers(pool *poolProc) map[int]int {
	out := map[int]int{}
	for _, line := range strings.Split(pool.stderr.String(), "\n") {
		if !strings.Contains(line, `msg="merge answered"`) || !strings.Contains(line, " outcome=not_ready ") {
			continue
		}
		if m := prField.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			out[n]++
		}
	}
	return out
}

var prField = regexp.MustCompile(` pr=([0-9]+) `)

// countPOST is how many POST requests ended with suffix.
func (l *requestLog) countPOST(suffix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.reqs {
		if strings.HasPrefix(r, "POST ") && strings.HasSuffix(r, suffix) {
			n++
		}
	}
	return n
}

// TestOutdatedBranchesUpdatedWithApprovalsCarried is issue 24's figure:
// protection with block_on_outdated_branch and a required context (the
// stand-in CI reports on every new head), 6 PRs, 2 workers. All merge,
// with 6 reviewer sessions (the approvals carry over the pool's updates),
// at most 5 updates, and no merge call the forge refused.
func TestOutdatedBranchesUpdatedWithApprovalsCarried(t *testing.T) {
	parallelLong(t)
	sessions, updates := runOutdated(t, nil, "merge")
	if sessions != 6 {
		t.Errorf("%d reviewer sessions, want 6: the approvals carry over the pool's updates", sessions)
	}
	if updates > 5 {
		t.Errorf("%d updates, want at most 5", updates)
	}
}

// TestOutdatedBranchesWithDismissStaleApprovals: the same with
// dismiss_stale_approvals on: every updated PR is reviewed once more.
func TestOutdatedBranchesWithDismissStaleApprovals(t *testing.T) {
	parallelLong(t)
	sessions, updates := runOutdated(t, map[string]any{"dismiss_stale_approvals": true}, "merge")
	if sessions != 6+updates {
		t.Errorf("%d reviewer sessions for %d updates, want %d: one more per updated PR", sessions, updates, 6+updates)
	}
	if updates > 5 {
		t.Errorf("%d updates, want at most 5", updates)
	}
}

// TestOutdatedBranchesRebased: the same with merge.update_style rebase:
// the PR's diff after the rebase is byte for byte the approved one, so the
// approvals carry over.
func TestOutdatedBranchesRebased(t *testing.T) {
	parallelLong(t)
	sessions, updates := runOutdated(t, nil, "rebase")
	if sessions != 6 {
		t.Errorf("%d reviewer sessions, want 6: the approvals carry over the pool's rebases", sessions)
	}
	if updates > 5 {
		t.Errorf("%d updates, want at most 5", updates)
	}
}

// runOutdated runs the scenario with updates in style and returns the
// reviewer sessions and the updates; it fails the test unless all 6 PRs
// merge with no merge call refused, but for one "try again later" per PR
// at most (notReadyAnswers).
func runOutdated(t *testing.T, extra map[string]any, style string) (sessions, updates int) {
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 6, nil)
	protectOutdated(t, ctx, sb, extra)
	ciCtx, stopCI := context.WithCancel(ctx)
	defer stopCI()
	standInCI(t, ciCtx, sb, sb.PRs)
	forge := countRequests(t, sb.Forge.URL)
	bin := buildPool(t)
	start := time.Now()
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir(), "POOL_FORGEJO_URL="+forge.url, "POOL_IDLE_EXIT=5",
		"POOL_MERGE_UPDATE_STYLE="+style), "--workers", "2")
	pool.wait(t, ctx)
	took := time.Since(start)
	for _, n := range sb.PRs {
		assertMerged(t, ctx, sb, n)
	}
	refused := 0
	notReady := notReadyAnswers(pool)
	for n, c := range mergeRefusals(forge, sb, sb.PRs) {
		refused += c
		if c > notReady[n] || notReady[n] > tryLaterPerPR {
			t.Errorf("the forge refused %d merge calls of PR #%d (%d of them \"try again later\"), want none but %d \"try again later\" at most", c, n, notReady[n], tryLaterPerPR)
		}
	}
	sessions = len(sb.Model.Prompts())
	updates = forge.countPOST("/update?style=" + style)
	t.Logf("figure: 6 PRs, 2 workers, %s updates, %v: %d reviewer sessions, %d updates, %d merge calls (%d refused), %s (pool start to exit, %d idle cycles)",
		style, extra, sessions, updates, forge.countPOST("/merge"), refused, took.Round(time.Second), 5)
	logUpdatesAndMerges(t, pool)
	for _, p := range sb.Model.Prompts() {
		if n, _, head, ok := sandbox.PromptTarget(p); ok {
			t.Logf("reviewer session: PR #%s at %s", n, head)
		}
	}
	if t.Failed() {
		t.Logf("pool stderr:\n%s", tailOf(pool.stderr.String(), 30000))
	}
	return sessions, updates
}
