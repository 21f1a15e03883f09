package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"pool/deploy"
	"pool/internal/sandbox"
)

// whereabouts records, per PR, where the scripted reviewer's first command
// ran and what was checked out there.
type whereabouts struct {
	mu    sync.Mutex
	where map[string][2]string // PR number -> dir, HEAD
}

// watch wraps a script, recording the output of its first command.
func (w *whereabouts) watch(script sandbox.Script) sandbox.Script {
	return func(prompt string, outputs []string) sandbox.Turn {
		if pr, _, _, ok := sandbox.PromptTarget(prompt); ok && len(outputs) == 1 {
			dir, head := sandbox.Where(outputs[0])
			w.mu.Lock()
			w.where[pr] = [2]string{dir, head}
			w.mu.Unlock()
		}
		return script(prompt, outputs)
	}
}

// TestSessionsWorkInTheirOwnWorkTrees: each reviewer session runs in a work
// tree of the pool's clone at its PR's head, named in its prompt; the trees
// and the clone are gone when the pool exits.
func TestSessionsWorkInTheirOwnWorkTrees(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	w := &whereabouts{where: map[string][2]string{}}
	sb := startSandbox(t, ctx, 2, w.watch(sandbox.Reviewer(sandbox.Approve)))
	heads := map[string]string{}
	for _, n := range sb.PRs {
		heads[itoa(n)] = getPR(t, ctx, sb, n).Head.Sha
	}
	tmp := t.TempDir()
	pool := startPool(t, ctx, buildPool(t), poolEnv(t, sb, tmp), "--workers", "2")
	pool.wait(t, ctx)

	trees := filepath.Join(cloneDir(sb, tmp), "trees") + "/"
	w.mu.Lock()
	defer w.mu.Unlock()
	for pr, head := range heads {
		got, ok := w.where[pr]
		if !ok {
			t.Errorf("PR #%s: the reviewer never reported where it ran", pr)
			continue
		}
		t.Logf("PR #%s: the session's pwd %s, HEAD %s", pr, got[0], got[1])
		if !strings.HasPrefix(got[0], trees) || got[1] != head {
			t.Errorf("PR #%s: session ran in %s at %s; want a work tree under %s at the PR's head %s", pr, got[0], got[1], trees, head)
		}
		prompted := false
		for _, p := range sb.Model.Prompts() {
			prompted = prompted || strings.Contains(p, "Review PR #"+pr+".") && strings.Contains(p, "Work tree: "+got[0]+" ")
		}
		if !prompted {
			t.Errorf("PR #%s: no prompt names the work tree %s", pr, got[0])
		}
	}
	for _, n := range sb.PRs {
		assertMerged(t, ctx, sb, n)
	}
	assertNoSessions(t, ctx, sb)
	assertNoClone(t, sb, tmp)
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestUnknownAgentExitsTwo: a mistyped agent.name stops the start with exit
// code 2, naming the key and the agents the server has; nothing is claimed.
func TestUnknownAgentExitsTwo(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 1, nil)
	tmp := t.TempDir()
	pool := startPool(t, ctx, buildPool(t), poolEnv(t, sb, tmp, "POOL_AGENT_NAME=ca-pr-self-reviewr"))
	select {
	case <-pool.exited:
	case <-ctx.Done():
		t.Fatal("the pool did not exit")
	}
	var exit *exec.ExitError
	if !errors.As(pool.err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit %v, want code 2\nstderr:\n%s", pool.err, pool.stderr.String())
	}
	stderr := pool.stderr.String()
	for _, want := range []string{"agent.name", `"ca-pr-self-reviewr"`, "ca-pr-self-reviewer", "build"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	t.Logf("stderr: %s", strings.TrimSpace(stderr))
	if cs := prComments(t, ctx, sb, sb.PRs[0]); len(cs) != 0 {
		t.Errorf("the pool commented before failing: %+v", cs)
	}
	assertNoSessions(t, ctx, sb)
}

// probeTurns is what a session looks at first: where it is, and anything git
// sees changed, untracked or ignored in its work tree.
var probeTurns = []sandbox.Turn{{Bash: "pwd"}, {Bash: "git status --porcelain --ignored"}}

// messTurns is what a session may leave in its work tree: a tracked file
// changed, an untracked file, and a file its own .gitignore ignores.
var messTurns = []sandbox.Turn{
	{Tool: "read", Args: map[string]any{"filePath": "README.md"}},
	{Tool: "write", Args: map[string]any{"filePath": "README.md", "content": "changed by a session\n"}},
	{Tool: "write", Args: map[string]any{"filePath": "untracked.txt", "content": "untracked\n"}},
	{Tool: "write", Args: map[string]any{"filePath": ".gitignore", "content": "*.log\n"}},
	{Tool: "write", Args: map[string]any{"filePath": "ignored.log", "content": "ignored\n"}},
	{Bash: "git status --porcelain --ignored"},
}

// TestReusedTreeCarriesNothing: with one worker, the second PR's session
// runs in the first one's work tree, kept warm, and finds nothing the first
// session wrote there: its changed tracked file is restored, its untracked
// and ignored files are gone. One session per head. The sessions are the
// shipped fixer agent's, which may write files.
func TestReusedTreeCarriesNothing(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	var mu sync.Mutex
	probes := map[string][2]string{} // PR number -> pwd, status its session saw first
	left := map[string]string{}      // PR number -> status after its session wrote
	review := sandbox.Reviewer(sandbox.Approve)
	steps := append(append([]sandbox.Turn{}, probeTurns...), messTurns...)
	script := func(prompt string, outputs []string) sandbox.Turn {
		pr, _, _, ok := sandbox.PromptTarget(prompt)
		if !ok {
			return review(prompt, outputs)
		}
		if len(outputs) == len(probeTurns) {
			mu.Lock()
			probes[pr] = [2]string{strings.TrimSpace(outputs[0]), strings.TrimSpace(outputs[1])}
			mu.Unlock()
		}
		if len(outputs) == len(steps) {
			mu.Lock()
			left[pr] = outputs[len(steps)-1]
			mu.Unlock()
		}
		if len(outputs) < len(steps) {
			return steps[len(outputs)]
		}
		return review(prompt, outputs[len(steps):])
	}
	sb := startSandbox(t, ctx, 2, script)
	tmp := t.TempDir()
	pool := startPool(t, ctx, buildPool(t), poolEnv(t, sb, tmp), "--workers", "1", "--agent", deploy.Fixer)
	pool.wait(t, ctx)

	for _, n := range sb.PRs {
		assertMerged(t, ctx, sb, n)
	}
	if prompts := sb.Model.Prompts(); len(prompts) != 2 {
		t.Errorf("model received %d reviewer prompts, want 2 (one per head)", len(prompts))
	}
	mu.Lock()
	defer mu.Unlock()
	trees := filepath.Join(cloneDir(sb, tmp), "trees") + "/"
	var dirs []string
	for _, n := range sb.PRs {
		got, ok := probes[itoa(n)]
		if !ok {
			t.Fatalf("PR #%d: its session never ran the probeTurns", n)
		}
		t.Logf("PR #%d: the session ran in %s and found git status %q", n, got[0], got[1])
		if !strings.HasPrefix(got[0], trees) {
			t.Errorf("PR #%d: session ran in %s, not in a work tree under %s", n, got[0], trees)
		}
		if got[1] != "" && got[1] != "(no output)" {
			t.Errorf("PR #%d: the session found its work tree not clean:\n%s", n, got[1])
		}
		for _, want := range []string{" M README.md", "?? untracked.txt", "!! ignored.log"} {
			if !strings.Contains(left[itoa(n)], want) {
				t.Errorf("PR #%d: after its writes git status lacks %q:\n%s", n, want, left[itoa(n)])
			}
		}
		dirs = append(dirs, got[0])
	}
	if len(dirs) == 2 && dirs[0] != dirs[1] {
		t.Errorf("the sessions ran in %v; want the second in the first one's tree, kept warm", dirs)
	}
	assertNoSessions(t, ctx, sb)
	assertNoClone(t, sb, tmp)
}
