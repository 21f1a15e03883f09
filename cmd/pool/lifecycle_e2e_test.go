package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"pool/internal/sandbox"
	"pool/internal/syncbuf"
)

// poolProc is a pool process started by a test.
type poolProc struct {
	cmd            *exec.Cmd
	stdout, stderr syncbuf.Buffer
	exited         chan struct{} // closed when the process has exited; err is then set
	err            error
	dumpAt         atomic.Int64 // where in stderr a stall's stack dump starts; 0: none
}

func startPool(t *testing.T, ctx context.Context, bin string, env []string, args ...string) *poolProc {
	t.Helper()
	p := &poolProc{cmd: exec.CommandContext(ctx, bin, args...), exited: make(chan struct{})}
	p.cmd.Env = env
	var marks markCounter
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, io.MultiWriter(&p.stderr, &marks, keptLog(t))
	watchProgress(ctx, "the log of "+bin, marks.count)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	// A stalled pool prints its goroutines' stacks (Go's answer to
	// SIGQUIT) into its stderr, which the failing test shows.
	onStall(ctx, func() {
		if !p.hasExited() {
			p.dumpAt.Store(int64(len(p.stderr.String())))
			_ = p.cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-p.exited:
			case <-time.After(5 * time.Second):
			}
		}
	})
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			// A test that failed on a read of its own (t.Fatal) shows
			// the pool's log too: a stall in CI left nothing else to go on.
			p.logStderr(t)
		}
	})
	return p
}

// keptLog is where a pool's whole log is kept besides: a file in
// $POOL_TEST_LOG_DIR named after the test, for a test that passed slowly
// (a failing one shows the log's tail); io.Discard without it.
func keptLog(t *testing.T) io.Writer {
	dir := os.Getenv("POOL_TEST_LOG_DIR")
	if dir == "" {
		return io.Discard
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	f, err := os.CreateTemp(dir, name+"-*.log")
	if err != nil {
		t.Fatalf("keeping the pool's log in POOL_TEST_LOG_DIR: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// logStderr logs the tail of the pool's log and, after a stall, the
// start of its stack dump apart: the dump alone is longer than the tail,
// and the log says what the pool waited on.
func (p *poolProc) logStderr(t *testing.T) {
	t.Helper()
	log, dump := splitDump(p.stderr.String(), int(p.dumpAt.Load()))
	if dump == "" {
		t.Logf("pool stderr at the end of the failed test (tail):\n%s", tailOf(log, 20000))
		return
	}
	t.Logf("pool log before the stall (tail):\n%s", tailOf(log, 30000))
	t.Logf("pool goroutines at the stall (head):\n%s", headOf(dump, 12000))
}

// splitDump splits a pool's stderr at at, where a stall's stack dump
// starts (0: there was none).
func splitDump(stderr string, at int) (log, dump string) {
	if at <= 0 || at > len(stderr) {
		return stderr, ""
	}
	return stderr[:at], stderr[at:]
}

// headOf is s's first n bytes.
func headOf(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// wait waits for the pool to exit and fails the test unless it exits 0.
func (p *poolProc) wait(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-p.exited:
		if p.err != nil {
			t.Fatalf("pool exited with %v\nstderr:\n%s", p.err, p.stderr.String())
		}
	case <-ctx.Done():
		t.Fatalf("pool did not exit: %s\nstderr:\n%s", stopReason(ctx), p.stderr.String())
	}
}

func (p *poolProc) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// eventually polls cond every half second until it holds, failing the test
// at the deadline. Most conditions read the forge: the end-to-end tests run
// side by side on one forge, and faster polling costs them all CPU.
func eventually(t *testing.T, ctx context.Context, what string, cond func() bool, logs ...*poolProc) {
	t.Helper()
	for !cond() {
		for _, p := range logs {
			if p.hasExited() {
				t.Fatalf("pool exited (%v) while waiting for %s\nstderr:\n%s", p.err, what, p.stderr.String())
			}
		}
		select {
		case <-ctx.Done():
			for _, p := range logs {
				t.Logf("pool stderr:\n%s", p.stderr.String())
			}
			t.Fatalf("gave up waiting for %s: %s", what, stopReason(ctx))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

type apiPR struct {
	Merged bool `json:"merged"`
	Head   struct {
		Sha string `json:"sha"`
		Ref string `json:"ref"`
	} `json:"head"`
}

func getPR(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, n int) apiPR {
	t.Helper()
	var pr apiPR
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/pulls/%d", sb.Owner, sb.Repo, n), nil, &pr); err != nil {
		t.Fatal(err)
	}
	return pr
}

// isMerged asks the forge whether PR n is merged (GET .../pulls/{n}/merge:
// 204 merged, 404 not, or no such PR). The forge answers it from its
// database, where getPR's full read starts five git processes (about 60 ms
// of the forge's CPU against 6): waits that poll for a merge use it.
func isMerged(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, n int) bool {
	t.Helper()
	merged, err := mergedOn(ctx, sb, sb.Owner, sb.Repo, n)
	if err != nil {
		t.Fatal(err)
	}
	return merged
}

// mergedOn is isMerged for a PR of any repository on sb's forge.
func mergedOn(ctx context.Context, sb *sandbox.Sandbox, owner, repo string, n int) (bool, error) {
	status, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/pulls/%d/merge", owner, repo, n), nil, nil)
	switch {
	case status == http.StatusNoContent:
		return true, nil
	case status == http.StatusNotFound:
		return false, nil
	case err == nil:
		err = fmt.Errorf("GET pulls/%d/merge of %s/%s answered %d, want 204 or 404", n, owner, repo, status)
	}
	return false, err
}

type apiReview struct {
	State    string `json:"state"`
	CommitID string `json:"commit_id"`
}

func approvedAt(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, n int, sha string) bool {
	t.Helper()
	var rs []apiReview
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/pulls/%d/reviews", sb.Owner, sb.Repo, n), nil, &rs); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.State == "APPROVED" && r.CommitID == sha {
			return true
		}
	}
	return false
}

// promptsPerHead counts the reviewer prompts the model received per PR head.
func promptsPerHead(sb *sandbox.Sandbox) map[string]int {
	out := map[string]int{}
	for _, p := range sb.Model.Prompts() {
		if pr, _, head, ok := sandbox.PromptTarget(p); ok {
			out[pr+"@"+head]++
		}
	}
	return out
}

// approveOnly is a reviewer that approves and leaves merging to the pool,
// reporting report as its result line.
func approveOnly(report string) sandbox.Script {
	return sandbox.Reviewer(func(string) sandbox.Verdict {
		return sandbox.Verdict{Event: "APPROVED", Report: report}
	})
}

// TestKillNineThenRelaunch: SIGKILL while sessions run; the relaunched pool
// adopts them, resumes its own claims at once, and every PR merges with one
// reviewer session per head.
func TestKillNineThenRelaunch(t *testing.T) {
	parallelLong(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 6, nil)
	bin := buildPool(t)
	tmp := t.TempDir()
	env := poolEnv(t, sb, tmp)

	first := startPool(t, ctx, bin, env, "--workers", "2")
	eventually(t, ctx, "two reviewer prompts", func() bool { return len(sb.Model.Prompts()) >= 3 })
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.exited

	started := time.Now()
	second := startPool(t, ctx, bin, env, "--workers", "2")
	second.wait(t, ctx)
	t.Logf("relaunched pool finished in %s", time.Since(started).Round(time.Second))

	for _, n := range sb.PRs {
		assertMerged(t, ctx, sb, n)
	}
	for key, count := range promptsPerHead(sb) {
		if count != 1 {
			t.Errorf("PR@head %s got %d reviewer sessions, want 1", key, count)
		}
	}
	if got := len(promptsPerHead(sb)); got != 6 {
		t.Errorf("%d PR heads were reviewed, want 6", got)
	}
	if !strings.Contains(second.stdout.String(), "INSTANCE_ID: "+instanceOf(first.stderr.String())) {
		t.Errorf("relaunch changed identity: first %q; report:\n%s", instanceOf(first.stderr.String()), second.stdout.String())
	}
	assertNoSessions(t, ctx, sb)
	// The relaunch reused the killed pool's clone for the sessions it
	// adopted, and removed it at exit.
	assertNoClone(t, sb, tmp)
	if !strings.Contains(second.stderr.String(), "reused=true") {
		t.Errorf("the relaunch did not reuse the clone the killed pool left:\n%s", second.stderr.String())
	}
}

func instanceOf(logs string) string {
	_, rest, ok := strings.Cut(logs, "instance=")
	if !ok {
		return "?"
	}
	id, _, _ := strings.Cut(rest, " ")
	return id
}

// TestPendingChecksLyingReviewerOneSession: the reviewer approves but does
// not merge, and claims it merged. Checks stay pending for ten cycles, then
// pass. The pool does not believe the reviewer, keeps the PR, and
// merges it itself once green: one agent session in all.
func TestPendingChecksLyingReviewerOneSession(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 1, approveOnly(`REVIEW-RESULT: {"decision": "approved", "merge_status": "merged"}`))
	n := sb.PRs[0]
	head := getPR(t, ctx, sb, n).Head.Sha
	if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, head, "ci / test (push)", "pending", "http://ci.invalid/1", "running"); err != nil {
		t.Fatal(err)
	}
	bin := buildPool(t)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir(), "POOL_DIAGNOSTIC_EVERY=10"), "--workers", "1")

	eventually(t, ctx, "a diagnostic comment after ten pending cycles", func() bool {
		for _, c := range prComments(t, ctx, sb, n) {
			if strings.HasPrefix(c.Body, "Merge retry: still waiting to merge (checks pending). Last status: pending.") {
				return true
			}
		}
		return false
	})
	if getPR(t, ctx, sb, n).Merged {
		t.Fatal("merged while checks were pending")
	}
	if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, head, "ci / test (push)", "success", "http://ci.invalid/1", "passed"); err != nil {
		t.Fatal(err)
	}
	pool.wait(t, ctx)
	assertMerged(t, ctx, sb, n)
	if got := len(sb.Model.Prompts()); got != 1 {
		t.Errorf("agent sessions = %d, want 1", got)
	}
	t.Logf("figure: agent sessions per merged PR, checks pending for 10 cycles: %d (the reference design spends 11)", len(sb.Model.Prompts()))
	if !strings.Contains(pool.stderr.String(), "reviewer reported merged but the forge says not merged") {
		t.Errorf("the disagreement was not logged:\n%s", pool.stderr.String())
	}
	if !strings.Contains(pool.stdout.String(), "Approved and merged: 1") {
		t.Errorf("report:\n%s", pool.stdout.String())
	}
}

// TestHeadPushedAfterApprovalIsReReviewed: approval on one head, then a
// push: the old head is never merged; the new head is reviewed and merged.
func TestHeadPushedAfterApprovalIsReReviewed(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 1, approveOnly(""))
	n := sb.PRs[0]
	first := getPR(t, ctx, sb, n)
	// Pending checks keep the pool from merging the first head at once.
	if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, first.Head.Sha, "ci", "pending", "", ""); err != nil {
		t.Fatal(err)
	}
	bin := buildPool(t)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir()), "--workers", "1")
	eventually(t, ctx, "approval of the first head", func() bool { return approvedAt(t, ctx, sb, n, first.Head.Sha) })
	newHead, err := sb.Forge.PushFile(ctx, sb.OwnerToken, sb.Owner, sb.Repo, first.Head.Ref, "features/fixup.txt", "fixup\n", "fix up")
	if err != nil {
		t.Fatal(err)
	}
	pool.wait(t, ctx)

	final := getPR(t, ctx, sb, n)
	if !final.Merged || final.Head.Sha != newHead {
		t.Fatalf("merged=%v at head %s, want merged at the pushed head %s", final.Merged, final.Head.Sha, newHead)
	}
	heads := promptsPerHead(sb)
	key := func(sha string) string { return fmt.Sprintf("%d@%s", n, sha) }
	if heads[key(first.Head.Sha)] != 1 || heads[key(newHead)] != 1 || len(heads) != 2 {
		t.Errorf("reviews per head = %v, want one for each of the two heads", heads)
	}
}

// TestForgeOutageAndAgentRestart: the forge stops answering for 20 s, and
// later the agent server is restarted under running sessions. The pool keeps
// running and every PR still merges. The servers are the test's own: it
// freezes one and restarts the other.
func TestForgeOutageAndAgentRestart(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startPrivateSandbox(t, ctx, 4, nil)
	bin := buildPool(t)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir()), "--workers", "2")

	eventually(t, ctx, "the first reviewer prompt", func() bool { return len(sb.Model.Prompts()) >= 1 })
	if err := sb.Forge.Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Second)
	if err := sb.Forge.Resume(); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "a prompt after the outage", func() bool { return len(sb.Model.Prompts()) >= 3 })
	restarted, err := sb.Agent.Restart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sb.Agent = restarted

	pool.wait(t, ctx)
	for _, n := range sb.PRs {
		assertMerged(t, ctx, sb, n)
	}
	if !strings.Contains(pool.stdout.String(), "Approved and merged: 4") {
		t.Errorf("report:\n%s", pool.stdout.String())
	}
	assertNoSessions(t, ctx, sb)
}

// TestMergeAfterPendingChecksIsAnnounced: an approved PR whose checks are
// pending is merged by the pool itself, pinned to the reviewed head, once
// they pass (the forge's scheduled merge is never armed), and the merge is
// announced on the issue the PR closes.
func TestMergeAfterPendingChecksIsAnnounced(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 0, approveOnly(""))
	var issue struct {
		Number int `json:"number"`
	}
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "POST", fmt.Sprintf("/repos/%s/%s/issues", sb.Owner, sb.Repo),
		map[string]string{"title": "Feature 9 is missing"}, &issue); err != nil {
		t.Fatal(err)
	}
	if err := sb.Forge.CreateBranchWithFile(ctx, sb.OwnerToken, sb.Owner, sb.Repo, "feature-9", "f9.txt", "nine\n"); err != nil {
		t.Fatal(err)
	}
	n, head, err := sb.Forge.CreatePR(ctx, sb.OwnerToken, sb.Owner, sb.Repo, "feature-9", "main", "Add feature 9",
		fmt.Sprintf("Closes #%d. Also fixes other/repo#1.", issue.Number))
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, head, "ci", "pending", "", ""); err != nil {
		t.Fatal(err)
	}
	bin := buildPool(t)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir(), "POOL_LOG_LEVEL=debug"), "--workers", "1")
	eventually(t, ctx, "the approval", func() bool { return approvedAt(t, ctx, sb, n, head) }, pool)
	// The pool must see the approved head with its checks pending (a fixed
	// pause is not enough on a loaded machine: the session can end later).
	eventually(t, ctx, "the pool waiting on the pending checks", func() bool {
		return strings.Contains(pool.stderr.String(), `reason="checks pending"`)
	}, pool)
	if getPR(t, ctx, sb, n).Merged {
		t.Fatal("merged while checks were pending")
	}
	if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, head, "ci", "success", "", ""); err != nil {
		t.Fatal(err)
	}
	pool.wait(t, ctx)
	assertMerged(t, ctx, sb, n)
	if strings.Contains(pool.stderr.String(), "outcome=scheduled") {
		t.Errorf("the forge's scheduled merge was armed:\n%s", pool.stderr.String())
	}
	want := fmt.Sprintf("PR #%d has been merged (scheduled merge completed).", n)
	found := false
	for _, c := range prComments(t, ctx, sb, issue.Number) {
		found = found || strings.HasPrefix(c.Body, want)
	}
	if !found {
		t.Errorf("issue #%d lacks %q\nstderr:\n%s", issue.Number, want, pool.stderr.String())
	}
}
