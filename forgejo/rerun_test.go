package forgejo

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"pool/forge"
)

// TestRerunFailedJobsAsksGitea: the call is Gitea 1.26's POST
// /repos/{owner}/{repo}/actions/runs/{run}/rerun-failed-jobs with the
// token, no body, and its answers are told apart as Gitea gives them
// (routers/api/v1/repo/action.go, services/context/api.go): 201 with no
// body (started), 400 "this workflow run is not done", 403 for a token
// without write access to Actions, 404 naming the run Gitea does not
// find, and a forge with no such route (Forgejo: a 404 that names no run,
// or a 405). A 500 is an error naming the operation, without the token.
func TestRerunFailedJobsAsksGitea(t *testing.T) {
	const token = "s3cret-token-value"
	var mu sync.Mutex
	var asked []string
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/settings/api", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"max_response_items":50,"default_paging_num":30}`)
	})
	gitea := func(w http.ResponseWriter, status int, message string, errs ...string) {
		w.Header().Set("Content-Type", "application/json;charset=utf-8")
		w.WriteHeader(status)
		if errs == nil {
			fmt.Fprintf(w, `{"message":%q,"url":"http://forge.test/api/swagger"}`, message)
			return
		}
		fmt.Fprintf(w, `{"message":%q,"url":"http://forge.test/api/swagger","errors":[%q]}`, message, errs[0])
	}
	mux.HandleFunc("POST /api/v1/repos/acme/w/actions/runs/{run}/rerun-failed-jobs", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		switch r.PathValue("run") {
		case "7":
			w.WriteHeader(http.StatusCreated) // ctx.Status(http.StatusCreated): no body
		case "8":
			gitea(w, http.StatusBadRequest, "this workflow run is not done")
		case "9":
			gitea(w, http.StatusForbidden, "user should have a permission to write to a repo")
		case "10":
			gitea(w, http.StatusNotFound, "not found", "run with id 10: resource does not exist")
		case "11":
			gitea(w, http.StatusBadRequest, "workflow ci.yml is disabled")
		default:
			gitea(w, http.StatusInternalServerError, "")
		}
	})
	// Forgejo (through v15) has no rerun route: the router's "404 page not
	// found", as Gitea 1.26 answered a route it does not have on the test
	// forge; or a JSON 404 naming no run; or a 405.
	mux.HandleFunc("POST /api/v1/repos/acme/fj/actions/runs/{run}/rerun-failed-jobs", func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("run") {
		case "5":
			w.WriteHeader(http.StatusMethodNotAllowed)
		case "6":
			gitea(w, http.StatusNotFound, "not found")
		default:
			http.NotFound(w, r)
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()
	c, err := New(ctx, srv.URL, token, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		repo   string
		run    int64
		want   forge.RerunOutcome
		status int
	}{
		{"w", 7, forge.RerunStarted, 201},
		{"w", 8, forge.RerunNotDone, 400},
		{"w", 9, forge.RerunRefused, 403},
		{"w", 10, forge.RerunRefused, 404},
		{"w", 11, forge.RerunRefused, 400},
		{"fj", 4, forge.RerunNoEndpoint, 404},
		{"fj", 5, forge.RerunNoEndpoint, 405},
		{"fj", 6, forge.RerunNoEndpoint, 404},
	} {
		res, err := c.RerunFailedJobs(ctx, "acme", tt.repo, tt.run)
		if err != nil || res.Outcome != tt.want || res.Status != tt.status {
			t.Errorf("run %d of acme/%s: %+v, %v; want %s (%d)", tt.run, tt.repo, res, err, tt.want, tt.status)
		}
	}
	_, err = c.RerunFailedJobs(ctx, "acme", "w", 12)
	if err == nil || !strings.Contains(err.Error(), "rerun the failed jobs of Actions run 12 of acme/w") || strings.Contains(err.Error(), token) {
		t.Errorf("a 500: %v; want an error naming the operation, without the token", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) == 0 || asked[0] != "POST /api/v1/repos/acme/w/actions/runs/7/rerun-failed-jobs token "+token {
		t.Errorf("asked %q", asked)
	}
}
