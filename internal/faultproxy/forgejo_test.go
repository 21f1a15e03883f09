package faultproxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeGitea answers the few Gitea 1.26 endpoints the Forgejo mode rewrites.
type fakeGitea struct {
	*httptest.Server
	mu         sync.Mutex
	merged     bool
	mergeCalls int
	reviews    int      // reviews on PR 1
	hookEvents []string // events of the last hook created
}

func newFakeGitea(t *testing.T, reviews int) *fakeGitea {
	t.Helper()
	g := &fakeGitea{reviews: reviews}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/repos/o/r/pulls/1/merge", func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.mergeCalls++
		if g.merged {
			w.WriteHeader(http.StatusMethodNotAllowed)
			io.WriteString(w, `{"message":"The PR is already merged","url":"http://f/api/swagger"}`)
			return
		}
		g.merged = true
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET /api/v1/repos/o/r/pulls/1", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"id":11,"number":1,"head":{"ref":"feature-1","repo_id":3},"base":{"ref":"main","repo_id":3}}`)
	})
	mux.HandleFunc("GET /api/v1/repos/o/r/pulls", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `[{"number":1},{"number":2},{"number":3}]`)
	})
	mux.HandleFunc("GET /api/v1/repos/o/r/pulls/1/reviews", func(w http.ResponseWriter, r *http.Request) {
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		out := []map[string]int{}
		for id := (page-1)*limit + 1; id <= min(page*limit, g.reviews); id++ {
			out = append(out, map[string]int{"id": id})
		}
		json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("POST /api/v1/repos/o/r/hooks", func(w http.ResponseWriter, r *http.Request) {
		var hook map[string]any
		json.NewDecoder(r.Body).Decode(&hook)
		g.mu.Lock()
		g.hookEvents = nil
		for _, e := range hook["events"].([]any) {
			g.hookEvents = append(g.hookEvents, e.(string))
		}
		g.mu.Unlock()
		hook["id"] = 9
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(hook)
	})
	g.Server = httptest.NewServer(mux)
	t.Cleanup(g.Close)
	return g
}

func call(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "token t")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const mergeURL = "/api/v1/repos/o/r/pulls/1/merge"

func TestForgejoMerge(t *testing.T) {
	tests := []struct {
		name       string
		opts       ForgejoOptions
		premerged  bool
		wantStatus int
		wantBody   string // a substring of the answer
		wantMerged bool
		wantCalls  int // merge calls the forge saw
		rewrite    string
	}{
		{"quota", ForgejoOptions{QuotaRefusals: 1}, false, http.StatusRequestEntityTooLarge, `"message":"quota exceeded"`, false, 0, RewriteQuota},
		{"lost race", ForgejoOptions{MergeRaces: 1}, false, http.StatusConflict, `"HeadBranch":"feature-1"`, true, 1, RewriteRace},
		{"merged twice", ForgejoOptions{MergedTwice: 1}, false, http.StatusMethodNotAllowed, `"message":""`, true, 2, RewriteMergedTwice},
		{"already merged", ForgejoOptions{}, true, http.StatusMethodNotAllowed, `"message":""`, true, 1, RewriteEmptyMessage},
		{"plain merge", ForgejoOptions{}, false, http.StatusOK, ``, true, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newFakeGitea(t, 0)
			g.merged = tt.premerged
			p := startProxy(t, Options{Upstream: g.URL, Forgejo: &tt.opts})
			status, body := call(t, http.MethodPost, p.URL+mergeURL, `{"Do":"merge"}`)
			if status != tt.wantStatus || !strings.Contains(body, tt.wantBody) {
				t.Errorf("got %d %s, want %d with %s", status, body, tt.wantStatus, tt.wantBody)
			}
			if tt.name == "lost race" && strings.Contains(body, "message") {
				t.Errorf("a lost race answers the error struct, not a message: %s", body)
			}
			if g.merged != tt.wantMerged || g.mergeCalls != tt.wantCalls {
				t.Errorf("forge merged=%v after %d calls, want %v after %d", g.merged, g.mergeCalls, tt.wantMerged, tt.wantCalls)
			}
			if tt.rewrite != "" && p.Stats().Rewrites[tt.rewrite] != 1 {
				t.Errorf("rewrites %v, want one %q", p.Stats().Rewrites, tt.rewrite)
			}
		})
	}
}

// TestForgejoMergeRewritesOnce: each planned rewrite happens once, in order.
func TestForgejoMergeRewritesOnce(t *testing.T) {
	g := newFakeGitea(t, 0)
	p := startProxy(t, Options{Upstream: g.URL, Forgejo: &ForgejoOptions{QuotaRefusals: 1, MergeRaces: 1}})
	var got []int
	for range 3 {
		status, _ := call(t, http.MethodPost, p.URL+mergeURL, `{}`)
		got = append(got, status)
	}
	if want := []int{413, 409, 405}; !slices.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
}

func TestForgejoNullInPRList(t *testing.T) {
	g := newFakeGitea(t, 0)
	p := startProxy(t, Options{Upstream: g.URL, Forgejo: &ForgejoOptions{NullShare: 1}})
	_, body := call(t, http.MethodGet, p.URL+"/api/v1/repos/o/r/pulls?state=open", "")
	var page []*struct{ Number int }
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatal(err)
	}
	nulls, numbers := 0, []int{}
	for _, pr := range page {
		if pr == nil {
			nulls++
		} else {
			numbers = append(numbers, pr.Number)
		}
	}
	if nulls != 1 || !slices.Equal(numbers, []int{1, 2, 3}) {
		t.Errorf("page %s: want the three PRs and one null", body)
	}
}

// TestForgejoShortPages: page 1 is short, yet paging to an empty page reads
// every review once; stopping at the first short page misses some.
func TestForgejoShortPages(t *testing.T) {
	g := newFakeGitea(t, 5)
	p := startProxy(t, Options{Upstream: g.URL, Forgejo: &ForgejoOptions{ShortPages: true}})
	var pages [][]int
	for page := 1; ; page++ {
		_, body := call(t, http.MethodGet, fmt.Sprintf("%s/api/v1/repos/o/r/pulls/1/reviews?limit=2&page=%d", p.URL, page), "")
		var batch []struct{ ID int }
		if err := json.Unmarshal([]byte(body), &batch); err != nil {
			t.Fatalf("page %d: %s", page, body)
		}
		if len(batch) == 0 {
			break
		}
		var ids []int
		for _, r := range batch {
			ids = append(ids, r.ID)
		}
		pages = append(pages, ids)
	}
	if want := [][]int{{1}, {2, 3}, {4, 5}}; fmt.Sprint(pages) != fmt.Sprint(want) {
		t.Errorf("pages %v, want %v", pages, want)
	}
	if p.Stats().Rewrites[RewriteShortPage] != 1 {
		t.Errorf("rewrites %v, want one short page", p.Stats().Rewrites)
	}
}

func TestForgejoHookWithoutStatus(t *testing.T) {
	g := newFakeGitea(t, 0)
	p := startProxy(t, Options{Upstream: g.URL, Forgejo: &ForgejoOptions{NoStatusHook: true}})
	status, body := call(t, http.MethodPost, p.URL+"/api/v1/repos/o/r/hooks",
		`{"type":"gitea","events":["pull_request","status","issue_comment"],"active":true}`)
	if status != http.StatusCreated || !strings.Contains(body, `"status"`) {
		t.Errorf("got %d %s, want 201 listing status", status, body)
	}
	if want := []string{"pull_request", "issue_comment"}; !slices.Equal(g.hookEvents, want) {
		t.Errorf("forge registered %v, want %v", g.hookEvents, want)
	}
}
