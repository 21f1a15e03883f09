package forgejo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"pool/forge"
	"pool/internal/faultproxy"
)

// TestFilteredListsReadToAnEmptyPage: Forgejo filters reviews and timeline
// events after paging, so a page in the middle can come back short (the
// fault proxy's Forgejo mode pages so); the client reads on to an empty
// page and misses nothing.
func TestFilteredListsReadToAnEmptyPage(t *testing.T) {
	reviews := []map[string]any{
		{"id": 1, "state": "COMMENT", "user": map[string]string{"login": "reviewer"}, "body": "a remark"},
		{"id": 2, "state": "APPROVED", "user": map[string]string{"login": "reviewer"}, "commit_id": "h1", "official": true},
	}
	events := []map[string]any{{"type": "comment"}, {"type": "review"}, {"type": "pull_scheduled_merge"}}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/repos/o/r/pulls/1/reviews", func(w http.ResponseWriter, r *http.Request) { servePage(w, r, reviews) })
	mux.HandleFunc("/api/v1/repos/o/r/issues/1/timeline", func(w http.ResponseWriter, r *http.Request) { servePage(w, r, events) })
	gitea := httptest.NewServer(mux)
	defer gitea.Close()
	proxy, err := faultproxy.Start(faultproxy.Options{Upstream: gitea.URL, Forgejo: &faultproxy.ForgejoOptions{ShortPages: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	ctx := context.Background()
	c, err := New(ctx, proxy.URL, "t", Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ReviewDetails(ctx, "o", "r", 1)
	if err != nil || len(got) != 2 || got[1].State != forge.ReviewApproved {
		t.Errorf("ReviewDetails = %+v, %v; want the remark and the approval", got, err)
	}
	if armed, err := c.AutoMergeArmed(ctx, "o", "r", 1); err != nil || !armed {
		t.Errorf("AutoMergeArmed = %v, %v; want the scheduled merge on the second page", armed, err)
	}
	if n := proxy.Stats().Rewrites[faultproxy.RewriteShortPage]; n < 2 {
		t.Errorf("%d short pages served, want one per list", n)
	}
}

// servePage answers one page of list as Gitea does, honouring limit and page.
func servePage(w http.ResponseWriter, r *http.Request, list []map[string]any) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	limit, page = max(limit, 1), max(page, 1)
	from, to := min((page-1)*limit, len(list)), min(page*limit, len(list))
	_ = json.NewEncoder(w).Encode(list[from:to])
}

// TestTheTimelinesCountIsOfItsPage: the forge's timeline answers carry an
// X-Total-Count of the entries on that page alone (Gitea 1.26 and Forgejo
// both count the answer after filtering), so it says nothing of where the
// list ends: comments past the first page are read, and an armed
// auto-merge on the third page is seen.
func TestTheTimelinesCountIsOfItsPage(t *testing.T) {
	f := newFakeForge(t, 2)
	var events []map[string]any
	for i := 1; i <= 5; i++ {
		events = append(events, map[string]any{"id": i, "type": "comment", "body": fmt.Sprintf("comment %d", i),
			"user": map[string]any{"login": "someone"}})
	}
	events = append(events, map[string]any{"type": "pull_scheduled_merge"})
	f.mux.HandleFunc("/api/v1/repos/o/r/issues/1/timeline", func(w http.ResponseWriter, r *http.Request) {
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		from, to := min((page-1)*limit, len(events)), min(page*limit, len(events))
		w.Header().Set("X-Total-Count", strconv.Itoa(to-from))
		_ = json.NewEncoder(w).Encode(events[from:to])
	})
	c := f.client(Options{})
	comments, err := c.timelineComments(context.Background(), "o", "r", 1)
	if err != nil || len(comments) != 5 {
		t.Errorf("timelineComments = %d comments, %v; want all 5", len(comments), err)
	}
	if armed, err := c.AutoMergeArmed(context.Background(), "o", "r", 1); err != nil || !armed {
		t.Errorf("AutoMergeArmed = %v, %v; want the scheduled merge on the third page", armed, err)
	}
}
