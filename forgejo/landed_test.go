package forgejo

import (
	"context"
	"testing"

	"pool/forge"
	"pool/internal/sandbox"
)

// TestAPRWhoseHeadIsOnTheBase checks on Gitea 1.26 what a merge cut off
// mid-call leaves: the head pushed to the base, the PR still open. The forge
// reads it mergeable yet answers every merge "try again later"; marking it
// merged is refused until the repository allows manual merges, and then
// merges it.
func TestAPRWhoseHeadIsOnTheBase(t *testing.T) {
	srv := sandbox.SharedForge(t)
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	ch, err := srv.OpenChange(ctx, "ob-alice", "ob-demo", "f1", "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	token, n, head := ch.Token, ch.PR, ch.Head
	c, err := New(ctx, srv.URL, token, Options{})
	if err != nil {
		t.Fatal(err)
	}
	commit, err := srv.MergeBehindTheForgesBack(ctx, token, "ob-alice", "ob-demo", "main", n)
	if err != nil {
		t.Fatal(err)
	}
	if pr, err := c.PR(ctx, "ob-alice", "ob-demo", n); err != nil || pr.State != "open" || pr.Merged || !pr.Mergeable {
		t.Fatalf("PR with its head on the base = %+v, %v; want open, not merged, mergeable", pr, err)
	}
	if res, err := c.Merge(ctx, "ob-alice", "ob-demo", n, MergeOptions{Style: "merge", HeadSHA: head}); err != nil || res.Outcome != forge.MergeNotReady {
		t.Errorf("merge = %+v, %v; want not_ready (try again later)", res, err)
	}
	if res, err := c.MarkMerged(ctx, "ob-alice", "ob-demo", n, commit); err != nil || res.Outcome != forge.MergeBlocked {
		t.Errorf("mark merged where manual merges are not allowed = %+v, %v; want blocked", res, err)
	}
	if _, err := srv.Do(ctx, token, "PATCH", "/repos/ob-alice/ob-demo", map[string]any{"allow_manual_merge": true}, nil); err != nil {
		t.Fatal(err)
	}
	if res, err := c.MarkMerged(ctx, "ob-alice", "ob-demo", n, commit); err != nil || res.Outcome != forge.MergeDone {
		t.Fatalf("mark merged = %+v, %v; want merged", res, err)
	}
	if pr, err := c.PR(ctx, "ob-alice", "ob-demo", n); err != nil || !pr.Merged {
		t.Errorf("PR after marking it merged: merged=%v, %v", pr.Merged, err)
	}
}
