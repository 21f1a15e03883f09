package forgejo

import (
	"context"
	"fmt"
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
