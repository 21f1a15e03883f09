package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pool/internal/sandbox"
)

// TestTeamRequestWarningAndDependency tells three behaviours of real
// deployments on the real forge, through a proxy that counts the requests
// and the answers the forge refused:
//   - a PR of an organisation's repository with a review requested from a
//     team (the forge lists a review with no user and the team) is reviewed
//     once and merged;
//   - a PR whose required check reports warning is a failing check: the
//     fixer path, and no merge call;
//   - a PR that depends on an open issue waits with one note and no merge
//     call, and merges once the issue is closed.
//
// No merge call is refused by the forge, and no PR gets more than one hold
// note. Every name the test makes on the forge is its own.
func TestTeamRequestWarningAndDependency(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 0, nil)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must2 := func(_ int, err error) { t.Helper(); must(err) }
	const org, teamRepo, team = "differ-org", "differ-team-review", "differ-reviewers"
	must(sb.AddOrg(ctx, org))
	must(sb.AddOrgRepo(ctx, org, teamRepo))
	must(sb.Forge.CreateTeam(ctx, sb.OwnerToken, org, team, []string{teamRepo}, []string{sb.ReviewerUser, sb.PoolUser}))
	teamPR, err := sb.AddOrgPR(ctx, org, teamRepo, 1)
	must(err)
	must(sb.Forge.RequestTeamReview(ctx, sb.OwnerToken, org, teamRepo, teamPR, team))

	must(sb.Forge.ProtectBranch(ctx, sb.OwnerToken, sb.Owner, sb.Repo, "main", map[string]any{
		"enable_status_check": true, "status_check_contexts": []string{sandbox.CIContext}}))
	warnPR, warnHead, err := sb.AddPRWithoutCI(ctx, 1)
	must(err)
	must(sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, warnHead, sandbox.CIContext, "warning", "", "3 lint warnings"))
	depPR, err := sb.AddPR(ctx, 2)
	must(err)
	issue, err := sb.Forge.CreateIssue(ctx, sb.OwnerToken, sb.Owner, sb.Repo, "do this first")
	must(err)
	must(sb.Forge.AddDependency(ctx, sb.OwnerToken, sb.Owner, sb.Repo, depPR, issue))

	forge := countRequests(t, sb.Forge.URL)
	bin := buildPool(t)
	env := poolEnv(t, sb, t.TempDir(), "POOL_FORGEJO_URL="+forge.url, "POOL_ORG="+org, "POOL_IDLE_EXIT=0")
	pool := startPool(t, ctx, bin, env, "--workers", "2")

	mergePath := func(owner, repo string, n int) string {
		return fmt.Sprintf("POST /api/v1/repos/%s/%s/pulls/%d/merge", owner, repo, n)
	}
	merged := func(owner, repo string, n int) bool {
		m, err := mergedOn(ctx, sb, owner, repo, n)
		return err == nil && m
	}
	commentsStarting := func(owner, repo string, n int, prefix string) int {
		var cs []apiComment
		if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/issues/%d/comments", owner, repo, n), nil, &cs); err != nil {
			t.Fatal(err)
		}
		count := 0
		for _, c := range cs {
			if strings.HasPrefix(c.Body, prefix) {
				count++
			}
		}
		return count
	}
	holdNotes := func(owner, repo string, n int) int { return commentsStarting(owner, repo, n, "Merging is on hold") }
	// within waits for cond while the pool makes progress (testContext); a
	// miss is an error, and the test goes on.
	within := func(what string, cond func() bool) bool {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil || pool.hasExited() {
				t.Errorf("%s: not seen (%s)", what, stopReason(ctx))
				return false
			}
			time.Sleep(500 * time.Millisecond)
		}
		return true
	}
	fixerAt := func(head string) bool {
		for _, p := range sb.Model.Prompts() {
			if _, _, h, ok := sandbox.PromptTarget(p); ok && h == head && strings.Contains(p, sandbox.FixerCue) {
				return true
			}
		}
		return false
	}

	within("the warning PR on the fixer path", func() bool { return fixerAt(warnHead) })
	within("the note on the PR with an open dependency", func() bool { return holdNotes(sb.Owner, sb.Repo, depPR) > 0 })
	within("the team-requested PR merged", func() bool { return merged(org, teamRepo, teamPR) })
	time.Sleep(5 * time.Second) // five poll intervals more
	if n := forge.count(mergePath(sb.Owner, sb.Repo, warnPR)); n != 0 {
		t.Errorf("merge calls for the PR whose required check warns: %d, want 0", n)
	}
	if n := forge.count(mergePath(sb.Owner, sb.Repo, depPR)); n != 0 {
		t.Errorf("merge calls for the PR with an open dependency: %d, want 0", n)
	}

	must(sb.Forge.CloseIssue(ctx, sb.OwnerToken, sb.Owner, sb.Repo, issue))
	within("the PR merged once its dependency closed", func() bool { return merged(sb.Owner, sb.Repo, depPR) })

	if n := forge.refusedCount("POST /api/v1/repos/"); n != 0 {
		t.Errorf("the forge refused %d merge or other POST calls, want 0", n)
	}
	for _, pr := range []struct {
		owner, repo string
		n           int
	}{{org, teamRepo, teamPR}, {sb.Owner, sb.Repo, warnPR}, {sb.Owner, sb.Repo, depPR}} {
		if got := holdNotes(pr.owner, pr.repo, pr.n); got > 1 {
			t.Errorf("%s/%s#%d has %d hold notes, want at most 1", pr.owner, pr.repo, pr.n, got)
		}
	}
	if got := holdNotes(sb.Owner, sb.Repo, depPR); got != 1 {
		t.Errorf("the PR with an open dependency has %d hold notes, want 1", got)
	}
	var teamHead apiPR
	must2(sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/pulls/%d", org, teamRepo, teamPR), nil, &teamHead))
	if n := promptsPerHead(sb)[fmt.Sprintf("%d@%s", teamPR, teamHead.Head.Sha)]; n != 1 {
		t.Errorf("reviewer sessions for the team-requested PR: %d, want 1", n)
	}
	// The failing check keeps the PR on the fixer path, whose retry
	// diagnostics (every diagnostic_every cycles) are shown, not counted as
	// hold notes.
	t.Logf("figure: merge calls: team PR %d, warning PR %d, dependent PR %d; refused by the forge: %d; "+
		"diagnostic comments on the warning PR: %d",
		forge.count(mergePath(org, teamRepo, teamPR)), forge.count(mergePath(sb.Owner, sb.Repo, warnPR)),
		forge.count(mergePath(sb.Owner, sb.Repo, depPR)), forge.refusedCount("POST /api/v1/repos/"),
		commentsStarting(sb.Owner, sb.Repo, warnPR, "Merge retry"))
	_ = pool.cmd.Process.Signal(sigterm)
	pool.wait(t, ctx)
	if t.Failed() {
		t.Logf("pool stderr:\n%s", tailOf(pool.stderr.String(), 30000))
	}
}
