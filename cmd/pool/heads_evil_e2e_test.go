package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"pool/internal/sandbox"
)

// TestAnEvilMergeAfterThePoolsUpdateIsReviewed: branches must be up to
// date; after the first PR merges the pool updates the other (a merge of
// the base), and as the forge answers that update, before the pool reads
// the new head, the author force-pushes a commit with the same parents
// whose tree drops the PR's change (sandbox.Bulk.ForcePushEvilMerge). The
// forge keeps the approval of the head before the update counted (not
// stale: no file differs from both parents), but it does not carry over to
// a tree the pool did not make: a session of its own reviews the new head,
// and the PR merges at that head only on an approval that session filed.
func TestAnEvilMergeAfterThePoolsUpdateIsReviewed(t *testing.T) {
	parallelLong(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 2, nil)
	protectOutdated(t, ctx, sb, nil)
	standInCI(t, ctx, sb, sb.PRs)
	u, err := url.Parse(sb.Forge.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	evilPR, evilHead := 0, ""
	bulk := sb.Bulk(filepath.Join(t.TempDir(), "evil"))
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ModifyResponse = func(r *http.Response) error {
		var n int
		_, err := fmt.Sscanf(r.Request.URL.Path, "/api/v1/repos/"+sb.Owner+"/"+sb.Repo+"/pulls/%d/update", &n)
		if r.Request.Method != http.MethodPost || err != nil || !strings.HasSuffix(r.Request.URL.Path, "/update") || r.StatusCode >= 300 {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if evilHead != "" {
			return nil
		}
		// The forge made the update; the pool has not seen its answer yet.
		var pr apiPR
		if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/pulls/%d", sb.Owner, sb.Repo, n), nil, &pr); err != nil {
			t.Errorf("read #%d after its update: %v", n, err)
			return nil
		}
		h, err := bulk.ForcePushEvilMerge(ctx, pr.Head.Ref)
		if err != nil {
			t.Errorf("the evil merge: %v", err)
			return nil
		}
		// The forge moves the PR's head a moment after a push: wait for it,
		// so the pool's read of what its update made sees the evil merge.
		for pr.Head.Sha != h && ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
			if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/pulls/%d", sb.Owner, sb.Repo, n), nil, &pr); err != nil {
				t.Errorf("read #%d after the evil merge: %v", n, err)
				return nil
			}
		}
		evilPR, evilHead = n, h
		return nil
	}
	front := httptest.NewServer(proxy)
	defer front.Close()
	sb.Model.SetScript(sandbox.Reviewer(sandbox.Approve))
	pool := startPool(t, ctx, buildPool(t), poolEnv(t, sb, t.TempDir(), "POOL_FORGEJO_URL="+front.URL, "POOL_IDLE_EXIT=5"), "--workers", "1")
	pool.wait(t, ctx)

	mu.Lock()
	defer mu.Unlock()
	if evilHead == "" {
		t.Fatalf("the pool updated no PR: reviewer sessions %v", promptsPerHead(sb))
	}
	heads := promptsPerHead(sb)
	t.Logf("reviewer sessions per head: %v; the evil merge: #%d at %s", heads, evilPR, evilHead)
	if heads[fmt.Sprintf("%d@%s", evilPR, evilHead)] != 1 {
		t.Errorf("no session reviewed the evil merge %s of #%d (sessions per head %v): the approval carried over to it", evilHead, evilPR, heads)
	}
	if pr := getPR(t, ctx, sb, evilPR); pr.Merged && pr.Head.Sha == evilHead {
		assertMergedOnItsSessionsApproval(t, ctx, sb, evilPR, evilHead)
	}
	if t.Failed() {
		t.Logf("pool stderr:\n%s", tailOf(pool.stderr.String(), 20000))
	}
}
