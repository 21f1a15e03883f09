package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"pool/internal/sandbox"
)

// hostileReviewer is a scripted reviewer whose first command, in every
// session, is a probe (set once the pool runs and its paths are known);
// then it reviews as review says. It keeps every tool output its sessions
// got.
type hostileReviewer struct {
	ready   chan struct{} // closed once cmd is set
	cmd     string
	mu      sync.Mutex
	outputs map[string][]string // by prompt: each session's tool outputs so far
}

func (h *hostileReviewer) script(review sandbox.Script) sandbox.Script {
	return func(prompt string, outputs []string) sandbox.Turn {
		h.mu.Lock()
		h.outputs[prompt] = outputs
		h.mu.Unlock()
		if len(outputs) == 0 {
			select {
			case <-h.ready:
				return sandbox.Turn{Bash: h.cmd}
			case <-time.After(time.Minute):
				return sandbox.Turn{Text: "no probe was set"}
			}
		}
		return review(prompt, outputs[1:])
	}
}

// second returns the outputs of the sessions' second commands: where the
// reviewer ran, and the commit checked out there (sandbox.WhereTurn).
func (h *hostileReviewer) second() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, o := range h.outputs {
		if len(o) > 1 {
			out = append(out, o[1])
		}
	}
	return out
}

// probes returns the outputs of the sessions' first commands, the probes.
func (h *hostileReviewer) probes() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, o := range h.outputs {
		if len(o) > 0 {
			out = append(out, o[0])
		}
	}
	return out
}

func (h *hostileReviewer) all() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var all []string
	for _, o := range h.outputs {
		all = append(all, o...)
	}
	return strings.Join(all, "\n")
}

// TestHostileReviewerAsItsOwnUser: the agent server runs as an OS user of
// its own (sandbox.SeparateUser; the pool shares the work trees with its
// group, agent.tree_group), its reviewer's permissions let it run any
// command (hostile text has talked it past the shipped ones), and the
// scripted reviewer's first command in
// each session is what hostile PR code would run: read the pool's
// environment (/proc/<pid>/environ), its token file and its state database,
// and write a post-checkout hook into its bare clone. Every attempt is
// denied (the command's output shows it), the second PR's work tree is
// added after the first session's attempt and no hook runs, both PRs are
// reviewed in their work trees and merged, and the pool's token is in
// none of the sessions' tool output. Where no second user can be had
// (not root), it skips.
func TestHostileReviewerAsItsOwnUser(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	h := &hostileReviewer{ready: make(chan struct{}), outputs: map[string][]string{}}
	sb := startSeparateSandbox(t, ctx, 2, h.script(sandbox.Reviewer(sandbox.Approve)))
	tmp := t.TempDir()
	state := filepath.Join(tmp, "state")
	env := poolEnv(t, sb, tmp) // with POOL_AGENT_TREE_GROUP: sb.AgentUser's group
	tokenFile := envValue(env, "POOL_FORGEJO_TOKEN_FILE")
	pool := startPool(t, ctx, buildPool(t), env, "--workers", "1")
	repoDir := filepath.Join(state, sb.Owner+"_"+sb.Repo)
	environ := fmt.Sprintf("/proc/%d/environ", pool.cmd.Process.Pid)
	db, hook, mark := filepath.Join(repoDir, "state.db"), filepath.Join(repoDir, "clone", "repo.git", "hooks", "post-checkout"), filepath.Join(tmp, "hook-ran")
	h.cmd = probe(environ, tokenFile, db, hook, mark)
	close(h.ready)
	pool.wait(t, ctx)

	probes := h.probes()
	if len(probes) != 2 {
		t.Fatalf("probes run: %d, want one per PR's session:\n%s", len(probes), strings.Join(probes, "\n---\n"))
	}
	for i, out := range probes {
		t.Logf("session %d's probe, as %s:\n%s", i+1, sb.AgentUser.Name, out)
		for _, what := range []string{environ, tokenFile, db, hook} {
			if !strings.Contains(out, "DENIED "+what) {
				t.Errorf("session %d was not denied %s", i+1, what)
			}
		}
		if !strings.Contains(out, "Permission denied") {
			t.Errorf("session %d's probe shows no denial by the OS", i+1)
		}
	}
	for _, out := range h.second() {
		dir, head := sandbox.Where(out)
		if !strings.HasPrefix(dir, filepath.Join(repoDir, "clone", "trees")+"/") || !shaRE.MatchString(head) {
			t.Errorf("the reviewer could not use its work tree as its own user: %q", out)
		}
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("a hook the session planted ran")
	}
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(h.all(), strings.TrimSpace(string(token))) {
		t.Error("the pool's token is in a session's tool output")
	}
	for _, n := range sb.PRs {
		assertMerged(t, ctx, sb, n)
	}
}

// startSeparateSandbox is startSandbox with an agent server of the
// sandbox's own running as sandbox.SeparateUser, whose reviewer may use
// every tool on every path (the shipped one's permissions would refuse the
// probe before the OS does); it skips where that user cannot be had.
func startSeparateSandbox(t *testing.T, ctx context.Context, prs int, script sandbox.Script) *sandbox.Sandbox {
	t.Helper()
	if _, err := sandbox.SeparateUser(); err != nil {
		t.Skipf("cannot run the agent server as a user of its own (CI runs as root): %v", err)
	}
	servers := sandbox.SharedServers(t)
	sb, err := servers.Join(ctx, sandbox.Options{Dir: t.TempDir(), PRs: prs, Script: script, SeparateAgent: true, AllowEverything: true, Log: sandbox.TestLog(t)})
	if err != nil {
		t.Fatalf("sandbox: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("agent server log tail:\n%s", sb.Agent.LogTail())
		}
		sb.Stop()
	})
	if sb.AgentUser == nil {
		t.Fatal("the sandbox's agent server runs as this process's user")
	}
	return sb
}

var shaRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// envValue is the value of name in env, "" if it is not there.
func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}
