package forgejo

import (
	"context"
	"errors"
	"testing"
	"time"

	"pool/internal/sandbox"
)

// TestAgainstTheRealForge checks the client's reads and the merge answers
// on Gitea 1.26.
func TestAgainstTheRealForge(t *testing.T) {
	forge := sandbox.ForgeForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	token, err := forge.CreateUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := forge.CreateRepo(ctx, token, "demo"); err != nil {
		t.Fatal(err)
	}
	if err := forge.CreateBranchWithFile(ctx, token, "alice", "demo", "f1", "a.txt", "a\n"); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-2 * time.Second)
	n, head, err := forge.CreatePR(ctx, token, "alice", "demo", "f1", "main", "Add a", "Closes #9")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(ctx, forge.URL, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	if me, err := c.Me(ctx); err != nil || me != "alice" {
		t.Fatalf("Me = %q, %v", me, err)
	}
	prs, err := c.OpenPRs(ctx, "alice", "demo")
	if err != nil || len(prs) != 1 || prs[0].Number != n || prs[0].HeadSHA != head || prs[0].BaseRef != "main" {
		t.Fatalf("OpenPRs = %+v, %v", prs, err)
	}
	changes, served, err := c.ChangedPRs(ctx, "alice", "demo", before)
	if err != nil || len(changes) != 1 || changes[0].Number != n || served.IsZero() {
		t.Fatalf("ChangedPRs = %+v at %v, %v", changes, served, err)
	}
	if st, err := c.Statuses(ctx, "alice", "demo", head); err != nil || len(st) != 0 {
		t.Errorf("Statuses with nothing reported = %+v, %v; want none (unknown, not green)", st, err)
	}

	if res := mergeWhenReady(t, ctx, c, n, "0000000000000000000000000000000000000000"); res.Outcome != MergeHeadMoved {
		t.Errorf("merge at a stale head = %+v; want head_moved", res)
	}
	res := mergeWhenReady(t, ctx, c, n, head)
	if res.Outcome != MergeDone {
		t.Fatalf("merge = %+v", res)
	}
	if pr, err := c.PR(ctx, "alice", "demo", n); err != nil || !pr.Merged {
		t.Errorf("PR after merge: merged=%v, %v", pr.Merged, err)
	}
	if res, _ := c.Merge(ctx, "alice", "demo", n, MergeOptions{Style: "merge", HeadSHA: head}); res.Outcome != MergeAlready {
		t.Errorf("second merge = %+v, want already_merged", res)
	}
	if _, err := c.PR(ctx, "alice", "demo", 999); !IsNotFound(err) {
		t.Errorf("missing PR: %v, want not found", err)
	}
}

// mergeWhenReady retries while the forge is still checking mergeability.
func mergeWhenReady(t *testing.T, ctx context.Context, c *Client, n int, head string) MergeResult {
	t.Helper()
	for {
		res, err := c.Merge(ctx, "alice", "demo", n, MergeOptions{Style: "merge", HeadSHA: head})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != MergeNotReady {
			return res
		}
		select {
		case <-ctx.Done():
			t.Fatal("the forge never became ready to merge")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func TestRejectedTokenIsPermanent(t *testing.T) {
	forge := sandbox.ForgeForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := New(ctx, forge.URL, "not-a-token", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Me(ctx)
	if !errors.Is(err, ErrUnauthorized) || IsRetryable(err) {
		t.Errorf("Me with a bad token = %v; want a permanent ErrUnauthorized", err)
	}
}
