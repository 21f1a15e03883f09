package forgejo

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"pool/forge"
	"pool/internal/sandbox"
)

// TestOpenDependenciesOnTheRealForge: on the real forge, a PR that depends
// on an open issue is refused a merge (HTTP 500, no outcome the pool could
// act on); OpenDependencies names the issue while it is open, nothing once
// it is closed, and nothing (not an error) once the repository disables
// dependencies; the merge then goes through.
func TestOpenDependenciesOnTheRealForge(t *testing.T) {
	srv := sandbox.SharedForge(t)
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	const user, repo = "dep-alice", "dep-demo"
	ch, err := srv.OpenChange(ctx, user, repo, "f1", "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	issue, err := srv.CreateIssue(ctx, ch.Token, user, repo, "do this first")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.AddDependency(ctx, ch.Token, user, repo, ch.PR, issue); err != nil {
		t.Fatal(err)
	}
	c, err := New(ctx, srv.URL, ch.Token, Options{})
	if err != nil {
		t.Fatal(err)
	}
	deps, err := c.OpenDependencies(ctx, user, repo, ch.PR)
	if want := fmt.Sprintf("[#%d]", issue); err != nil || fmt.Sprint(deps) != want {
		t.Fatalf("OpenDependencies = %v, %v; want %s", deps, err, want)
	}
	res, err := c.Merge(ctx, user, repo, ch.PR, MergeOptions{Style: "merge", HeadSHA: ch.Head})
	if res.Status != http.StatusInternalServerError || err == nil {
		t.Errorf("merge with an open dependency = %+v, %v; want HTTP 500 (the forge's answer the pool must not provoke)", res, err)
	}
	if err := srv.CloseIssue(ctx, ch.Token, user, repo, issue); err != nil {
		t.Fatal(err)
	}
	if deps, err := c.OpenDependencies(ctx, user, repo, ch.PR); err != nil || len(deps) != 0 {
		t.Fatalf("OpenDependencies after closing the issue = %v, %v; want none", deps, err)
	}
	disable := map[string]any{"has_issues": true, "internal_tracker": map[string]any{"enable_issue_dependencies": false}}
	if _, err := srv.Do(ctx, ch.Token, http.MethodPatch, "/repos/"+user+"/"+repo, disable, nil); err != nil {
		t.Fatal(err)
	}
	if deps, err := c.OpenDependencies(ctx, user, repo, ch.PR); err != nil || len(deps) != 0 {
		t.Fatalf("OpenDependencies with dependencies disabled = %v, %v; want none", deps, err)
	}
	for {
		res, err := c.Merge(ctx, user, repo, ch.PR, MergeOptions{Style: "merge", HeadSHA: ch.Head})
		if err != nil || res.Outcome == forge.MergeDone {
			if err != nil {
				t.Fatalf("merge after the dependency closed: %v", err)
			}
			return
		}
		if res.Outcome != forge.MergeNotReady {
			t.Fatalf("merge after the dependency closed = %+v", res)
		}
		select {
		case <-ctx.Done():
			t.Fatal("the forge never became ready to merge")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestDependenciesOfARepositoryWithoutThem: where issue dependencies are
// disabled (or the repository has no issues), the forge answers their list
// 404; the PR has none, and its merge goes on.
func TestDependenciesOfARepositoryWithoutThem(t *testing.T) {
	f := newFakeForge(t, 50)
	f.mux.HandleFunc("/api/v1/repos/o/r/issues/3/dependencies", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"message":"The target couldn't be found."}`, http.StatusNotFound)
	})
	deps, err := f.client(Options{}).OpenDependencies(context.Background(), "o", "r", 3)
	if err != nil || len(deps) != 0 {
		t.Errorf("OpenDependencies = %v, %v; want none", deps, err)
	}
}
