package forgejo

import (
	"context"
	"testing"
	"time"

	"pool/forge"
	"pool/internal/sandbox"
)

// TestAgainstTheRealForge checks the client's reads and the merge answers
// on Gitea 1.26.
func TestAgainstTheRealForge(t *testing.T) {
	srv := sandbox.SharedForge(t)
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	before := time.Now().Add(-2 * time.Second)
	ch, err := srv.OpenChange(ctx, "rt-alice", "rt-demo", "f1", "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	token, n, head := ch.Token, ch.PR, ch.Head
	c, err := New(ctx, srv.URL, token, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var settings struct {
		MaxResponseItems int `json:"max_response_items"`
	}
	if err := c.getJSON(ctx, "read API settings", "/settings/api", &settings); err != nil || settings.MaxResponseItems != c.PageSize() {
		t.Errorf("page size %d; the forge's max_response_items is %d (%v)", c.PageSize(), settings.MaxResponseItems, err)
	}
	prs, err := c.OpenPRs(ctx, "rt-alice", "rt-demo")
	if err != nil || len(prs) != 1 || prs[0].Number != n || prs[0].HeadSHA != head || prs[0].BaseRef != "main" {
		t.Fatalf("OpenPRs = %+v, %v", prs, err)
	}
	changes, served, err := c.ChangedPRs(ctx, "rt-alice", "rt-demo", before)
	if err != nil || len(changes) != 1 || changes[0].Number != n || served.IsZero() {
		t.Fatalf("ChangedPRs = %+v at %v, %v", changes, served, err)
	}
	if st, err := c.StatusHistory(ctx, "rt-alice", "rt-demo", head); err != nil || len(st) != 0 {
		t.Errorf("StatusHistory with nothing reported = %+v, %v; want none (unknown, not green)", st, err)
	}

	if res := mergeWhenReady(t, ctx, c, n, "0000000000000000000000000000000000000000"); res.Outcome != forge.MergeHeadMoved {
		t.Errorf("merge at a stale head = %+v; want head_moved", res)
	}
	res := mergeWhenReady(t, ctx, c, n, head)
	if res.Outcome != forge.MergeDone {
		t.Fatalf("merge = %+v", res)
	}
	if pr, err := c.PR(ctx, "rt-alice", "rt-demo", n); err != nil || !pr.Merged {
		t.Errorf("PR after merge: merged=%v, %v", pr.Merged, err)
	}
	if res, _ := c.Merge(ctx, "rt-alice", "rt-demo", n, MergeOptions{Style: "merge", HeadSHA: head}); res.Outcome != forge.MergeAlready {
		t.Errorf("second merge = %+v, want already_merged", res)
	}
	if _, err := c.PR(ctx, "rt-alice", "rt-demo", 999); !IsNotFound(err) {
		t.Errorf("missing PR: %v, want not found", err)
	}
}

// mergeWhenReady retries while the forge is still checking mergeability.
func mergeWhenReady(t *testing.T, ctx context.Context, c *Client, n int, head string) forge.MergeResult {
	t.Helper()
	for {
		res, err := c.Merge(ctx, "rt-alice", "rt-demo", n, MergeOptions{Style: "merge", HeadSHA: head})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != forge.MergeNotReady {
			return res
		}
		select {
		case <-ctx.Done():
			t.Fatal("the forge never became ready to merge")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestProtectionAndOfficialReviews reads the branch protection as the
// repository's admin (the whole rule), as a write collaborator (the branch
// summary) and as an outsider (who may not merge), and checks the forge's
// official flag on reviews by a collaborator and by an outsider.
func TestProtectionAndOfficialReviews(t *testing.T) {
	srv := sandbox.SharedForge(t)
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	tokens := map[string]string{}
	for _, u := range []string{"po-alice", "po-bob", "po-mallory"} {
		tok, err := srv.CreateUser(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		tokens[u] = tok
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(srv.CreateRepo(ctx, tokens["po-alice"], "po-demo"))
	must(srv.AddCollaborator(ctx, tokens["po-alice"], "po-alice", "po-demo", "po-bob", "write"))
	client := func(user string) *Client {
		c, err := New(ctx, srv.URL, tokens[user], Options{})
		must(err)
		return c
	}
	if p, err := client("po-alice").Protection(ctx, "po-alice", "po-demo", "main"); err != nil || p.Protected || !p.UserCanMerge {
		t.Errorf("unprotected main = %+v, %v; want not protected, and the owner may merge", p, err)
	}
	must(srv.ProtectBranch(ctx, tokens["po-alice"], "po-alice", "po-demo", "main", map[string]any{
		"required_approvals": 2, "enable_status_check": true, "status_check_contexts": []string{"ci/*"},
		"block_on_rejected_reviews": true, "block_on_outdated_branch": true,
		"enable_approvals_whitelist": true, "approvals_whitelist_username": []string{"po-bob"}}))

	admin, err := client("po-alice").Protection(ctx, "po-alice", "po-demo", "main")
	if err != nil || !admin.Protected || !admin.Full || admin.Rule != "main" || admin.RequiredApprovals != 2 ||
		!admin.StatusCheck || len(admin.StatusContexts) != 1 || !admin.BlockOnRejected || !admin.BlockOnOutdated ||
		!admin.ApprovalsWhitelist || len(admin.ApprovalsWhitelistUsers) != 1 || !admin.UserCanMerge {
		t.Errorf("as admin: %+v, %v", admin, err)
	}
	writer, err := client("po-bob").Protection(ctx, "po-alice", "po-demo", "main")
	if err != nil || !writer.Protected || writer.Full || writer.RequiredApprovals != 2 || len(writer.StatusContexts) != 1 || !writer.UserCanMerge {
		t.Errorf("as a write collaborator: %+v, %v; want the summary only", writer, err)
	}
	if outsider, err := client("po-mallory").Protection(ctx, "po-alice", "po-demo", "main"); err != nil || outsider.UserCanMerge {
		t.Errorf("as an outsider: %+v, %v; want may not merge", outsider, err)
	}

	must(srv.CreateBranchWithFile(ctx, tokens["po-alice"], "po-alice", "po-demo", "f1", "a.txt", "a\n"))
	n, head, err := srv.CreatePR(ctx, tokens["po-alice"], "po-alice", "po-demo", "f1", "main", "Add a", "")
	must(err)
	for _, u := range []string{"po-bob", "po-mallory"} {
		_, err := srv.Review(ctx, tokens[u], "po-alice", "po-demo", n, head, "APPROVED", "ok")
		must(err)
	}
	reviews, err := client("po-alice").Reviews(ctx, "po-alice", "po-demo", n)
	must(err)
	official := map[string]bool{}
	for _, r := range reviews {
		official[r.Author] = r.Official
	}
	if !official["po-bob"] || official["po-mallory"] || len(official) != 2 {
		t.Errorf("official flags = %v; want bob (whitelisted writer) only", official)
	}
}
