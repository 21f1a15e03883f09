package forgejo

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestUpdateAndParents: the update call's path and style, its answers
// classified (Gitea 1.26 routers/api/v1/repo/pull.go UpdatePullRequest:
// 200, 409 conflict, 403, 422 closed or merged, 500 up to date), and a
// commit's parents in order.
func TestUpdateAndParents(t *testing.T) {
	answers := map[string]int{"1": 200, "2": 409, "3": 403, "4": 422, "5": 500}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/repos/o/r/pulls/{n}/update", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("style") != "rebase" {
			http.Error(w, "style", http.StatusBadRequest)
			return
		}
		w.WriteHeader(answers[r.PathValue("n")])
	})
	mux.HandleFunc("GET /api/v1/repos/o/r/git/commits/m1", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"sha":"m1","parents":[{"sha":"h1"},{"sha":"b2"}]}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()
	c, err := New(ctx, srv.URL, "t", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]UpdateOutcome{1: UpdateDone, 2: UpdateConflict, 3: UpdateRefused, 4: UpdateClosed} {
		if res, err := c.Update(ctx, "o", "r", n, "rebase"); err != nil || res.Outcome != want {
			t.Errorf("Update #%d = %+v, %v; want %s", n, res, err, want)
		}
	}
	if res, err := c.Update(ctx, "o", "r", 5, "rebase"); err == nil || !IsRetryable(err) || res.Outcome != UpdateFailed {
		t.Errorf("Update answered 500 = %+v, %v; want a retryable error", res, err)
	}
	if parents, err := c.CommitParents(ctx, "o", "r", "m1"); err != nil || len(parents) != 2 || parents[0] != "h1" || parents[1] != "b2" {
		t.Errorf("CommitParents = %v, %v", parents, err)
	}
}
