package agent_test

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"pool/agent"
	"pool/internal/sandbox"
)

const reviewer = "ca-pr-self-reviewer"

// startServer starts a scripted model and a real agent server for one test.
func startServer(t *testing.T, script sandbox.Script, permission any) (*agent.Client, *sandbox.Model) {
	t.Helper()
	c, m, _ := startServerOf(t, script, permission)
	return c, m
}

// startServerOf is startServer that returns the server too.
func startServerOf(t *testing.T, script sandbox.Script, permission any) (*agent.Client, *sandbox.Model, *sandbox.AgentServer) {
	t.Helper()
	if testing.Short() {
		t.Skip("agent: the real opencode server is skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	m, err := sandbox.StartModel(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	srv, err := sandbox.StartAgentServer(ctx, t.TempDir(), sandbox.AgentOptions{
		ModelURL: m.URL, AgentName: reviewer, Password: "pw", Permission: permission,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("opencode log tail:\n%s", srv.LogTail())
		}
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	})
	return agent.New(srv.URL, "pw", agent.Options{}), m, srv
}

// helloScript runs one bash command, then answers with its output: where
// it ran and that directory's git HEAD.
func helloScript(prompt string, outputs []string) sandbox.Turn {
	if len(outputs) == 0 {
		return sandbox.Turn{Bash: "echo hello-$((6*7)); pwd; git rev-parse HEAD"}
	}
	return sandbox.Turn{Text: "Reviewed. The command said " + strings.TrimSpace(outputs[0])}
}

// gitRepo makes a repository with one commit in a new directory and
// returns the directory and the commit.
func gitRepo(t *testing.T) (dir, head string) {
	t.Helper()
	dir = t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q")
	run("commit", "-q", "--allow-empty", "-m", "one")
	return dir, run("rev-parse", "HEAD")
}

// TestRealServerSession runs a review twice on one server, each in a git
// repository of its own that is not the server's directory: the bash tool
// runs there. The first run pays the server's warm-up, the second shows the
// steady pace.
func TestRealServerSession(t *testing.T) {
	c, model := startServer(t, helloScript, nil)
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	if open, err := c.OpenToAnyone(ctx); err != nil || open {
		t.Errorf("OpenToAnyone = %v, %v on a server with a password; want false", open, err)
	}

	for i, pr := range []string{"1", "2"} {
		dir, head := gitRepo(t)
		if agents, err := c.Agents(ctx, dir); err != nil || !slices.Contains(agents, reviewer) {
			t.Fatalf("Agents(%s) = %q, %v; want %s listed", dir, agents, err, reviewer)
		}
		text := runReview(ctx, t, c, pr, dir)
		if !strings.Contains(text, "hello-42\n"+dir+"\n"+head) {
			t.Errorf("final text %q; want hello-42, the session's directory %s and its HEAD %s", text, dir, head)
		}
		if got := model.Prompts(); len(got) != i+1 || got[i] != "Review PR #"+pr {
			t.Errorf("model prompts %q, want one per review", got)
		}
	}
}

// runReview creates a session in dir, prompts it, waits until it is done,
// checks the answer, deletes the session and disposes of dir's instance.
// It returns the final text.
func runReview(ctx context.Context, t *testing.T, c *agent.Client, pr, dir string) string {
	t.Helper()
	s, err := c.CreateSession(ctx, "review PR "+pr, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.ID, "ses") || s.Title != "review PR "+pr || s.Directory != dir || s.Created.IsZero() {
		t.Errorf("CreateSession = %+v", s)
	}
	start := time.Now()
	if err := c.PromptAsync(ctx, s.ID, reviewer, "Review PR #"+pr); err != nil {
		t.Fatal(err)
	}
	w := watchSession(ctx, t, c, s.ID, dir, false)
	t.Logf("PR %s: prompt_async answered in %s; first busy after %s; finished after %s; absent from /session/status after %s",
		pr, w.accepted.Sub(start), w.firstBusy.Sub(start), w.finished.Sub(start), w.idle.Sub(start))
	if !strings.Contains(w.text, "hello-42") || w.errMsg != "" {
		t.Errorf("final text %q, error %q; want hello-42 and no error", w.text, w.errMsg)
	}
	checkDelete(ctx, t, c, s.ID, dir)
	if err := c.Dispose(ctx, dir); err != nil {
		t.Errorf("Dispose(%s): %v", dir, err)
	}
	return w.text
}

// watch is what watchSession saw, with times.
type watch struct {
	accepted, firstBusy, finished, idle time.Time
	text, errMsg                        string
}

// watchSession polls statuses (of dir, where the session works) and
// messages until Finished says done and the session has left
// /session/status, and it was busy at some point (unless wasBusy: Finished
// alone cannot tell a session that has not started from one that finished
// earlier).
func watchSession(ctx context.Context, t *testing.T, c *agent.Client, id, dir string, wasBusy bool) watch {
	t.Helper()
	w := watch{accepted: time.Now()}
	if wasBusy {
		w.firstBusy = w.accepted
	}
	for {
		statuses, err := c.Statuses(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		st, busy := statuses[id]
		now := time.Now()
		if busy && w.firstBusy.IsZero() {
			w.firstBusy = now
		}
		msgs, err := c.Messages(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		done, text, errMsg := agent.Finished(msgs)
		if done && w.finished.IsZero() {
			w.finished, w.text, w.errMsg = now, text, errMsg
		}
		if done && !busy && !w.firstBusy.IsZero() {
			w.idle = now
			return w
		}
		select {
		case <-ctx.Done():
			t.Fatalf("session %s: status %+v, messages %+v: %v", id, st, msgs, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// checkDelete sees the session, in dir, among every directory's sessions,
// deletes it, and sees it gone.
func checkDelete(ctx context.Context, t *testing.T, c *agent.Client, id, dir string) {
	t.Helper()
	if !listed(ctx, t, c, agent.Session{ID: id, Directory: dir}) {
		t.Errorf("session %s in %s not listed before Delete", id, dir)
	}
	if err := c.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if listed(ctx, t, c, agent.Session{ID: id, Directory: dir}) {
		t.Errorf("session %s still listed after Delete", id)
	}
	if _, err := c.Messages(ctx, id); !errors.Is(err, agent.ErrNotFound) || agent.IsRetryable(err) {
		t.Errorf("Messages of a deleted session: %v; want a permanent ErrNotFound", err)
	}
	if err := c.Delete(ctx, id); err != nil {
		t.Errorf("second Delete: %v", err)
	}
}

func listed(ctx context.Context, t *testing.T, c *agent.Client, want agent.Session) bool {
	t.Helper()
	sessions, err := c.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(sessions, func(s agent.Session) bool { return s.ID == want.ID && s.Directory == want.Directory })
}

// TestRealServerPermissionAndAbort shows a session stuck on a permission ask,
// that statuses and asks are per directory, and what Abort leaves behind.
func TestRealServerPermissionAndAbort(t *testing.T) {
	askFirst := map[string]any{"bash": map[string]string{"*": "allow", "ask-me*": "ask"}}
	c, _ := startServer(t, func(string, []string) sandbox.Turn { return sandbox.Turn{Bash: "ask-me now"} }, askFirst)
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	dir, _ := gitRepo(t)
	s, err := c.CreateSession(ctx, "review PR 2", dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PromptAsync(ctx, s.ID, reviewer, "Review PR #2"); err != nil {
		t.Fatal(err)
	}
	p := waitForPermission(ctx, t, c, s.ID, dir)
	if p.Type != "bash" || !slices.Equal(p.Patterns, []string{"ask-me now"}) {
		t.Errorf("permission %+v, want bash [ask-me now]", p)
	}
	if st, err := c.Statuses(ctx, dir); err != nil || st[s.ID].Type != "busy" {
		t.Errorf("Statuses(%s) = %+v, %v; want the session busy", dir, st, err)
	}
	if st, err := c.Statuses(ctx, ""); err != nil || len(st) != 0 {
		t.Errorf("Statuses of the server's own directory = %+v, %v; want none (they are per directory)", st, err)
	}
	if perms, err := c.Permissions(ctx, ""); err != nil || len(perms) != 0 {
		t.Errorf("Permissions of the server's own directory = %+v, %v; want none (they are per directory)", perms, err)
	}
	msgs, err := c.Messages(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done, _, _ := agent.Finished(msgs); done {
		t.Errorf("Finished while a tool waits on a permission: %+v", msgs)
	}
	if err := c.Abort(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	w := watchSession(ctx, t, c, s.ID, dir, true)
	if w.errMsg != "MessageAbortedError: Aborted" {
		t.Errorf("after Abort: text %q, error %q; want MessageAbortedError: Aborted", w.text, w.errMsg)
	}
	perms, err := c.Permissions(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("permission asks still listed after Abort: %+v", perms)
	checkDelete(ctx, t, c, s.ID, dir)
	if err := c.Dispose(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if perms, err := c.Permissions(ctx, dir); err != nil || len(perms) != 0 {
		t.Errorf("Permissions after Dispose = %+v, %v; want none", perms, err)
	}
}

func waitForPermission(ctx context.Context, t *testing.T, c *agent.Client, id, dir string) agent.Permission {
	t.Helper()
	for {
		perms, err := c.Permissions(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range perms {
			if p.SessionID == id {
				return p
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no permission ask for %s: %v", id, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
