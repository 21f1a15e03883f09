package forgejo

import (
	"context"
	"fmt"
	"net/http"
	"slices"
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
