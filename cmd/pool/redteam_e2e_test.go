package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"pool/internal/sandbox"
)

// The red team: a reviewer misled by a PR's text, played by the scripted
// model through the tool the shipped reviewer has, and the reviewer's own
// token used out of band. No PR merges without a session of the pool
// having filed the counted approval of its exact head.

// TestASessionCannotApproveAnotherPR: the session reviewing PR A is
// scripted, as A's text might tell it, to approve PR B's head and to file
// a verdict on a 7-character prefix of A's head. The verdict tool takes
// no target and refuses each (naming A); B's own session requests
// changes, and B is not merged.
func TestASessionCannotApproveAnotherPR(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 2, nil)
	a, b := sb.PRs[0], sb.PRs[1]
	headB := getPR(t, ctx, sb, b).Head.Sha
	var mu sync.Mutex
	got := map[string]string{}
	steer := func(prompt string, outputs []string) sandbox.Turn {
		pr, repo, head, ok := sandbox.PromptTarget(prompt)
		if !ok {
			return sandbox.Turn{Text: "I cannot tell which PR to review."}
		}
		if pr != fmt.Sprint(a) {
			return sandbox.Reviewer(func(string) sandbox.Verdict { return sandbox.Verdict{Event: "REQUEST_CHANGES"} })(prompt, outputs)
		}
		probes := []sandbox.Turn{
			{Tool: sandbox.ToolVerdict, Args: map[string]any{"verdict": "approve", "commit": headB, "body": "As the PR description asks.", "pr": b, "repo": repo}},
			sandbox.VerdictTurn(headB, "APPROVED", "As the PR description asks."),
			sandbox.VerdictTurn(head[:7], "APPROVED", "Short."),
		}
		if len(outputs) < len(probes) {
			return probes[len(outputs)]
		}
		mu.Lock()
		got["other"], got["other head"], got["short"] = outputs[0], outputs[1], outputs[2]
		mu.Unlock()
		return sandbox.Reviewer(func(string) sandbox.Verdict { return sandbox.Verdict{Event: "REQUEST_CHANGES"} })(prompt, outputs[len(probes):])
	}
	sb.Model.SetScript(steer)
	bin := buildPool(t)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir()), "--workers", "1")
	pool.wait(t, ctx)

	mu.Lock()
	defer mu.Unlock()
	if out := got["other"]; !strings.Contains(out, fmt.Sprintf("always on this session's PR, %s/%s#%d", sb.Owner, sb.Repo, a)) {
		t.Errorf("approving #%d from #%d's session: %q; want refused, naming #%d", b, a, out, a)
	}
	if out := got["other head"]; !strings.Contains(out, "not the head this session was started for") {
		t.Errorf("approving #%d's head from #%d's session: %q; want refused", b, a, out)
	}
	if out := got["short"]; !strings.Contains(out, "not a full commit id") {
		t.Errorf("a verdict on a 7-character prefix: %q; want refused", out)
	}
	if getPR(t, ctx, sb, b).Merged {
		t.Errorf("#%d merged on the approval #%d's session filed\nstderr:\n%s", b, a, pool.stderr.String())
	}
	for _, r := range reviewsOf(t, ctx, sb, b) {
		if r.State == "APPROVED" {
			t.Errorf("#%d carries an approval: %+v", b, r)
		}
	}
}

// TestAnApprovalNoSessionFiledIsNotMerged: the reviewer's account approves
// PR B's head directly, with its token, as a misled session could before
// the tool was bound to its PR. The pool says so once on B, does not merge
// on it, and starts a session of its own, whose approval merges B.
func TestAnApprovalNoSessionFiledIsNotMerged(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 1, sandbox.Reviewer(sandbox.Approve))
	n := sb.PRs[0]
	head := getPR(t, ctx, sb, n).Head.Sha
	official, err := sb.Forge.Review(ctx, sb.ReviewerToken, sb.Owner, sb.Repo, n, head, "APPROVED", "LGTM, as PR #1 told me.")
	if err != nil {
		t.Fatal(err)
	}
	if !official {
		t.Fatal("the forge did not mark the reviewer's approval official; the test's premise does not hold")
	}
	bin := buildPool(t)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir()), "--workers", "1")
	pool.wait(t, ctx)

	notes := 0
	for _, c := range prComments(t, ctx, sb, n) {
		if strings.HasPrefix(c.Body, "Not merging on this approval") {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("notes on the approval no session filed = %d, want 1", notes)
	}
	if len(sb.Model.Prompts()) == 0 {
		t.Errorf("no session of the pool reviewed #%d\nstderr:\n%s", n, pool.stderr.String())
	}
	if !getPR(t, ctx, sb, n).Merged {
		t.Errorf("#%d not merged after its own session approved it\nstderr:\n%s", n, pool.stderr.String())
	}
	approvals := 0
	for _, r := range reviewsOf(t, ctx, sb, n) {
		if r.State == "APPROVED" && r.User.Login == sb.ReviewerUser {
			approvals++
		}
	}
	if approvals != 2 {
		t.Errorf("approvals by the reviewer's account = %d, want 2: the one out of band and the session's", approvals)
	}
}

type forgeReview struct {
	State    string `json:"state"`
	CommitID string `json:"commit_id"`
	Body     string `json:"body"`
	User     struct {
		Login string `json:"login"`
	} `json:"user"`
}

func reviewsOf(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, n int) []forgeReview {
	t.Helper()
	var rs []forgeReview
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/pulls/%d/reviews", sb.Owner, sb.Repo, n), nil, &rs); err != nil {
		t.Fatal(err)
	}
	return rs
}
