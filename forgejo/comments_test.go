package forgejo

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCommentsOverTheCapAreReadInPages: a PR whose comments, in the one
// answer the forge gives for the list, are over the body cap is read from
// its paged timeline; the newest comments that fit are kept, one comment
// over the cap alone is skipped, and the read does not fail.
func TestCommentsOverTheCapAreReadInPages(t *testing.T) {
	const maxBody = 64 << 10
	var events, comments []map[string]any
	for i := 1; i <= 40; i++ {
		size := 3000
		if i == 20 {
			size = maxBody + 1 // one stranger's comment alone over the cap
		}
		c := map[string]any{"id": i, "body": fmt.Sprintf("%03d %s", i, strings.Repeat("x", size)),
			"user": map[string]string{"login": "chatty"}}
		comments = append(comments, c)
		events = append(events, map[string]any{"type": "commit_ref"}, withType(c, "comment"))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/version", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"version":"1.26.0"}`) })
	mux.HandleFunc("/api/v1/repos/o/r/issues/1/comments", func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(comments) })
	mux.HandleFunc("/api/v1/repos/o/r/issues/1/timeline", func(w http.ResponseWriter, r *http.Request) { servePage(w, r, events) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()
	c, err := New(ctx, srv.URL, "t", Options{MaxBody: maxBody})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Comments(ctx, "o", "r", 1)
	if err != nil {
		t.Fatalf("Comments: %v", err)
	}
	total := 0
	for i, cm := range got {
		total += len(cm.Body)
		if cm.ID == 20 {
			t.Errorf("the comment over the cap alone was kept")
		}
		if i > 0 && cm.ID <= got[i-1].ID {
			t.Errorf("comments out of order: %d after %d", cm.ID, got[i-1].ID)
		}
	}
	if len(got) == 0 || got[len(got)-1].ID != 40 || got[len(got)-1].Author != "chatty" {
		t.Fatalf("the newest comment is missing: %d comments", len(got))
	}
	if total > maxBody || total < maxBody-3100 {
		t.Errorf("kept %d bytes of comments, want the newest that fit in %d", total, maxBody)
	}
}

func withType(entry map[string]any, typ string) map[string]any {
	out := maps.Clone(entry)
	out["type"] = typ
	return out
}
