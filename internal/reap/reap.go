// Package reap ends the processes a session left running in its work tree,
// before the tree is reset for the next session or removed.
//
// A process is in a tree when its working directory or its root is the
// tree or under it (/proc/<pid>/cwd, /proc/<pid>/root; a deleted
// directory counts). Of those it spares the ones a live process outside the
// tree started, and their children: the agent server keeps servers for a
// directory's instance (an MCP server, a language server) running there
// with their working directory in it, and a warm tree keeps its instance
// for the next session. The others are what a session left: orphans, such
// as a `nohup cmd &` whose shell is gone, reparented to init, and their
// children. Each gets SIGTERM, and SIGKILL if it is still there after a
// grace period.
//
// What it cannot see: a process that moved its working directory out of
// the tree (it is no longer "in" it, though it may write there by path),
// and a process of another user when the pool may not read its /proc entry
// (counted in Result.Hidden). A command the agent server still runs is the
// server's to end; a fixer's commands run in a sandbox whose PID namespace
// ends with the command.
package reap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc is a process found in a tree.
type Proc struct {
	PID  int
	UID  int
	Name string // its command name (/proc/<pid>/comm)
}

func (p Proc) String() string { return fmt.Sprintf("%d %s (uid %d)", p.PID, p.Name, p.UID) }

// Result is what Tree did.
type Result struct {
	Ended  []Proc // asked to end (SIGTERM)
	Killed []Proc // of those, still there after the grace period (SIGKILL)
	// Hidden counts the processes in group whose working directory the
	// caller may not read (another user's): they may be in the tree.
	Hidden int
}

// procRoot is where the processes are listed; tests do not change it.
const procRoot = "/proc"

// rounds bounds the scans after the first: a process that forks while it
// is ended is found by the next.
const rounds = 5

// Tree ends the processes in dir that a session left (see the package
// comment): SIGTERM, then SIGKILL to those still there after grace. group,
// if not negative, is the group whose processes Hidden counts. It never
// signals its own process.
func Tree(ctx context.Context, dir string, grace time.Duration, group int) (Result, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Result{}, fmt.Errorf("reap: %s: %w", dir, err)
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	var res Result
	found, hidden, err := scan(dir, group)
	if err != nil {
		return res, err
	}
	res.Hidden = hidden
	if len(found) == 0 {
		return res, nil
	}
	res.Ended = signal(found, dir, syscall.SIGTERM)
	wait(ctx, found, grace)
	for i := 0; i < rounds; i++ {
		left, _, err := scan(dir, group)
		if err != nil || len(left) == 0 {
			return res, err
		}
		res.Killed = append(res.Killed, signal(left, dir, syscall.SIGKILL)...)
		wait(ctx, left, killWait) // a killed process takes a moment to go
	}
	return res, fmt.Errorf("reap: %s: processes still there after %d rounds of SIGKILL", dir, rounds)
}

// killWait bounds the wait for killed processes to go, each round: one in
// uninterruptible sleep goes only when its call returns.
const killWait = 5 * time.Second

// found is a process in the tree, as a scan saw it.
type found struct {
	Proc
	start string // its start time (/proc/<pid>/stat): a reused id has another
}

// scan lists the processes in dir that no live process outside it started.
func scan(dir string, group int) ([]found, int, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, 0, fmt.Errorf("reap: list processes: %w", err)
	}
	self := os.Getpid()
	in := map[int]found{}
	parent := map[int]int{}
	hidden := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		inside, err := inTree(pid, dir)
		if errors.Is(err, os.ErrPermission) {
			if group >= 0 && inGroup(pid, group) {
				hidden++
			}
			continue
		}
		if err != nil || !inside {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.state == "Z" {
			continue // gone, or ended and waiting for its parent
		}
		in[pid] = found{Proc: Proc{PID: pid, UID: owner(pid), Name: comm(pid)}, start: st.start}
		parent[pid] = st.ppid
	}
	var out []found
	for pid, f := range in {
		if !spared(pid, parent, in) {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b found) int { return a.PID - b.PID })
	return out, hidden, nil
}

// spared reports whether a live process outside the tree started pid,
// directly or through processes in the tree it also started.
func spared(pid int, parent map[int]int, in map[int]found) bool {
	for seen := 0; seen <= len(in); seen++ {
		pp := parent[pid]
		if pp <= 1 {
			return false // an orphan: init took it over
		}
		if _, ok := in[pp]; !ok {
			return true
		}
		pid = pp
	}
	return false
}

// inTree reports whether pid's working directory or root is dir or under
// it.
func inTree(pid int, dir string) (bool, error) {
	for _, link := range []string{"cwd", "root"} {
		target, err := os.Readlink(filepath.Join(procRoot, strconv.Itoa(pid), link))
		if err != nil {
			return false, err
		}
		target = strings.TrimSuffix(target, " (deleted)")
		if target == dir || strings.HasPrefix(target, dir+"/") {
			return true, nil
		}
	}
	return false, nil
}

// stat is what Tree reads of /proc/<pid>/stat.
type stat struct {
	state string
	ppid  int
	start string
}

func readStat(pid int) (stat, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return stat{}, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold anything
	if i < 0 {
		return stat{}, fmt.Errorf("reap: unreadable stat of %d", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 { // state is field 3 of the line, ppid 4, starttime 22
		return stat{}, fmt.Errorf("reap: unreadable stat of %d", pid)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return stat{}, fmt.Errorf("reap: unreadable stat of %d", pid)
	}
	return stat{state: f[0], ppid: ppid, start: f[19]}, nil
}

func owner(pid int) int {
	fi, err := os.Stat(filepath.Join(procRoot, strconv.Itoa(pid)))
	if err != nil {
		return -1
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

func comm(pid int) string {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "comm"))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// inGroup reports whether pid runs with group gid, as its primary or a
// supplementary group (/proc/<pid>/status, which every user may read).
func inGroup(pid, gid int) bool {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "status"))
	if err != nil {
		return false
	}
	want := strconv.Itoa(gid)
	for line := range strings.Lines(string(b)) {
		key, val, ok := strings.Cut(line, ":")
		if ok && (key == "Gid" || key == "Groups") && slices.Contains(strings.Fields(val), want) {
			return true
		}
	}
	return false
}

// signal sends sig to each process that is still the one scanned and still
// in dir, through a handle on the process (a pidfd), so that an id reused
// meanwhile is never signalled. It returns those it signalled.
func signal(procs []found, dir string, sig syscall.Signal) []Proc {
	var out []Proc
	for _, f := range procs {
		p, err := os.FindProcess(f.PID)
		if err != nil {
			continue
		}
		st, err := readStat(f.PID)
		inside, ierr := inTree(f.PID, dir)
		if err != nil || ierr != nil || st.start != f.start || !inside {
			p.Release()
			continue // gone, or the id is another process's now
		}
		if err := p.Signal(sig); err == nil {
			out = append(out, f.Proc)
		}
		p.Release()
	}
	return out
}

// wait waits until every process in procs is gone (or a zombie), or grace
// has passed, or ctx ends.
func wait(ctx context.Context, procs []found, grace time.Duration) {
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if !slices.ContainsFunc(procs, running) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-tick.C:
		}
	}
}

// running reports whether f's process still runs.
func running(f found) bool {
	st, err := readStat(f.PID)
	return err == nil && st.start == f.start && st.state != "Z"
}
