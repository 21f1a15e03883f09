package clone

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	deadlines.clone, deadlines.fetch, deadlines.tree = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	t.Cleanup(func() { deadlines = saved })
}

func TestCloneOfAStalledEndpointGivesUp(t *testing.T) {
	shortDeadlines(t)
	dir := filepath.Join(t.TempDir(), "clone")
	start := time.Now()
	_, err := Open(context.Background(), Options{Dir: dir, URL: stalledGit(t), Token: "x", Branch: "main"})
	if err == nil {
		t.Fatal("clone of a stalled endpoint succeeded")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("clone of a stalled endpoint: %v, want its deadline", err)
	}
	if waited := time.Since(start); waited > time.Minute {
		t.Errorf("gave up after %s", waited) // the test's own guard, far above the deadline
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a failed clone left %s (%v)", dir, err)
	}
}

func TestFetchFromAStalledEndpointGivesUp(t *testing.T) {
	src := t.TempDir()
	head := localForge(t, src)
	// The clone of a healthy remote keeps its usual deadline: 300 ms is too
	// short for it on a busy machine, and it is not what is tested.
	c, err := Open(context.Background(), Options{Dir: filepath.Join(t.TempDir(), "clone"), URL: src, Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	shortDeadlines(t)
	c.url = stalledGit(t) // the remote stalls from now on
	_, err = c.TakeTree(context.Background(), 1, head)
	if err == nil || !strings.HasPrefix(err.Error(), "clone: fetch") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("work tree from a stalled endpoint: %v, want a fetch deadline", err)
	}
}
