package forgejo

import (
	"context"
	"testing"

	"pool/forge"
	"pool/internal/faultproxy"
	"pool/internal/sandbox"
)

// TestMarkMergedOnForgejo: marking a PR merged by hand, through the fault
// proxy's Forgejo mode in front of the real forge. Forgejo reads the merge
// commit only from the field spelled MergeCommitID; the mark must merge
// there as on Gitea.
func TestMarkMergedOnForgejo(t *testing.T) {
	srv := sandbox.SharedForge(t)
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	const user, repo = "mm-alice", "mm-demo"
	ch, err := srv.OpenChange(ctx, user, repo, "f1", "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, ch.Token, "PATCH", "/repos/"+user+"/"+repo, map[string]any{"allow_manual_merge": true}, nil); err != nil {
		t.Fatal(err)
	}
	commit, err := srv.MergeBehindTheForgesBack(ctx, ch.Token, user, repo, "main", ch.PR)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.Start(faultproxy.Options{Upstream: srv.URL, Forgejo: &faultproxy.ForgejoOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	c, err := New(ctx, proxy.URL, ch.Token, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.MarkMerged(ctx, user, repo, ch.PR, commit); err != nil || res.Outcome != forge.MergeDone {
		t.Fatalf("mark merged on Forgejo = %+v, %v; want merged", res, err)
	}
	if pr, err := c.PR(ctx, user, repo, ch.PR); err != nil || !pr.Merged {
		t.Errorf("PR after marking it merged: merged=%v, %v", pr.Merged, err)
	}
}
