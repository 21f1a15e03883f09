package reap

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// orphan starts, in dir, a process whose shell is gone (a `nohup cmd &`),
// with a child of its own when family; stubborn ignores SIGTERM. It
// returns the process's id.
func orphan(t *testing.T, dir string, stubborn, family bool) int {
	t.Helper()
	body := "sleep 300"
	if family {
		body = "sleep 300 & wait"
	}
	if stubborn {
		body = "trap '' TERM; while :; do sleep 1; done"
	}
	cmd := exec.Command("sh", "-c", "("+body+") </dev/null >/dev/null 2>&1 & echo $!")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd"); err == nil && strings.HasPrefix(cwd, dir) {
			_ = syscallKill(pid)
		}
	})
	return pid
}

func syscallKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

func runs(pid int) bool {
	st, err := readStat(pid)
	return err == nil && st.state != "Z"
}

func pids(ps []Proc) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.PID)
	}
	return out
}

// TestTreeEndsWhatASessionLeft: in a tree, an orphaned process, one that
// ignores SIGTERM and an orphan's child are ended (the stubborn one with
// SIGKILL); a process that a live process outside the tree started there
// (as the agent server starts an instance's MCP server) is spared, as is
// an orphan in another directory.
func TestTreeEndsWhatASessionLeft(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tree, other := filepath.Join(base, "tree"), filepath.Join(base, "tree-2")
	for _, d := range []string{filepath.Join(tree, "sub"), other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	plain := orphan(t, filepath.Join(tree, "sub"), false, false)
	stubborn := orphan(t, tree, true, false)
	family := orphan(t, tree, false, true)
	elsewhere := orphan(t, other, false, false) // a sibling directory whose name starts with the tree's
	server := exec.Command("sleep", "300")
	server.Dir = tree
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Process.Kill(); _ = server.Wait() })

	res, err := Tree(context.Background(), tree, 200*time.Millisecond, -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{plain, stubborn, family} {
		if !slices.Contains(pids(res.Ended), pid) {
			t.Errorf("ended %v, want %d among them", res.Ended, pid)
		}
	}
	if !slices.Contains(pids(res.Killed), stubborn) {
		t.Errorf("killed %v, want the one that ignores SIGTERM, %d", res.Killed, stubborn)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range []int{plain, stubborn, family} {
		for runs(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if runs(pid) {
			t.Errorf("process %d still runs", pid)
		}
	}
	if !runs(server.Process.Pid) || !runs(elsewhere) {
		t.Errorf("spared processes ended: server running %v, elsewhere running %v", runs(server.Process.Pid), runs(elsewhere))
	}
	only := []int{server.Process.Pid} // the family's child is gone too
	for !slices.Equal(inTreeNow(t, tree), only) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if left := inTreeNow(t, tree); !slices.Equal(left, only) {
		t.Errorf("processes in the tree %v, want only the spared %v", left, only)
	}
	if again, err := Tree(context.Background(), tree, time.Second, -1); err != nil || len(again.Ended) != 0 {
		t.Errorf("a second pass = %+v, %v; want nothing left to end", again, err)
	}
}

// inTreeNow lists the running processes whose working directory is in
// tree.
func inTreeNow(t *testing.T, tree string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !runs(pid) {
			continue
		}
		if in, err := inTree(pid, tree); err == nil && in {
			out = append(out, pid)
		}
	}
	return out
}
