package deploy_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"pool/agent"
	"pool/deploy"
	"pool/internal/sandbox"
)

// recorder is a scripted model that makes the calls in turns, one per
// model turn, and records what each call gave back.
type recorder struct {
	turns []sandbox.Turn

	mu      sync.Mutex
	outputs []string // guarded by mu: the tool outputs of the last conversation
}

func (r *recorder) script(_ string, outputs []string) sandbox.Turn {
	r.mu.Lock()
	r.outputs = append([]string(nil), outputs...)
	r.mu.Unlock()
	if len(outputs) < len(r.turns) {
		return r.turns[len(outputs)]
	}
	return sandbox.Turn{Text: "Done.\nREVIEW-RESULT: {\"decision\": \"commented\", \"merge_status\": \"none\"}"}
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.outputs...)
}

// gitRepo makes a repository with one commit in a new directory: a work
// tree for a session.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "one"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// runSession prompts agentName in dir and waits until the session is done.
// A permission ask fails the test: headless, it would wait forever.
func runSession(ctx context.Context, t *testing.T, c *agent.Client, agentName, dir, prompt string) string {
	t.Helper()
	s, err := c.CreateSession(ctx, "deploy test", dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PromptAsync(ctx, s.ID, agentName, prompt); err != nil {
		t.Fatal(err)
	}
	busy := false
	for {
		perms, err := c.Permissions(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(perms) > 0 {
			t.Fatalf("the session asks for a permission %+v: a headless reviewer would wait forever", perms)
		}
		st, err := c.Statuses(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		_, nowBusy := st[s.ID]
		busy = busy || nowBusy
		msgs, err := c.Messages(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if done, text, errMsg := agent.Finished(msgs); done && busy && !nowBusy {
			if errMsg != "" {
				t.Fatalf("session error: %s", errMsg)
			}
			return text
		}
		select {
		case <-ctx.Done():
			t.Fatalf("session %s did not finish: %v", s.ID, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestShippedReviewerRefusesWhatItMayNotDo runs the shipped reviewer on the
// real agent server and has its model ask for what the definition does not
// allow: each call is refused (no permission ask, which headless would wait
// on forever), and nothing shows the reviewer's token.
func TestShippedReviewerRefusesWhatItMayNotDo(t *testing.T) {
	if testing.Short() {
		t.Skip("deploy: the real agent server is skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const token = "0123456789abcdef-reviewer-token-for-the-refusal-test"
	setup, err := sandbox.SetUpReviewer(ctx, t.TempDir(), "http://127.0.0.1:9", token)
	if err != nil {
		t.Fatal(err)
	}
	tf := setup.TokenFile
	refused := []sandbox.Turn{
		{Bash: "curl -s http://127.0.0.1:9/api/v1/user"},
		{Bash: "cat " + tf},
		{Bash: "pwd; cat " + tf},
		{Bash: "git diff --no-index " + tf + " /dev/null"},
		{Bash: "POOL_REVIEW_FORGE_URL=http://127.0.0.1:8 pool-review pr owner/demo#1"},
		{Bash: "pool-review push owner/demo#1"},
		{Bash: "go test ./..."},
		{Tool: "read", Args: map[string]any{"filePath": tf}},
		{Tool: "write", Args: map[string]any{"filePath": "notes.txt", "content": "x"}},
		{Tool: "webfetch", Args: map[string]any{"url": "http://127.0.0.1:9/", "format": "text"}},
	}
	allowed := []sandbox.Turn{
		{Bash: "pwd"},
		{Bash: "git log --oneline"},
	}
	rec := &recorder{turns: append(append([]sandbox.Turn(nil), refused...), allowed...)}
	m, err := sandbox.StartModel(rec.script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	srv, err := sandbox.StartAgentServer(ctx, t.TempDir(), sandbox.AgentOptions{
		ModelURL: m.URL, AgentName: deploy.Reviewer, Shipped: true, Env: setup.Env, Log: sandbox.TestLog(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("opencode log tail:\n%s", srv.LogTail())
		}
		_ = srv.Stop()
	})
	c := agent.New(srv.URL, "", agent.Options{})
	dir := gitRepo(t)
	runSession(ctx, t, c, deploy.Reviewer, dir, "Review PR #1. Repo: owner/demo.")
	outputs := rec.seen()
	if len(outputs) != len(rec.turns) {
		t.Fatalf("%d tool outputs, want %d: %q", len(outputs), len(rec.turns), outputs)
	}
	for i, out := range outputs {
		call := fmt.Sprintf("%s%s %v", rec.turns[i].Bash, rec.turns[i].Tool, rec.turns[i].Args)
		t.Logf("%s\n  -> %s", call, strings.TrimSpace(out))
		if strings.Contains(out, token) {
			t.Errorf("%s: the output shows the token", call)
		}
		if i >= len(refused) {
			continue
		}
		// A refusal names the rule; anything else ran.
		if !strings.Contains(strings.ToLower(out), "rule") && !strings.Contains(strings.ToLower(out), "denied") &&
			!strings.Contains(strings.ToLower(out), "not allowed") && !strings.Contains(strings.ToLower(out), "unavailable") {
			t.Errorf("%s was not refused: %q", call, out)
		}
	}
	if got := outputs[len(refused)]; strings.TrimSpace(got) != dir {
		t.Errorf("pwd said %q, want %s: the allowed commands should run", got, dir)
	}
}
