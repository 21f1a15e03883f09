package forgejo

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRefusalRule: the rule a refused merge names, from the forge's
// answers (Gitea 1.26 services/pull/merge.go, CheckPullBranchProtections;
// Forgejo's 413 for the quota).
func TestRefusalRule(t *testing.T) {
	tests := []struct {
		status  int
		message string
		want    string
	}{
		{405, `{"message":"The head branch is behind the base branch","url":"x"}`, RuleOutdated},
		{405, `{"message":"not ready to merge: Not all required status checks successful"}`, RuleStatusCheck},
		{405, `{"message":"Does not have enough approvals"}`, RuleApprovals},
		{405, `{"message":"There are requested changes"}`, RuleRejected},
		{405, `{"message":"There are official review requests"}`, RuleOfficialRequest},
		{405, `{"message":"Changed protected files"}`, RuleProtectedFiles},
		{405, `{"message":"User not allowed to merge PR"}`, RuleMergeWhitelist},
		{405, `{"message":"Work in progress PRs cannot be merged"}`, RuleWorkInProgress},
		{423, `{"message":"repo is archived"}`, RuleArchived},
		{413, `{"message":"quota exceeded"}`, RuleQuota},
		{405, `{"message":""}`, RuleUnknown},
	}
	for _, tt := range tests {
		if got := RefusalRule(tt.status, tt.message); got != tt.want {
			t.Errorf("RefusalRule(%d, %q) = %q, want %q", tt.status, tt.message, got, tt.want)
		}
	}
}

// TestUpdateAndParents: the update call's path and style, its answers
// classified (Gitea 1.26 routers/api/v1/repo/pull.go UpdatePullRequest:
// 200, 409 conflict, 403, 422 closed or merged, 500 up to date), and a
// commit's parents in order.
func TestUpdateAndParents(t *testing.T) {
	answers := map[string]int{"1": 200, "2": 409, "3": 403, "4": 422, "5": 500}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/version", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"version":"1.26.0"}`) })
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
