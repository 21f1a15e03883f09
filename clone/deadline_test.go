package clone

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// stalledGit is a git endpoint that accepts requests and never answers.
func stalledGit(t *testing.T) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv.URL + "/alice/demo.git"
}

func shortDeadlines(t *testing.T) {
	saved := deadlines
	deadlines.clone, deadlines.fetch, deadlines.reset = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	t.Cleanup(func() { deadlines = saved })
}

func TestCloneOfAStalledEndpointGivesUp(t *testing.T) {
	shortDeadlines(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	start := time.Now()
	_, err := New(context.Background(), Options{URL: stalledGit(t), Token: "x", Branch: "main"})
	if err == nil {
		t.Fatal("clone of a stalled endpoint succeeded")
	}
	if waited := time.Since(start); waited > time.Minute {
		t.Errorf("gave up after %s", waited) // the test's own guard, far above the deadline
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "pool-clone-*")); len(left) > 0 {
		t.Errorf("failed clone left %v", left)
	}
}

func TestFetchFromAStalledEndpointGivesUp(t *testing.T) {
	shortDeadlines(t)
	t.Setenv("TMPDIR", t.TempDir())
	c, err := New(context.Background(), Options{URL: localRepo(t), Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatalf("refresh from the local repository: %v", err)
	}
	// the remote stalls from now on
	if err := c.repo.DeleteRemote("origin"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.repo.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{stalledGit(t)}}); err != nil {
		t.Fatal(err)
	}
	err = c.Refresh(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), "clone: fetch:") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("refresh from a stalled endpoint: %v, want a fetch deadline", err)
	}
}

func TestAnOverrunResetBlocksRefreshUntilItEnds(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	c, err := New(context.Background(), Options{URL: localRepo(t), Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	release := make(chan struct{})
	err = c.within(context.Background(), 50*time.Millisecond, func() error { <-release; return nil })
	if err == nil || !strings.Contains(err.Error(), "no answer after 50ms") {
		t.Fatalf("within = %v, want the deadline", err)
	}
	if err := c.Refresh(context.Background()); !errors.Is(err, errResetRunning) {
		t.Errorf("refresh while the reset runs = %v, want errResetRunning", err)
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.Refresh(context.Background())
		if err == nil {
			break
		}
		if !errors.Is(err, errResetRunning) {
			t.Fatalf("refresh after the reset ended: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("refresh still refused after the reset ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// localRepo makes a repository with one commit on main, on disk.
func localRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: "refs/heads/main"}})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	f, err := wt.Filesystem.Create("README.md")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("hi\n"))
	f.Close()
	if _, err := wt.Add("README.md"); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "t", Email: "t@example.org", When: time.Now()}
	if _, err := wt.Commit("first", &git.CommitOptions{Author: sig}); err != nil {
		t.Fatal(err)
	}
	return dir
}
