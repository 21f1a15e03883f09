package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"pool/agent"
	"pool/deploy"
	"pool/internal/sandbox"
)

// TestThreeAgentServersOneKilled: one pool, three real agent servers of one
// slot each (agent.servers), six PRs. One server is killed while it runs
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
	// The shared forge and agent server, and two servers of the test's own:
	// the one killed is one of those.
	sb := startSandbox(t, ctx, 6, slow)
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
	file := serversConfig(t, tmp, list...)
	pool := startPool(t, ctx, buildPool(t), fleetEnv(t, sb, tmp, "POOL_IDLE_EXIT=5"), "--config", file)

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
	if !strings.Contains(report, "Approved and merged: 6\n") {
		t.Errorf("report:\n%s", report)
	}
}

// TestReviewerAndFixerOnDifferentServers: a review server and a fix server
// (agent.servers roles), two real agent servers, each with a scripted model
// of its own, so the prompts each model hears are the sessions its server
// ran. The reviewer approves, the required check fails, the fixer commits,
// the new head is reviewed and merged: the fixer session runs on the fix
// server, alone, and both reviews on the review server.
func TestReviewerAndFixerOnDifferentServers(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 0, nil)
	n, first, err := sb.AddPRWithoutCI(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	script := sandbox.Fixer(sandbox.Reviewer(sandbox.Approve))
	sb.Model.SetScript(script)
	fixModel, err := sandbox.StartModel(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fixModel.Close)
	fixServer, err := sb.Agent.AnotherOn(ctx, filepath.Join(t.TempDir(), "fix-agent"), fixModel.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fixServer.Stop() })
	const ci = "ci / test"
	if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, first, ci, "failure", "http://ci.invalid/run/1", "2 tests failed"); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	file := serversConfig(t, tmp, fmt.Sprintf("{url: %q, workers: 1, role: review}", sb.Agent.URL),
		fmt.Sprintf("{url: %q, workers: 1, role: fix}", fixServer.URL))
	pool := startPool(t, ctx, buildPool(t), fleetEnv(t, sb, tmp), "--config", file, "--agent", deploy.Fixer)

	fixed := mergedAtTheFixersHead(t, ctx, sb, pool, n, first, ci)
	onFix, onReview := sessionsByKind(fixModel.Prompts()), sessionsByKind(sb.Model.Prompts())
	want := map[string][]string{"fixer": {first}}
	if fmt.Sprint(onFix) != fmt.Sprint(want) {
		t.Errorf("fix server's sessions %v, want %v: the fixer alone", onFix, want)
	}
	want = map[string][]string{"review": {first, fixed}}
	if fmt.Sprint(onReview) != fmt.Sprint(want) {
		t.Errorf("review server's sessions %v, want %v: both reviews and no fixer", onReview, want)
	}
	report := pool.stdout.String()
	for _, line := range []string{"  - " + sb.Agent.URL + ": 2 started, 0 lost\n", "  - " + fixServer.URL + ": 1 started, 0 lost\n"} {
		if !strings.Contains(report, line) {
			t.Errorf("report lacks %q:\n%s", line, report)
		}
	}
}

// sessionsByKind sorts a model's prompts into fixer and review sessions,
// each named by the head it was about, in order.
func sessionsByKind(prompts []string) map[string][]string {
	out := map[string][]string{}
	for _, p := range prompts {
		_, _, head, _ := sandbox.PromptTarget(p)
		kind := "review"
		if strings.Contains(p, sandbox.FixerCue) {
			kind = "fixer"
		}
		out[kind] = append(out[kind], head)
	}
	return out
}

// serversConfig writes a config file whose agent.servers are entries (YAML
// flow maps) and returns its path.
func serversConfig(t *testing.T, dir string, entries ...string) string {
	t.Helper()
	file := filepath.Join(dir, "pool.yaml")
	if err := os.WriteFile(file, []byte("agent:\n  servers: ["+strings.Join(entries, ", ")+"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// fleetEnv is poolEnv without agent.url: the config file lists the servers.
func fleetEnv(t *testing.T, sb *sandbox.Sandbox, tmp string, extra ...string) []string {
	var env []string
	for _, kv := range poolEnv(t, sb, tmp, extra...) {
		if !strings.HasPrefix(kv, "POOL_AGENT_URL=") {
			env = append(env, kv)
		}
	}
	return env
}

// TestAKilledAgentServerIsUsedAgainOnceRestarted: two real agent servers
// of one slot each, the first listed on a scripted model of its own. It is
// killed, marked down, and restarted on its port and data (as an operator
// would); once the pool says it answers again, PRs opened after are
// reviewed on it too: on equal load the first server listed takes the
// session, so the first PR after the restart goes to it unless it is left
// out.
func TestAKilledAgentServerIsUsedAgainOnceRestarted(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	script := approveOnly("")
	sb := startSandbox(t, ctx, 0, script)
	model, err := sandbox.StartModel(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(model.Close)
	victim, err := sb.Agent.AnotherOn(ctx, filepath.Join(t.TempDir(), "victim"), model.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = victim.Stop() })
	tmp := t.TempDir()
	file := serversConfig(t, tmp, fmt.Sprintf("{url: %q, workers: 1, role: both}", victim.URL),
		fmt.Sprintf("{url: %q, workers: 1, role: both}", sb.Agent.URL))
	pool := startPool(t, ctx, buildPool(t), fleetEnv(t, sb, tmp, "POOL_IDLE_EXIT=0"), "--config", file)

	if err := victim.Stop(); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "the killed server marked down", func() bool {
		return strings.Contains(pool.stderr.String(), "agent server does not answer; no session starts on it")
	}, pool)
	restarted, err := victim.Restart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = restarted.Stop() })
	eventually(t, ctx, "the restarted server used again", func() bool {
		return strings.Contains(pool.stderr.String(), "agent server answers again; placing sessions on it")
	}, pool)
	mergedThenStopped(t, ctx, sb, pool, 4)
	if got := len(model.Prompts()); got == 0 {
		t.Errorf("no session on the restarted server; the other ran %d", len(sb.Model.Prompts()))
	}
	want := regexp.MustCompile(`(?m)^  - ` + regexp.QuoteMeta(victim.URL) + `: [1-9]\d* started, 0 lost$`)
	if report := pool.stdout.String(); !want.MatchString(report) {
		t.Errorf("report lacks %q:\n%s", want, report)
	}
}

// mergedThenStopped opens k PRs beside the running pool, waits until the
// pool has merged each, and stops it.
func mergedThenStopped(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, pool *poolProc, k int) {
	t.Helper()
	var prs []int
	for i := range k {
		n, err := sb.AddPR(ctx, i+1)
		if err != nil {
			t.Fatal(err)
		}
		prs = append(prs, n)
	}
	for _, n := range prs {
		eventually(t, ctx, fmt.Sprintf("PR #%d merged", n), func() bool { return isMerged(t, ctx, sb, n) }, pool)
	}
	if err := pool.cmd.Process.Signal(sigterm); err != nil {
		t.Fatal(err)
	}
	pool.wait(t, ctx)
}
