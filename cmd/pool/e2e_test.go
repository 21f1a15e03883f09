package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pool/agent"
	"pool/claims"
	"pool/internal/sandbox"
	"pool/sessionmark"
	"pool/texts"
)

// The end-to-end tests share one test forge and one agent server (see
// sandbox.SharedServers) and one pool binary, made on first use and removed
// by TestMain. Each test runs on a sandbox of its own (accounts, repository,
// model route, state directory), and in parallel with the others.

// The end-to-end tests are admitted by e2eAdmission, the long ones first,
// as many at once as the machine carries: they spend much of their time
// waiting on the pool's polls and sessions, but every one loads the one
// agent server and forge. One a core (the CPUs this process may use:
// taskset counts) is admitted at once; each further one only on a fresh
// reading that the machine has room (machineHasRoom), up to perCore a core
// and at most maxParallel. A -parallel flag sets a fixed number instead.
const (
	// perCore and maxParallel: at 4 a core and 8 in all, a CI run on a
	// 2-core machine (other packages' servers beside it, CPU pressure
	// 94%) saw two of the four update tests' merge queues starve the PR
	// holding the base's update (fixed in the pool: holderFirst); fewer
	// tests at once leave the forge and agent server less loaded.
	perCore     = 3
	maxParallel = 6
	// saturated is the answer time of a cheap read past which the shared
	// servers have no room for another test.
	saturated = time.Second
	// crowded is the share of the last ten seconds in which work waited
	// for a CPU (the kernel's pressure figure, /proc/pressure/cpu) past
	// which the machine has no room for another test. Cheap reads stay
	// fast on a crowded machine; the forge's git work does not: with eight
	// tests seeding at once on two cores, opening one PR took minutes.
	crowded = 80.0
)

func TestMain(m *testing.M) {
	flag.Parse()
	cores := runtime.NumCPU()
	e2eAdmission.limit = min(perCore*cores, maxParallel)
	e2eAdmission.floor = cores
	e2eAdmission.probe = machineHasRoom
	if f := flag.Lookup("test.parallel"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && isSet("test.parallel") {
			e2eAdmission.limit, e2eAdmission.floor, e2eAdmission.probe = max(n, 1), max(n, 1), nil
		}
		// The admission, not the testing package, limits the tests that run.
		_ = flag.Set("test.parallel", "1000")
	}
	// Settings of the environment the tests run in must not reach the pools
	// they run in-process (loadConfig): cleared once, as parallel tests may
	// not use t.Setenv. The tests' own (POOL_TEST_*) stay, and so does
	// POOL_CACHE_DIR, the servers' cache (no pool setting): without it
	// these tests would build the forge again where `go run ./cmd/sandbox
	// -prepare` did not.
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "POOL_CACHE_DIR" {
			continue
		}
		if strings.HasPrefix(k, "POOL_") && !strings.HasPrefix(k, "POOL_TEST_") || k == "CA_MAX_PARALLEL_WORKERS" {
			os.Unsetenv(k)
		}
	}
	code := m.Run()
	if !testing.Short() {
		fmt.Println(e2eAdmission.summary())
	}
	sandbox.StopShared()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// machineHasRoom reads whether one more test fits: the CPUs are not
// crowded, and the shared servers (once started) answer a cheap read within
// saturated.
func machineHasRoom() bool {
	if waiting, ok := cpuPressure(); ok && waiting >= crowded {
		return false
	}
	d, ok := sandbox.SharedServersLatency(context.Background())
	return !ok || d < saturated
}

// cpuPressure is the share, in percent, of the last ten seconds in which
// some runnable work waited for a CPU; ok is false where the kernel does
// not say (no /proc/pressure): the servers' answer time alone decides then.
func cpuPressure() (float64, bool) {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, false
	}
	return parsePressure(string(b))
}

// parsePressure reads avg10 from the "some" line of a pressure file.
func parsePressure(text string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] != "some" {
			continue
		}
		for _, f := range fields[1:] {
			if v, ok := strings.CutPrefix(f, "avg10="); ok {
				n, err := strconv.ParseFloat(v, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}

// isSet reports whether the flag was given on the command line.
func isSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// built is the pool binary, compiled once per test binary.
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// buildPool returns the pool binary, compiling it on first use.
func buildPool(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "pool-e2e-bin-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "pool")
		out, err := exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// startSandbox seeds a sandbox of the test's own on the servers every test
// of this binary shares.
func startSandbox(t *testing.T, ctx context.Context, prs int, script sandbox.Script) *sandbox.Sandbox {
	t.Helper()
	servers := sandbox.SharedServers(t)
	sb, err := servers.Join(ctx, sandbox.Options{Dir: t.TempDir(), PRs: prs, Script: script})
	if err != nil {
		t.Fatalf("sandbox: %v", err)
	}
	watchProgress(ctx, "the model's turns", sb.Model.Requests)
	return sb
}

// startPrivateSandbox is startSandbox on servers of the test's own, for a
// test that stops, freezes or restarts a server.
func startPrivateSandbox(t *testing.T, ctx context.Context, prs int, script sandbox.Script) *sandbox.Sandbox {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: needs the real forge and agent server (run without -short)")
	}
	var log bytes.Buffer
	sb, err := sandbox.Start(ctx, sandbox.Options{Dir: t.TempDir(), PRs: prs, Script: script, Log: &log})
	if err != nil {
		t.Fatalf("sandbox: %v\n%s", err, log.String())
	}
	t.Cleanup(func() { sb.Stop() })
	watchProgress(ctx, "the model's turns", sb.Model.Requests)
	return sb
}

// poolEnv is the environment a pool process runs with in the sandbox.
func poolEnv(t *testing.T, sb *sandbox.Sandbox, tmp string, extra ...string) []string {
	tokenFile, err := sb.WriteTokenFile()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "TMPDIR=" + tmp,
		"POOL_FORGEJO_URL=" + sb.Forge.URL, "POOL_FORGEJO_TOKEN_FILE=" + tokenFile,
		"POOL_REPO=" + sb.Owner + "/" + sb.Repo, "POOL_AGENT_URL=" + sb.Agent.URL,
		"POOL_STATE_DIR=" + filepath.Join(tmp, "state"),
		"POOL_POLL_INTERVAL=1s", "POOL_STATUS_INTERVAL=200ms", "POOL_IDLE_EXIT=3",
		// a head with no statuses (a push in a test) waits this long for a CI
		"POOL_CHECKS_GRACE=3s",
	}
	// POOL_TEST_LOG_LEVEL=debug shows the pools' debug lines in a failing
	// test's log (the merge queue's reads of PRs not mergeable, for one).
	if level := os.Getenv("POOL_TEST_LOG_LEVEL"); level != "" {
		env = append(env, "POOL_LOG_LEVEL="+level)
	}
	if group := shareWithAgent(t, sb, filepath.Join(tmp, "state")); group != "" {
		env = append(env, "POOL_AGENT_TREE_GROUP="+group)
	}
	return append(env, extra...)
}

// shareWithAgent readies state, a pool's state directory, for an agent
// server that runs as a user of its own (sb.AgentUser: the shared servers,
// as root): the way to it open, as a deployment's is. It returns the
// group the pool must share its work trees with, "" when the agent server
// runs as this process's user.
func shareWithAgent(t *testing.T, sb *sandbox.Sandbox, state string) string {
	t.Helper()
	if sb.AgentUser == nil {
		return ""
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.OpenWayTo(state); err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(int(sb.AgentUser.GID))
}

// TestSixPRsTwoWorkers is the main path: six open PRs, two workers, every
// PR merged, one signed claim per PR, nothing left behind, exit 0 and the
// report on stdout.
func TestSixPRsTwoWorkers(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 6, nil)
	bin := buildPool(t)
	tmp := t.TempDir()

	cmd := exec.CommandContext(ctx, bin, "--workers", "2")
	cmd.Env = poolEnv(t, sb, tmp)
	var stdout, stderr bytes.Buffer
	var marks markCounter
	cmd.Stdout, cmd.Stderr = &stdout, io.MultiWriter(&stderr, &marks)
	watchProgress(ctx, "the pool's log", marks.count)
	err := cmd.Run()
	t.Logf("pool stderr:\n%s", stderr.String())
	if err != nil {
		t.Fatalf("pool exited with %v, want 0", err)
	}

	report := stdout.String()
	for _, want := range []string{"TOTAL_PRS_REVIEWED: 6", "  - Approved and merged: 6", "PENDING_MERGE_PRS: []", "INSTANCE_ID: "} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	for _, n := range sb.PRs {
		assertMerged(t, ctx, sb, n)
		assertOneSignedClaim(t, ctx, sb, n)
		assertSignedApprovalOnHead(t, ctx, sb, n)
	}
	if prompts := sb.Model.Prompts(); len(prompts) != 6 {
		t.Errorf("model received %d reviewer prompts, want 6 (one per PR)", len(prompts))
	}
	t.Logf("figure: agent sessions per merged PR: %.2f (%d sessions, 6 merged)", float64(len(sb.Model.Prompts()))/6, len(sb.Model.Prompts()))
	for _, p := range sb.Model.Prompts() {
		if strings.Contains(p, sb.PoolToken) {
			t.Errorf("a prompt holds the pool's token")
		}
	}
	assertNoSessions(t, ctx, sb)
	assertNoClone(t, sb, tmp)
	if strings.Contains(stderr.String(), sb.PoolToken) {
		t.Errorf("the token appears in the logs")
	}
}

// cloneDir is where a pool run by poolEnv(t, sb, tmp) keeps its clone.
func cloneDir(sb *sandbox.Sandbox, tmp string) string {
	return filepath.Join(tmp, "state", sb.Owner+"_"+sb.Repo, "clone")
}

// assertNoClone checks the pool removed its clone and work trees.
func assertNoClone(t *testing.T, sb *sandbox.Sandbox, tmp string) {
	t.Helper()
	if _, err := os.Stat(cloneDir(sb, tmp)); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(filepath.Join(cloneDir(sb, tmp), "trees"))
		t.Errorf("clone left on disk (%v); work trees in it: %v", err, entries)
	}
}

// assertMerged fails the test unless PR n is merged (isMerged: a read that
// starts no git process on the forge).
func assertMerged(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, n int) {
	t.Helper()
	if !isMerged(t, ctx, sb, n) {
		t.Errorf("PR #%d is not merged", n)
	}
}

type apiComment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
	User struct {
		Login string `json:"login"`
	} `json:"user"`
}

func prComments(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, n int) []apiComment {
	t.Helper()
	var cs []apiComment
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/issues/%d/comments", sb.Owner, sb.Repo, n), nil, &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

func assertOneSignedClaim(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, n int) {
	t.Helper()
	claimsSeen := 0
	for _, c := range prComments(t, ctx, sb, n) {
		if !strings.Contains(c.Body, "<!-- pool-claim ") {
			continue
		}
		claimsSeen++
		if !strings.HasPrefix(c.Body, claims.Sentence("")[:len("Review claimed by reviewer pool instance ")]) {
			t.Errorf("PR #%d: claim lacks the human sentence: %q", n, c.Body)
		}
		if !strings.HasSuffix(c.Body, "---\n**Automated by CleverAgents Bot**\nSupervisor: PR Review | Agent: ca-continuous-pr-reviewer") {
			t.Errorf("PR #%d: claim is not signed: %q", n, c.Body)
		}
		if c.User.Login != sb.PoolUser {
			t.Errorf("PR #%d: claim by %s, want %s", n, c.User.Login, sb.PoolUser)
		}
	}
	if claimsSeen != 1 {
		t.Errorf("PR #%d has %d claim comments, want 1", n, claimsSeen)
	}
}

// assertSignedApprovalOnHead checks the shipped reviewer's work as the
// forge has it: one approval, by the reviewer's account, on the head that
// was merged, signed (pool-review signs what it posts).
func assertSignedApprovalOnHead(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, n int) {
	t.Helper()
	head := getPR(t, ctx, sb, n).Head.Sha
	rs := reviewsOf(t, ctx, sb, n)
	if len(rs) != 1 || rs[0].State != "APPROVED" || rs[0].CommitID != head || rs[0].User.Login != sb.ReviewerUser ||
		!signedAndMarked(rs[0].Body) {
		t.Errorf("PR #%d: reviews %+v; want one signed approval by %s on the head %s", n, rs, sb.ReviewerUser, head)
	}
}

// signedAndMarked: a review body pool-review filed ends with the signature
// and then the session's mark, the line by which the pool counts it.
func signedAndMarked(body string) bool {
	mark := sessionmark.Find(body)
	return mark != "" && strings.HasSuffix(strings.TrimSuffix(body, sessionmark.Tag(mark)),
		"---\n**Automated by CleverAgents Bot**\nSupervisor: PR Review | Agent: ca-continuous-pr-reviewer")
}

func assertNoSessions(t *testing.T, ctx context.Context, sb *sandbox.Sandbox) {
	t.Helper()
	if sessions := ownSessions(t, ctx, sb); len(sessions) != 0 {
		t.Errorf("%d sessions left on the agent server: %+v", len(sessions), sessions)
	}
}

// ownSessions lists the agent server's sessions whose titles name a
// repository of the sandbox's: the server is shared with other tests.
func ownSessions(t *testing.T, ctx context.Context, sb *sandbox.Sandbox) []agent.Session {
	t.Helper()
	sessions, err := agent.New(sb.Agent.URL, "", agent.Options{}).Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var own []agent.Session
	for _, s := range sessions {
		rest, ok := strings.CutPrefix(s.Title, texts.SessionTitlePrefix)
		repo, _, _ := strings.Cut(rest, " ")
		if ok && sb.Owns(repo) {
			own = append(own, s)
		}
	}
	return own
}
