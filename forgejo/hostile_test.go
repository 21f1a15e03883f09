package forgejo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeForge answers the API settings, and whatever routes a test adds; it
// records the request URIs it served.
type fakeForge struct {
	t        *testing.T
	mux      *http.ServeMux
	srv      *httptest.Server
	mu       sync.Mutex
	requests []string
}

func newFakeForge(t *testing.T, maxItems int) *fakeForge {
	f := &fakeForge{t: t, mux: http.NewServeMux()}
	f.mux.HandleFunc("/api/v1/settings/api", func(w http.ResponseWriter, _ *http.Request) {
		if maxItems == 0 {
			http.NotFound(w, nil)
			return
		}
		fmt.Fprintf(w, `{"max_response_items":%d,"default_paging_num":30}`, maxItems)
	})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r.URL.RequestURI())
		f.mu.Unlock()
		f.mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeForge) client(opt Options) *Client {
	f.t.Helper()
	c, err := New(context.Background(), f.srv.URL, "t", opt)
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.requests = nil
	f.mu.Unlock()
	return c
}

func (f *fakeForge) served() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

// pagedList serves entries as the forge pages them: limit and page from
// the query; filtered drops the entries keep refuses after paging, as the
// forge does for reviews and the timeline.
func pagedList(entries []map[string]any, keep func(map[string]any) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		out := []map[string]any{}
		for i := (page - 1) * limit; i < page*limit && i < len(entries); i++ {
			if keep == nil || keep(entries[i]) {
				out = append(out, entries[i])
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	}
}

func review(id int, body string) map[string]any {
	return map[string]any{"id": id, "user": map[string]any{"login": "bot"}, "state": "APPROVED", "commit_id": "h", "body": body}
}

func TestPageSizeFromSettings(t *testing.T) {
	for _, tt := range []struct {
		name     string
		maxItems int
		want     int
	}{{"read from the forge", 7, 7}, {"unreadable: default", 0, 50}, {"absurd: default", 100000, 50}} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeForge(t, tt.maxItems)
			f.mux.HandleFunc("/api/v1/repos/o/r/pulls", pagedList(nil, nil))
			c := f.client(Options{})
			if c.PageSize() != tt.want {
				t.Fatalf("PageSize = %d, want %d", c.PageSize(), tt.want)
			}
			if _, err := c.OpenPRs(context.Background(), "o", "r"); err != nil {
				t.Fatal(err)
			}
			if got := f.served(); len(got) != 1 || !strings.Contains(got[0], "limit="+strconv.Itoa(tt.want)+"&") {
				t.Errorf("requests = %v, want one with limit=%d", got, tt.want)
			}
		})
	}
}

func TestFilteredListReadsPastShortPages(t *testing.T) {
	f := newFakeForge(t, 4)
	var reviews []map[string]any
	for i := 1; i <= 10; i++ {
		reviews = append(reviews, review(i, ""))
	}
	hidden := map[any]bool{2: true, 3: true, 5: true} // filtered out after paging
	f.mux.HandleFunc("/api/v1/repos/o/r/pulls/1/reviews", pagedList(reviews, func(m map[string]any) bool { return !hidden[m["id"]] }))
	got, err := f.client(Options{}).Reviews(context.Background(), "o", "r", 1)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if fmt.Sprint(ids) != "[1 4 6 7 8 9 10]" {
		t.Errorf("reviews = %v, want every one the forge shows", ids)
	}
	// pages: 1-4 (short: 2 of 4), 5-8 (short: 3), 9-10 (short), then empty
	if n := len(f.served()); n != 4 {
		t.Errorf("%d requests, want 4 (three short pages and the empty one): %v", n, f.served())
	}
}

func TestDatabasePagedListStopsOnAShortPage(t *testing.T) {
	f := newFakeForge(t, 4)
	f.mux.HandleFunc("/api/v1/repos/o/r/pulls", pagedList([]map[string]any{prJSON(1), prJSON(2)}, nil))
	prs, err := f.client(Options{}).OpenPRs(context.Background(), "o", "r")
	if err != nil || len(prs) != 2 {
		t.Fatalf("OpenPRs = %v, %v", prs, err)
	}
	if n := len(f.served()); n != 1 {
		t.Errorf("%d requests, want 1: a quiet list costs one request", n)
	}
}

func prJSON(n int) map[string]any {
	return map[string]any{"number": n, "state": "open", "title": "t", "user": map[string]any{"login": "alice"},
		"head": map[string]any{"ref": "f", "sha": "h" + strconv.Itoa(n)}, "base": map[string]any{"ref": "main", "sha": "b"}}
}

func TestPageOverTheCapIsReadInSmallerPages(t *testing.T) {
	f := newFakeForge(t, 4)
	// a list without the total cap reviews have (listing.capped)
	var repos []map[string]any
	for i := 1; i <= 10; i++ {
		body := ""
		if i == 6 {
			body = strings.Repeat("x", 12000) // pages holding 6 and a neighbour stay under the cap, a page of 4 does not
		}
		if i == 5 || i == 7 {
			body = strings.Repeat("y", 5000)
		}
		repos = append(repos, map[string]any{"full_name": fmt.Sprintf("o/r%d", i), "description": body})
	}
	f.mux.HandleFunc("/api/v1/orgs/o/repos", pagedList(repos, nil))
	c := f.client(Options{MaxBody: 20000})
	got, err := c.OrgRepos(context.Background(), "o")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[o/r1 o/r2 o/r3 o/r4 o/r5 o/r6 o/r7 o/r8 o/r9 o/r10]" {
		t.Errorf("repositories = %v, want all ten once, in order", got)
	}
	want := []string{"limit=4&page=1", "limit=4&page=2", "limit=2&page=3", "limit=2&page=4", "limit=4&page=3", "limit=4&page=4"}
	var asked []string
	for _, u := range f.served() {
		asked = append(asked, u[strings.Index(u, "limit="):])
	}
	if fmt.Sprint(asked) != fmt.Sprint(want) {
		t.Errorf("pages asked = %v, want %v", asked, want)
	}
}

func TestEntryOverTheCapIsAnErrorNamingOpAndCap(t *testing.T) {
	f := newFakeForge(t, 4)
	f.mux.HandleFunc("/api/v1/repos/o/r/pulls/1/reviews", pagedList([]map[string]any{review(1, ""), review(2, strings.Repeat("x", 30000))}, nil))
	_, err := f.client(Options{MaxBody: 20000}).Reviews(context.Background(), "o", "r", 1)
	if !IsTooLarge(err) || IsRetryable(err) {
		t.Fatalf("err = %v; want a permanent too-large error", err)
	}
	for _, want := range []string{"list reviews of o/r#1", "entry 2 alone", "20000 bytes cap"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestRepeatedPageStops(t *testing.T) {
	full := []map[string]any{prJSON(1), prJSON(2)}
	tests := []struct {
		name string
		path string
		body any
		call func(*Client) error
	}{
		{"database-paged list", "/api/v1/repos/o/r/pulls", full, func(c *Client) error { _, err := c.OpenPRs(context.Background(), "o", "r"); return err }},
		{"filtered list, short page", "/api/v1/repos/o/r/pulls/1/reviews", []map[string]any{review(1, "")},
			func(c *Client) error { _, err := c.Reviews(context.Background(), "o", "r", 1); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeForge(t, 2)
			f.mux.HandleFunc(tt.path, func(w http.ResponseWriter, r *http.Request) { _ = json.NewEncoder(w).Encode(tt.body) })
			err := tt.call(f.client(Options{}))
			if err == nil || !strings.Contains(err.Error(), "ignores paging") {
				t.Fatalf("err = %v, want the repeated page named", err)
			}
			if n := len(f.served()); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
		})
	}
}

func TestHostileAnswersAreErrorsNotPanics(t *testing.T) {
	validPR := `{"number":3,"state":"open","user":{"login":"a"},"head":{"ref":"f","sha":"h"},"base":{"ref":"main"}}`
	tests := []struct {
		name, path, body string
		call             func(context.Context, *Client) error
	}{
		{"PR null", "/api/v1/repos/o/r/pulls/3", `null`, getPR},
		{"PR without fields", "/api/v1/repos/o/r/pulls/3", `{}`, getPR},
		{"PR without head", "/api/v1/repos/o/r/pulls/3", `{"number":3,"state":"open","user":{"login":"a"},"base":{"ref":"main"}}`, getPR},
		{"PR with a null head", "/api/v1/repos/o/r/pulls/3", `{"number":3,"state":"open","user":{"login":"a"},"head":null,"base":{"ref":"main"}}`, getPR},
		{"PR number as text", "/api/v1/repos/o/r/pulls/3", `{"number":"three"}`, getPR},
		{"PR truncated", "/api/v1/repos/o/r/pulls/3", validPR[:40], getPR},
		{"PR as a list", "/api/v1/repos/o/r/pulls/3", `[` + validPR + `]`, getPR},
		{"reviews with a null", "/api/v1/repos/o/r/pulls/3/reviews", `[null]`, listReviews},
		{"review without author", "/api/v1/repos/o/r/pulls/3/reviews", `[{"id":1,"state":"APPROVED","commit_id":"h"}]`, listReviews},
		{"review request with neither user nor team", "/api/v1/repos/o/r/pulls/3/reviews", `[{"id":1,"user":null,"team":null,"state":"REQUEST_REVIEW"}]`, listReviews},
		{"approval by a team", "/api/v1/repos/o/r/pulls/3/reviews", `[{"id":1,"user":null,"team":{"name":"core"},"state":"APPROVED","commit_id":"h"}]`, listReviews},
		{"review with a text id", "/api/v1/repos/o/r/pulls/3/reviews", `[{"id":"1","user":{"login":"b"},"state":"APPROVED"}]`, listReviews},
		{"reviews truncated", "/api/v1/repos/o/r/pulls/3/reviews", `[{"id":1,"user":{"log`, listReviews},
		{"reviews as an object", "/api/v1/repos/o/r/pulls/3/reviews", `{"id":1}`, listReviews},
		{"comments with a null", "/api/v1/repos/o/r/issues/3/comments", `[null]`, listComments},
		{"comments truncated", "/api/v1/repos/o/r/issues/3/comments", `[{"id":1,`, listComments},
		{"statuses with a null", "/api/v1/repos/o/r/statuses/h", `[null]`, listStatuses},
		{"status without a state", "/api/v1/repos/o/r/statuses/h", `[{"id":1,"context":"ci"}]`, listStatuses},
		{"timeline with a null", "/api/v1/repos/o/r/issues/3/timeline", `[null]`, readTimeline},
		{"inline comments with a null", "/api/v1/repos/o/r/pulls/3/reviews/9/comments", `[null]`, listInline},
		{"posted comment null", "/api/v1/repos/o/r/issues/3/comments", `null`, func(ctx context.Context, c *Client) error {
			_, err := c.PostComment(ctx, "o", "r", 3, "hi")
			return err
		}},
		{"changed PRs truncated", "/api/v1/repos/o/r/issues", `[{"number":1,"sta`, func(ctx context.Context, c *Client) error {
			_, _, err := c.ChangedPRs(ctx, "o", "r", time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC))
			return err
		}},
		{"hooks with a null", "/api/v1/repos/o/r/hooks", `[null]`, func(ctx context.Context, c *Client) error { _, err := c.Hooks(ctx, "o", "r"); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeForge(t, 50)
			f.mux.HandleFunc(tt.path, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if r.Method == http.MethodPost {
					w.WriteHeader(http.StatusCreated)
				}
				fmt.Fprint(w, tt.body)
			})
			err := tt.call(context.Background(), f.client(Options{}))
			if err == nil {
				t.Fatal("no error for a hostile answer")
			}
			if !strings.HasPrefix(err.Error(), "forgejo: ") {
				t.Errorf("error %q does not come from the client", err)
			}
		})
	}
}

func getPR(ctx context.Context, c *Client) error { _, err := c.PR(ctx, "o", "r", 3); return err }
func listReviews(ctx context.Context, c *Client) error {
	_, err := c.Reviews(ctx, "o", "r", 3)
	return err
}
func listComments(ctx context.Context, c *Client) error {
	_, err := c.Comments(ctx, "o", "r", 3)
	return err
}
func listStatuses(ctx context.Context, c *Client) error {
	_, err := c.StatusHistory(ctx, "o", "r", "h")
	return err
}
func readTimeline(ctx context.Context, c *Client) error {
	_, err := c.AutoMergeArmed(ctx, "o", "r", 3)
	return err
}
func listInline(ctx context.Context, c *Client) error {
	_, err := c.InlineComments(ctx, "o", "r", 3, 9)
	return err
}

func TestUnreadablePRsAreSkippedAndLoggedOnce(t *testing.T) {
	f := newFakeForge(t, 50)
	f.mux.HandleFunc("/api/v1/repos/o/r/pulls", func(w http.ResponseWriter, r *http.Request) {
		b, _ := json.Marshal(prJSON(2))
		fmt.Fprintf(w, `[null, %s, {"number":"x"}, {"number":4,"state":"open"}]`, b)
	})
	var logs bytes.Buffer
	c := f.client(Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	for range 3 {
		prs, err := c.OpenPRs(context.Background(), "o", "r")
		if err != nil || len(prs) != 1 || prs[0].Number != 2 {
			t.Fatalf("OpenPRs = %+v, %v; want PR 2 alone", prs, err)
		}
	}
	if n := strings.Count(logs.String(), "unreadable entries"); n != 1 {
		t.Errorf("warned %d times over three cycles, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "skipped=3") {
		t.Errorf("warning does not count the three bad entries:\n%s", logs.String())
	}
}

func TestErrorTextIsBoundedAndRedacted(t *testing.T) {
	f := newFakeForge(t, 50)
	f.mux.HandleFunc("/api/v1/repos/o/r/pulls/3", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "see http://admin:hunter2@forge.internal/debug "+strings.Repeat("z", 1<<20))
	})
	_, err := f.client(Options{}).PR(context.Background(), "o", "r", 3)
	if err == nil || !IsRetryable(err) {
		t.Fatalf("err = %v, want a retryable error", err)
	}
	if msg := err.Error(); len(msg) > 700 || strings.Contains(msg, "hunter2") {
		t.Errorf("error text is %d bytes or shows the password: %.200q", len(msg), msg)
	}
}

func TestHooks(t *testing.T) {
	f := newFakeForge(t, 2)
	hooks := []map[string]any{
		{"id": 1, "config": map[string]any{"url": "http://a/"}},
		{"id": 2, "config": map[string]any{"url": "http://b/"}},
		{"id": 3, "config": map[string]any{"url": "http://a/"}},
	}
	var created map[string]any
	var deleted []string
	f.mux.HandleFunc("GET /api/v1/repos/o/r/hooks", pagedList(hooks, nil))
	f.mux.HandleFunc("POST /api/v1/repos/o/r/hooks", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&created)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"id":4}`)
	})
	f.mux.HandleFunc("DELETE /api/v1/repos/o/r/hooks/{id}", func(w http.ResponseWriter, r *http.Request) {
		deleted = append(deleted, r.PathValue("id"))
		if r.PathValue("id") == "9" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	c := f.client(Options{})
	ctx := context.Background()
	got, err := c.Hooks(ctx, "o", "r")
	if err != nil || fmt.Sprint(got) != "[{1 http://a/} {2 http://b/} {3 http://a/}]" {
		t.Fatalf("Hooks = %v, %v", got, err)
	}
	if err := c.CreateHook(ctx, "o", "r", NewHook{URL: "http://c/", Secret: "s", Events: []string{"pull_request"}}); err != nil {
		t.Fatal(err)
	}
	cfg, _ := created["config"].(map[string]any)
	if created["type"] != "gitea" || created["active"] != true || cfg["url"] != "http://c/" || cfg["secret"] != "s" || cfg["content_type"] != "json" {
		t.Errorf("created %v", created)
	}
	if err := c.DeleteHook(ctx, "o", "r", 1); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteHook(ctx, "o", "r", 9); err != nil {
		t.Errorf("deleting a hook already gone: %v", err)
	}
	if fmt.Sprint(deleted) != "[1 9]" {
		t.Errorf("deleted %v", deleted)
	}
}

func TestChangedPRsKeepsTheForgeClockWhenTheFirstPageIsSplit(t *testing.T) {
	f := newFakeForge(t, 4)
	var issues []map[string]any
	for i := 1; i <= 3; i++ {
		issues = append(issues, map[string]any{"number": i, "state": "open", "updated_at": "2026-07-01T12:00:00Z",
			"body": strings.Repeat("b", 9000)})
	}
	f.mux.HandleFunc("/api/v1/repos/o/r/issues", pagedList(issues, nil))
	changes, served, err := f.client(Options{MaxBody: 20000}).ChangedPRs(context.Background(), "o", "r", time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC))
	if err != nil || len(changes) != 3 {
		t.Fatalf("ChangedPRs = %v, %v", changes, err)
	}
	if served.IsZero() {
		t.Error("the forge's clock was lost when the first page was read again in smaller pages")
	}
	if n := len(f.served()); n < 3 {
		t.Errorf("%d requests: the first page was not split", n)
	}
}
