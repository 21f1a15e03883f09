package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"pool/agent"
	"pool/internal/sandbox"
)

// TestThreeAgentServersOneKilled: one pool, three real agent servers of one
// slot each (agent.servers), twelve PRs. One server is killed while it runs
// a session: no session starts on it after, its session is counted lost and
// its PR, still claimed, is reviewed again on another server; every PR is
// merged and at most one head gets a second session.
func TestThreeAgentServersOneKilled(t *testing.T) {
	parallelLong(t)
	ctx := testContext(t)
	// Each review's first answer comes after a pause, so that the server
	// killed is caught with a session running.
	approve := approveOnly("")
	slow := func(prompt string, outputs []string) sandbox.Turn {
		if len(outputs) == 0 {
			time.Sleep(3 * time.Second)
		}
		return approve(prompt, outputs)
	}
	sb := startPrivateSandbox(t, ctx, 12, slow)
	servers := []*sandbox.AgentServer{sb.Agent}
	for i := range 2 {
		more, err := sb.Agent.Another(ctx, filepath.Join(t.TempDir(), fmt.Sprintf("agent-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = more.Stop() })
		servers = append(servers, more)
	}
	tmp := t.TempDir()
	var list []string
	for _, s := range servers {
		list = append(list, fmt.Sprintf("{url: %q, workers: 1, role: both}", s.URL))
	}
	file := filepath.Join(tmp, "pool.yaml")
	if err := os.WriteFile(file, []byte("agent:\n  servers: ["+strings.Join(list, ", ")+"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range poolEnv(t, sb, tmp, "POOL_IDLE_EXIT=5") {
		if !strings.HasPrefix(kv, "POOL_AGENT_URL=") {
			env = append(env, kv)
		}
	}
	pool := startPool(t, ctx, buildPool(t), env, "--config", file)

	victim := servers[1]
	client := agent.New(victim.URL, "", agent.Options{})
	eventually(t, ctx, "a prompted session on the server to kill", func() bool {
		sessions, err := client.Sessions(ctx)
		if err != nil || len(sessions) == 0 {
			return false
		}
		msgs, err := client.Messages(ctx, sessions[0].ID)
		return err == nil && len(msgs) > 0
	}, pool)
	if err := victim.Stop(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	eventually(t, ctx, "the killed server's session counted lost", func() bool {
		return strings.Contains(pool.stderr.String(), "its sessions count lost")
	}, pool)
	t.Logf("session counted lost %s after the kill", time.Since(killed).Round(time.Second))
	pool.wait(t, ctx)

	for _, n := range sb.PRs {
		assertMerged(t, ctx, sb, n)
	}
	var twice []string
	for head, n := range promptsPerHead(sb) {
		if n > 1 {
			twice = append(twice, head)
		}
	}
	if len(twice) > 1 {
		t.Errorf("heads reviewed more than once: %v, want at most the one the killed server held", twice)
	}
	stderr, report := pool.stderr.String(), pool.stdout.String()
	down := strings.Index(stderr, "agent server does not answer; no session starts on it")
	if down < 0 {
		t.Errorf("the killed server was never marked down:\n%s", stderr)
	} else if failed := strings.Index(stderr[down:], "starting a session failed"); failed >= 0 {
		t.Errorf("a session start failed once the killed server was down (tried on it?):\n%s", stderr[down+failed:])
	}
	want := regexp.MustCompile(`(?m)^  - ` + regexp.QuoteMeta(victim.URL) + `: \d+ started, 1 lost$`)
	if !strings.Contains(report, "SESSIONS_BY_AGENT_SERVER:\n") || !want.MatchString(report) {
		t.Errorf("report lacks %q:\n%s", want, report)
	}
	if !strings.Contains(report, "Approved and merged: 12") {
		t.Errorf("report:\n%s", report)
	}
}
