package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	warmedRE  = regexp.MustCompile(`msg="work tree warmed" .*\bdir=(\S+)`)
	sessionRE = regexp.MustCompile(`msg="session started" .*\bdir=(\S+)`)
)

// logDirs are the dir values of the pool's log lines that re matches.
func logDirs(re *regexp.Regexp, log string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(log, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestEachSlotsFirstSessionIsWarm: a pool of two workers starts with no
// PR open. It makes a work tree for each slot and has the agent server
// start its instance for each (the pool logs "work tree warmed"; the agent
// server logs the instance and its location services for the tree). Two
// PRs opened after are the slots' first sessions: each runs in one of
// those trees, and the agent server starts nothing for either tree once
// the PRs are open.
func TestEachSlotsFirstSessionIsWarm(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 0, approveOnly(""))
	agentLog := filepath.Join(sb.Agent.Dir, "opencode.log")
	tmp := t.TempDir()
	pool := startPool(t, ctx, buildPool(t), poolEnv(t, sb, tmp, "POOL_IDLE_EXIT=0"), "--workers", "2")
	eventually(t, ctx, "two work trees warmed", func() bool {
		return len(logDirs(warmedRE, pool.stderr.String())) == 2
	}, pool)
	before, err := os.ReadFile(agentLog)
	if err != nil {
		t.Fatal(err)
	}
	mergedThenStopped(t, ctx, sb, pool, 2)
	after, err := os.ReadFile(agentLog)
	if err != nil {
		t.Fatal(err)
	}
	since := string(after[len(before):])

	stderr := pool.stderr.String()
	warmed, started := logDirs(warmedRE, stderr), logDirs(sessionRE, stderr)
	if len(started) != 2 {
		t.Fatalf("sessions started in %v, want two (one per PR)\n%s", started, stderr)
	}
	for _, dir := range started {
		if !slices.Contains(warmed, dir) {
			t.Errorf("a slot's first session ran in %s, not in a tree warmed before (%v)", dir, warmed)
		}
		for _, line := range []string{`message="creating instance" directory=` + dir + "\n", `message="booting location services" directory=` + dir + " "} {
			if !strings.Contains(string(before), line) {
				t.Errorf("the agent server did not log %q before the PRs were opened", strings.TrimSpace(line))
			}
			if strings.Contains(since, line) {
				t.Errorf("the agent server logged %q for the session's tree after the PRs were opened: its first session was not warm", strings.TrimSpace(line))
			}
		}
	}
}
