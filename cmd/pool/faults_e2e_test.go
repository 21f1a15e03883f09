package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"pool/configs"
	"pool/internal/faultproxy"
	"pool/internal/sandbox"
	"pool/internal/syncbuf"
	"pool/pool"
	"pool/serve"
)

// runLabelled runs f under a profiler label of its own: every goroutine f
// starts, and every goroutine those start, carries the label, so
// goroutinesLeft sees the pool's goroutines and none of the other tests
// running beside it.
func runLabelled(ctx context.Context, label string, f func(context.Context)) {
	pprof.Do(ctx, pprof.Labels(leakLabel, label), f)
}

const leakLabel = "pool-e2e-run"

// goroutinesLeft returns the stacks of the goroutines that still carry the
// label of a runLabelled call, once they have had grace to end, or "" if
// none is left.
func goroutinesLeft(label string, grace time.Duration) string {
	mark, _ := json.Marshal(map[string]string{leakLabel: label})
	deadline := time.Now().Add(grace)
	for {
		var dump bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&dump, 1)
		var left []string
		for _, group := range strings.Split(dump.String(), "\n\n") {
			if strings.Contains(group, "# labels: "+string(mark)) {
				left = append(left, group)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return strings.Join(left, "\n\n")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// faultSeed is the seed of the fault proxies, POOL_FAULT_SEED or 1.
func faultSeed(t *testing.T) uint64 {
	s := os.Getenv("POOL_FAULT_SEED")
	if s == "" {
		return 1
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("POOL_FAULT_SEED=%q: %v", s, err)
	}
	return n
}

// startFaultProxy puts a fault proxy in front of url, closed at cleanup.
func startFaultProxy(t *testing.T, opts faultproxy.Options) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// loadConfig loads the pool's configuration from flags alone, for a pool
// run in-process.
func loadConfig(t *testing.T, sb *sandbox.Sandbox, forgeURL, agentURL string, args ...string) configs.Config {
	t.Helper()
	// TestMain cleared the POOL_* settings of the environment.
	tokenFile, err := sb.WriteTokenFile()
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state")
	base := []string{"--forgejo-url", forgeURL, "--forgejo-token-file", tokenFile, "--repo", sb.Owner + "/" + sb.Repo,
		"--agent-url", agentURL, "--state-dir", state}
	if group := shareWithAgent(t, sb, state); group != "" {
		base = append(base, "--agent-tree-group", group)
	}
	cfg, err := configs.Load(append(base, args...))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestTwentyPercentFaults puts a fault proxy in front of the forge and one
// in front of the agent server, each answering 20% of requests with a 500,
// a 502, a stalled or truncated answer, a reset connection or a 5 s delay;
// the agent's event stream is reset every few seconds.
// With 12 PRs and 2 workers every PR merges, each head gets one reviewer
// session, the pool runs until its idle exit, and no goroutine is left.
//
// The pool runs in-process through serve.Run, not as the binary: only then
// can the test see its goroutines after it returns. The scripted reviewer's
// own pool-review calls go straight to the forge: the pool is what is under test.
func TestTwentyPercentFaults(t *testing.T) {
	parallelLongest(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 12, nil)
	seed := faultSeed(t)
	// A stalled answer is cut after 5 s: the pool's clients time out after
	// 60 s, and a run at that pace would take an hour.
	forge := startFaultProxy(t, faultproxy.Options{Upstream: sb.Forge.URL, Share: 0.2, Seed: seed, Stall: 5 * time.Second})
	// The agent's event stream is opened once and lives long: every
	// stream is reset within 10 s, so the pool reconnects all run long.
	agentProxy := startFaultProxy(t, faultproxy.Options{Upstream: sb.Agent.URL, Share: 0.2, Seed: seed + 1, Stall: 5 * time.Second,
		StreamShare: 1})
	cfg := loadConfig(t, sb, forge.URL, agentProxy.URL, "--workers", "2",
		"--poll-interval", "1s", "--status-interval", "1s", "--idle-exit", "3")

	var logs syncbuf.Buffer
	var marks markCounter
	log := slog.New(slog.NewTextHandler(io.MultiWriter(&logs, &marks), &slog.HandlerOptions{Level: slog.LevelDebug}))
	watchProgress(ctx, "the pool's log", marks.count)
	onStall(ctx, func() {
		var stacks bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		t.Logf("goroutines when the pool stopped making progress:\n%s", stacks.String())
	})
	start := time.Now()
	var rep pool.Report
	var err error
	runLabelled(ctx, t.Name(), func(ctx context.Context) { rep, err = serve.Run(ctx, cfg, log) })
	took := time.Since(start)
	forgeStats, agentStats := forge.Stats(), agentProxy.Stats()
	forge.Close()
	agentProxy.Close()
	if err != nil {
		t.Fatalf("serve.Run: %v\nlogs:\n%s", err, logs.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("the pool stopped: %s\nlogs:\n%s", stopReason(ctx), logs.String())
	}
	if left := goroutinesLeft(t.Name(), 5*time.Second); left != "" {
		t.Errorf("goroutines left after serve.Run returned:\n%s", left)
	}

	for _, n := range sb.PRs {
		assertMerged(t, ctx, sb, n)
	}
	if rep.Merged != len(sb.PRs) {
		t.Errorf("report: %d merged, want %d", rep.Merged, len(sb.PRs))
	}
	perHead := promptsPerHead(sb)
	for head, n := range perHead {
		if n != 1 {
			pr, _, _ := strings.Cut(head, "@")
			t.Errorf("PR@head %s got %d reviewer sessions, want 1; the log's lines on PR %s:\n%s", head, n, pr, linesOnPR(logs.String(), pr))
		}
	}
	if len(perHead) != len(sb.PRs) {
		t.Errorf("%d PR heads got a session, want %d", len(perHead), len(sb.PRs))
	}
	left := sessionCount(t, ctx, sb)
	if t.Failed() {
		t.Logf("logs:\n%s", logs.String())
		t.Logf("faults on the forge:\n%s\nfaults on the agent server:\n%s", faultLines(forge), faultLines(agentProxy))
	}
	t.Logf("figure: fault run, seed %d, %s\n%s", seed, machine(),
		faultTable(len(sb.PRs), rep, len(sb.Model.Prompts()), left, took, forgeStats, agentStats))
}

func faultLines(p *faultproxy.Proxy) string {
	var b strings.Builder
	for _, f := range p.Faults() {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	return b.String()
}

// machine names where a figure was measured.
func machine() string {
	return fmt.Sprintf("%s, %s/%s, %d CPUs, %s", time.Now().UTC().Format("2006-01-02 15:04 MST"),
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}

// faultTable renders a fault run's figures as a Markdown table.
func faultTable(prs int, rep pool.Report, sessions, left int, took time.Duration, forge, agent faultproxy.Stats) string {
	var b strings.Builder
	b.WriteString("| figure | forge | agent server |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| requests | %d | %d |\n", forge.Requests, agent.Requests)
	fmt.Fprintf(&b, "| faults injected | %d (%.1f%%) | %d (%.1f%%) |\n", forge.Injected(), pct(forge.Injected(), forge.Requests),
		agent.Injected(), pct(agent.Injected(), agent.Requests))
	kinds := append(append([]faultproxy.Kind(nil), faultproxy.Kinds...), faultproxy.StreamReset)
	for _, k := range kinds {
		fmt.Fprintf(&b, "| — %s | %d | %d |\n", k, forge.Faults[k], agent.Faults[k])
	}
	fmt.Fprintf(&b, "| retries (a faulted call made again) | %d | %d |\n", forge.Retries, agent.Retries)
	fmt.Fprintf(&b, "| event streams opened | — | %d |\n", agent.Streams)
	fmt.Fprintf(&b, "\nPRs: %d, merged: %d; reviewer sessions: %d; sessions left on the agent server: %d; pool cycles: %d; wall time: %s\n",
		prs, rep.Merged, sessions, left, rep.Cycles, took.Round(time.Second))
	return b.String()
}

func pct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// sortedKeys is for stable output of counters.
func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestGoroutinesLeftSeesALeak: the leak check of the in-process runs sees a
// goroutine that a labelled run left behind (and one it started in turn),
// and none of the goroutines started outside the run.
func TestGoroutinesLeftSeesALeak(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	go func() { <-release }() // not the run's
	runLabelled(context.Background(), t.Name(), func(context.Context) {
		go func() {
			go func() { <-release }()
			<-release
		}()
	})
	left := goroutinesLeft(t.Name(), 200*time.Millisecond)
	if got := strings.Count(left, "# labels: "); got != 2 {
		t.Errorf("the check found %d leaked goroutine groups, want 2:\n%s", got, left)
	}
	if left := goroutinesLeft(t.Name()+"-other", 0); left != "" {
		t.Errorf("a run that left nothing: %s", left)
	}
}

// linesOnPR are the lines of a pool's log about PR pr: the whole log is
// long, and a failure's output may be cut before the lines that explain it.
func linesOnPR(logs, pr string) string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, " pr="+pr+" ") || strings.HasSuffix(line, " pr="+pr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
