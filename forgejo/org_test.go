package forgejo

import (
	"context"
	"fmt"
	"slices"
	"testing"
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
