package clone

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// leaveProcess starts, in dir, a process that outlives the shell that
// started it, as a session's `nohup ... &` does, and ignores SIGTERM when
// stubborn. It returns the process's id.
func leaveProcess(t *testing.T, dir string, stubborn bool) int {
	t.Helper()
	script := `sleep 300 </dev/null >/dev/null 2>&1 & echo $!`
	if stubborn {
		script = `(trap '' TERM; while :; do sleep 1; done) </dev/null >/dev/null 2>&1 & echo $!`
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = killIfIn(pid, dir) })
	return pid
}

// killIfIn kills pid if it still works in dir (the test's own leftover,
// not a reused id).
func killIfIn(pid int, dir string) error {
	if cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd"); err == nil && strings.HasPrefix(cwd, dir) {
		return exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
	}
	return nil
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	rest := s[strings.LastIndexByte(s, ')')+1:]
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// TestLeftProcessesEndBeforeTheTreeIsReused: processes a session left
// running in its tree (one that ends on SIGTERM, one that ignores it) are
// ended before the tree is reset for the next session, and those a tree
// being removed holds before it goes; a process elsewhere is left alone.
func TestLeftProcessesEndBeforeTheTreeIsReused(t *testing.T) {
	c, head1, head2 := openTwoPRs(t)
	ctx := context.Background()
	dir, err := c.TakeTree(ctx, 1, head1)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := leaveProcess(t, t.TempDir(), false)
	left := []int{leaveProcess(t, dir, false), leaveProcess(t, dir, true)}
	if kept, err := c.GiveTree(ctx, dir, 1); err != nil || !kept {
		t.Fatalf("GiveTree = %v, %v", kept, err)
	}
	again, err := c.TakeTree(ctx, 2, head2)
	if err != nil || again != dir {
		t.Fatalf("TakeTree = %q, %v; want the warm tree %s", again, err, dir)
	}
	for _, pid := range left {
		if alive(pid) {
			t.Errorf("process %d the first session left in %s still runs when the tree is given to the next", pid, dir)
		}
	}
	if !alive(elsewhere) {
		t.Errorf("process %d outside the tree was ended", elsewhere)
	}
	late := leaveProcess(t, dir, true)
	if err := c.RemoveTree(ctx, dir); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for alive(late) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(late) {
		t.Errorf("process %d left in a removed tree still runs", late)
	}
}

// TestTheReaperIsAskedBeforeAReset: with a reaper (Options.Reaper), the
// clone asks it, naming the tree, when the tree is given back and before
// it is reset for the next session.
func TestTheReaperIsAskedBeforeAReset(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	head1, head2 := twoPRForge(t, src)
	sock := filepath.Join(t.TempDir(), "reaper.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan string, 10)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				close(asked)
				return
			}
			line, _ := bufio.NewReader(conn).ReadString('\n')
			asked <- strings.TrimSpace(line)
			fmt.Fprintln(conn, "ok")
			conn.Close()
		}
	}()
	c, err := Open(context.Background(), Options{Dir: filepath.Join(t.TempDir(), "clone"), URL: src, Token: "tok", Branch: "main", Reaper: sock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Remove() })
	ctx := context.Background()
	dir, err := c.TakeTree(ctx, 1, head1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GiveTree(ctx, dir, 1); err != nil {
		t.Fatal(err)
	}
	if again, err := c.TakeTree(ctx, 2, head2); err != nil || again != dir {
		t.Fatalf("TakeTree = %q, %v; want the warm tree %s", again, err, dir)
	}
	l.Close()
	var got []string
	for a := range asked {
		got = append(got, a)
	}
	if want := []string{dir, dir}; !slices.Equal(got, want) {
		t.Errorf("the reaper was asked for %q, want %q (given back, then reset)", got, want)
	}
}
