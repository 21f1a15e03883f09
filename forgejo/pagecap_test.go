package forgejo

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestReviewListsHaveACap: anyone signed in may review a public PR, and a
// decision reads a PR's reviews whole; a list without end (a forge that
// pages forever, or a flood of reviews) is an error after at most
// maxListPages pages, or once its pages hold more than the body cap in all,
// the bound a PR's comments have (one answer), not a read that never ends.
func TestReviewListsHaveACap(t *testing.T) {
	endless := func(w http.ResponseWriter, r *http.Request) {
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		out := []map[string]any{}
		for i := (page-1)*limit + 1; i <= page*limit && page <= 20*maxListPages; i++ {
			out = append(out, review(i, ""))
		}
		_ = json.NewEncoder(w).Encode(out)
	}
	var big []map[string]any
	for i := 1; i <= 10; i++ {
		big = append(big, review(i, strings.Repeat("x", 3000)))
	}
	tests := []struct {
		name    string
		serve   http.HandlerFunc
		maxBody int64
		want    string
	}{
		{"endless pages", endless, 0, "pages"},
		{"over the body cap in all", pagedList(big, nil), 20000, "20000 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeForge(t, 4)
			f.mux.HandleFunc("/api/v1/repos/o/r/pulls/1/reviews", tt.serve)
			got, err := f.client(Options{MaxBody: tt.maxBody}).ReviewDetails(context.Background(), "o", "r", 1)
			if err == nil {
				t.Fatalf("ReviewDetails read %d reviews in %d requests, no error; want the list refused at its cap", len(got), len(f.served()))
			}
			for _, want := range []string{"list reviews of o/r#1", tt.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if n := len(f.served()); n > maxListPages {
				t.Errorf("%d requests, want at most %d", n, maxListPages)
			}
		})
	}
}
