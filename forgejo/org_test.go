package forgejo

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestOrgReposLeavesArchivedOnesOut(t *testing.T) {
	f := newFakeForge(t, 2)
	var entries []map[string]any
	for i := 1; i <= 5; i++ {
		entries = append(entries, map[string]any{"full_name": fmt.Sprintf("acme/r%d", i), "archived": i == 2})
	}
	entries = append(entries, map[string]any{"full_name": "no-slash"}, nil)
	f.mux.HandleFunc("/api/v1/orgs/acme/repos", pagedList(entries, nil))
	got, err := f.client(Options{}).OrgRepos(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"acme/r1", "acme/r3", "acme/r4", "acme/r5"}; !slices.Equal(got, want) {
		t.Errorf("OrgRepos = %v, want %v", got, want)
	}
}

func TestSearchChangedPRsNamesEachRepository(t *testing.T) {
	f := newFakeForge(t, 2)
	issue := func(repo string, n int, state string) map[string]any {
		return map[string]any{"number": n, "state": state, "updated_at": "2026-07-01T12:00:00Z",
			"repository": map[string]any{"full_name": repo}}
	}
	entries := []map[string]any{issue("acme/a", 1, "open"), issue("acme/b", 1, "closed"), issue("acme/a", 2, "open"),
		{"number": 9, "state": "open"}} // no repository: left out
	f.mux.HandleFunc("/api/v1/repos/issues/search", pagedList(entries, nil))
	got, _, err := f.client(Options{}).SearchChangedPRs(context.Background(), "acme", time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, ch := range got {
		keys = append(keys, fmt.Sprintf("%s#%d %s", ch.Repo, ch.Number, ch.State))
	}
	if want := []string{"acme/a#1 open", "acme/b#1 closed", "acme/a#2 open"}; !slices.Equal(keys, want) {
		t.Errorf("changes %v, want %v", keys, want)
	}
	for _, r := range f.served() {
		if !strings.Contains(r, "owner=acme") || !strings.Contains(r, "type=pulls") || !strings.Contains(r, "state=all") || !strings.Contains(r, "since=2026-07-01T00") {
			t.Errorf("request %s lacks the owner, type, state or since", r)
		}
	}
}

func TestOrganisationHooksLiveUnderTheOrganisation(t *testing.T) {
	f := newFakeForge(t, 50)
	f.mux.HandleFunc("GET /api/v1/orgs/acme/hooks", pagedList([]map[string]any{{"id": 4, "config": map[string]any{"url": "http://h/"}}}, nil))
	f.mux.HandleFunc("POST /api/v1/orgs/acme/hooks", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })
	f.mux.HandleFunc("DELETE /api/v1/orgs/acme/hooks/4", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	c := f.client(Options{})
	ctx := context.Background()
	hooks, err := c.Hooks(ctx, "acme", "")
	if err != nil || len(hooks) != 1 || hooks[0].ID != 4 || hooks[0].URL != "http://h/" {
		t.Fatalf("Hooks = %+v, %v", hooks, err)
	}
	if err := c.CreateHook(ctx, "acme", "", NewHook{URL: "http://h/", Secret: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteHook(ctx, "acme", "", 4); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.served() {
		if !strings.HasPrefix(r, "/api/v1/orgs/acme/hooks") {
			t.Errorf("request %s is not to the organisation's hooks", r)
		}
	}
}

// TestAnEmptyPageMidListDoesNotEndIt: the forge filters the organisation's
// repositories after paging, so a whole page can come back empty in the
// middle of the list; X-Total-Count, the unfiltered count, says more pages
// follow, and the client reads on to it. (The timeline's X-Total-Count
// counts its page alone: TestTheTimelinesCountIsOfItsPage.)
func TestAnEmptyPageMidListDoesNotEndIt(t *testing.T) {
	f := newFakeForge(t, 2)
	var repos []map[string]any
	for i := 1; i <= 6; i++ {
		repos = append(repos, map[string]any{"full_name": fmt.Sprintf("acme/r%d", i)})
	}
	unreadable := map[any]bool{"acme/r3": true, "acme/r4": true} // the whole second page
	f.mux.HandleFunc("/api/v1/orgs/acme/repos", withTotal(len(repos),
		pagedList(repos, func(m map[string]any) bool { return !unreadable[m["full_name"]] })))
	c := f.client(Options{})
	got, err := c.OrgRepos(context.Background(), "acme")
	if want := []string{"acme/r1", "acme/r2", "acme/r5", "acme/r6"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("OrgRepos = %v, %v; want %v", got, err, want)
	}
}

// TestAFilteredListEndsAtTheForgesCount: a review list whose X-Total-Count
// (the unfiltered count) is reached by a short page costs no request for an
// empty page after it; without the header the client reads on to one.
func TestAFilteredListEndsAtTheForgesCount(t *testing.T) {
	for _, tt := range []struct {
		name  string
		total bool
		want  int
	}{{"with X-Total-Count", true, 2}, {"without", false, 3}} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeForge(t, 4)
			reviews := []map[string]any{review(1, ""), review(2, ""), review(3, ""), review(4, ""), review(5, "")}
			h := pagedList(reviews, func(m map[string]any) bool { return m["id"] != 2 })
			if tt.total {
				h = withTotal(len(reviews), h)
			}
			f.mux.HandleFunc("/api/v1/repos/o/r/pulls/1/reviews", h)
			got, err := f.client(Options{}).Reviews(context.Background(), "o", "r", 1)
			if err != nil || len(got) != 4 {
				t.Fatalf("Reviews = %v, %v; want the 4 shown", got, err)
			}
			if n := len(f.served()); n != tt.want {
				t.Errorf("%d requests, want %d: %v", n, tt.want, f.served())
			}
		})
	}
}

// withTotal adds the forge's X-Total-Count header, the list's unfiltered length.
func withTotal(total int, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Total-Count", strconv.Itoa(total))
		h(w, r)
	}
}
