package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"pool/internal/sandbox"
)

// TestAnAuthorPushDuringTheSessionIsNotApproved: while the session of PR A
// reads A, the author pushes a new commit to A's branch; the session then
// files its approval naming the head it read. The verdict tool refuses it
// (the forge's head moved), no approval of the old head is on the PR, the
// new head gets a session of its own, and A merges only at the new head on
// an approval that session filed.
func TestAnAuthorPushDuringTheSessionIsNotApproved(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 1, nil)
	a := sb.PRs[0]
	first := getPR(t, ctx, sb, a)
	var mu sync.Mutex
	var pushed, verdictOut string // the author's new head; what the verdict on the old head answered
	approve := sandbox.Reviewer(sandbox.Approve)
	sb.Model.SetScript(func(prompt string, outs []string) sandbox.Turn {
		_, _, head, ok := sandbox.PromptTarget(prompt)
		if !ok || head != first.Head.Sha {
			return approve(prompt, outs)
		}
		mu.Lock()
		defer mu.Unlock()
		switch len(outs) {
		case 0:
			return sandbox.WhereTurn
		case 1: // the session has read its PR: the author pushes now
			if pushed == "" {
				h, err := sb.Forge.PushFile(ctx, sb.OwnerToken, sb.Owner, sb.Repo, first.Head.Ref, "features/late.txt", "unread\n", "late change")
				if err != nil {
					t.Errorf("the author's push: %v", err)
					return sandbox.Turn{Text: "stop"}
				}
				if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, h, sandbox.CIContext, "success", "", "passed"); err != nil {
					t.Errorf("status of the pushed head: %v", err)
				}
				pushed = h
			}
			return sandbox.VerdictTurn(first.Head.Sha, "APPROVED", "Read it all.")
		case 2:
			verdictOut = outs[1]
		}
		return sandbox.Turn{Text: "Review done.\nREVIEW-RESULT: {\"decision\": \"approved\", \"merge_status\": \"none\"}"}
	})
	pool := startPool(t, ctx, buildPool(t), poolEnv(t, sb, t.TempDir()), "--workers", "1")
	pool.wait(t, ctx)

	mu.Lock()
	defer mu.Unlock()
	if pushed == "" {
		t.Fatalf("the session of the first head never read its PR: prompts %v", promptsPerHead(sb))
	}
	t.Logf("the verdict on the old head answered: %s", strings.TrimSpace(verdictOut))
	if !strings.Contains(verdictOut, "refused") && !strings.Contains(verdictOut, "nothing filed") {
		t.Errorf("the verdict on the head the session read, after the author's push, was not refused: %q", verdictOut)
	}
	for _, r := range reviewsOf(t, ctx, sb, a) {
		if r.State == "APPROVED" && r.CommitID == first.Head.Sha {
			t.Errorf("#%d carries an approval of the old head %s, filed after the author's push", a, first.Head.Sha)
		}
	}
	if heads := promptsPerHead(sb); heads[fmt.Sprintf("%d@%s", a, pushed)] != 1 {
		t.Errorf("reviewer sessions per head = %v, want one on the pushed head %s", heads, pushed)
	}
	assertMergedOnItsSessionsApproval(t, ctx, sb, a, pushed)
	if t.Failed() {
		t.Logf("pool stderr:\n%s", tailOf(pool.stderr.String(), 20000))
	}
}
