package forgejo

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"pool/forge"
)

// TestRepositoryReadsTheMergeSettings: allow_fast_forward_only_merge as
// the forge sends it (Gitea 1.26, Forgejo 7.0 and later), and Unsaid,
// never a no, where an older forge sends no such field.
func TestRepositoryReadsTheMergeSettings(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		want       forge.Repository
		wantErr    bool
	}{
		{"allowed", `{"default_branch":"main","allow_merge_commits":true,"allow_fast_forward_only_merge":true}`,
			forge.Repository{DefaultBranch: "main", FastForwardOnly: forge.Yes}, false},
		{"not allowed", `{"default_branch":"trunk","allow_fast_forward_only_merge":false}`,
			forge.Repository{DefaultBranch: "trunk", FastForwardOnly: forge.No}, false},
		{"an older forge", `{"default_branch":"main","allow_merge_commits":true,"allow_rebase":true}`,
			forge.Repository{DefaultBranch: "main", FastForwardOnly: forge.Unsaid}, false},
		{"no default branch", `{"allow_fast_forward_only_merge":true}`, forge.Repository{}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("/api/v1/repos/acme/w", func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tt.body))
			})
			srv := httptest.NewServer(mux)
			defer srv.Close()
			ctx := context.Background()
			c, err := New(ctx, srv.URL, "t", Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Repository(ctx, "acme", "w")
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("Repository = %+v, %v; want %+v (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
