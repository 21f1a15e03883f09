package reap

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// helper serves each connection on a socket in a new directory as the
// helper the pool asks does, with root as its root.
func helper(t *testing.T, root string) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "reap.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { l.Close(); <-done })
	go func() {
		defer close(done)
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			_ = Serve(context.Background(), conn, conn, root, 200*time.Millisecond)
			conn.Close()
		}
	}()
	return sock
}

// TestTheHelperEndsWhatASessionLeft: asked over its socket, the helper
// ends a process left in a tree under its root and names it; a path
// outside its root, or one through a link, it refuses and ends nothing.
func TestTheHelperEndsWhatASessionLeft(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, outside := filepath.Join(base, "state"), filepath.Join(base, "elsewhere")
	tree := filepath.Join(root, "clone", "trees", "tree-1")
	for _, d := range []string{tree, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "clone", "trees", "tree-2")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	sock := helper(t, root)
	ctx := context.Background()

	away := orphan(t, outside, false, false)
	for _, dir := range []string{outside, link, root + "/../elsewhere", "clone/trees/tree-1"} {
		if lines, err := Ask(ctx, sock, dir, time.Minute); err == nil {
			t.Errorf("Ask(%s) = %v, nil; want it refused", dir, lines)
		}
	}
	if !runs(away) {
		t.Errorf("a process outside the helper's root was ended")
	}

	left := orphan(t, tree, false, false)
	lines, err := Ask(ctx, sock, tree, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if want := "ended " + strconv.Itoa(left) + " "; len(lines) == 0 || !strings.HasPrefix(lines[0], want) {
		t.Errorf("answer %q, want a line starting %q", lines, want)
	}
	deadline := time.Now().Add(30 * time.Second)
	for runs(left) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if runs(left) {
		t.Errorf("process %d left in the tree still runs", left)
	}
}
