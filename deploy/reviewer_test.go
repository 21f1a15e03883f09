package deploy_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"pool/agent"
	"pool/deploy"
	"pool/internal/sandbox"
	"pool/sessionmark"
	"pool/texts"
)

// recorder is a scripted model that makes the calls in turns, one per
// model turn, and records what each call gave back.
type recorder struct {
	mu      sync.Mutex // guards the fields below
	turns   []sandbox.Turn
	outputs []string // the tool outputs of the last conversation
}

func (r *recorder) setTurns(turns []sandbox.Turn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.turns = turns
}

func (r *recorder) script(_ string, outputs []string) sandbox.Turn {
	r.mu.Lock()
	r.outputs = append([]string(nil), outputs...)
	turns := r.turns
	r.mu.Unlock()
	if len(outputs) < len(turns) {
		return turns[len(outputs)]
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
		perms, st, msgs, err := sessionState(ctx, c, s.ID, dir)
		switch {
		case agent.IsRetryable(err):
			// a loaded machine's server can miss a call's deadline; the
			// test's own deadline bounds the wait
			t.Logf("reading the session failed; reading again: %v", err)
		case err != nil:
			t.Fatal(err)
		case len(perms) > 0:
			t.Fatalf("the session asks for a permission %+v: a headless reviewer would wait forever", perms)
		default:
			_, nowBusy := st[s.ID]
			busy = busy || nowBusy
			if done, text, errMsg := agent.Finished(msgs); done && busy && !nowBusy {
				if errMsg != "" {
					t.Fatalf("session error: %s", errMsg)
				}
				return text
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("session %s did not finish: %v", s.ID, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// sessionState reads what runSession watches: the pending permission asks,
// the busy sessions and the session's messages.
func sessionState(ctx context.Context, c *agent.Client, id, dir string) ([]agent.Permission, map[string]agent.Status, []agent.Message, error) {
	perms, err := c.Permissions(ctx, dir)
	if err != nil {
		return nil, nil, nil, err
	}
	st, err := c.Statuses(ctx, dir)
	if err != nil {
		return nil, nil, nil, err
	}
	msgs, err := c.Messages(ctx, id)
	return perms, st, msgs, err
}

// refusal reports whether a tool output is the agent server's refusal: a
// denied call (opencode 1.x says a rule prevents it), or a call of a tool
// the definition denies outright, which the server does not even offer.
func refusal(out string) bool {
	return strings.Contains(out, "a rule which prevents you from using this specific tool call") ||
		strings.Contains(out, "Model tried to call unavailable tool")
}

// offlineReviewer skips in -short mode, and otherwise sets pool-review up
// with token and a forge URL nothing answers on: for tests of the real
// agent server that reach no forge. Its context ends with the test.
func offlineReviewer(t *testing.T, token string) (context.Context, sandbox.ReviewerSetup) {
	t.Helper()
	if testing.Short() {
		t.Skip("deploy: the real agent server is skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	t.Cleanup(cancel)
	setup, err := sandbox.SetUpReviewer(ctx, t.TempDir(), "http://127.0.0.1:9", token)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, setup
}

// TestShippedReviewerRefusesWhatItMayNotDo runs the shipped reviewer on the
// real agent server and has its model ask for what the definition does not
// allow: no shell at all (not the commands its old patterns allowed, nor
// an assignment, an export or a redirect before them), no editing, no
// reading of the file system, no web. Each call is refused (no permission
// ask, which headless would wait on forever), and nothing shows the
// reviewer's token; the review tools answer.
func TestShippedReviewerRefusesWhatItMayNotDo(t *testing.T) {
	const token = "0123456789abcdef-reviewer-token-for-the-refusal-test"
	ctx, setup := offlineReviewer(t, token)
	tf := setup.TokenFile
	refused := []sandbox.Turn{
		{Bash: "curl -s http://127.0.0.1:9/api/v1/user"},
		{Bash: "cat " + tf},
		{Bash: "pwd; cat " + tf},
		{Bash: "git diff --no-index " + tf + " /dev/null"},
		{Bash: "POOL_REVIEW_FORGE_URL=http://127.0.0.1:8 pool-review pr owner/demo#1"},
		{Bash: "A=b; pool-review pr owner/demo#1"},
		{Bash: "pool-review comment owner/demo#1 --body \"$(cat " + tf + ")\""},
		{Bash: "pool-review comment owner/demo#1 --body - < " + tf},
		{Bash: "git log --stdin < " + tf},
		{Bash: "HOME=$PWD; git status"},
		{Bash: "PATH=$PWD:$PATH; git status"},
		{Bash: "export GIT_PAGER=cat; git log -1 > /tmp/x"},
		{Bash: "git status > .git/config"},
		{Bash: "pwd"},
		{Bash: "git log --oneline"},
		{Bash: "go test ./..."},
		{Tool: "read", Args: map[string]any{"filePath": tf}},
		{Tool: "read", Args: map[string]any{"filePath": "README"}},
		{Tool: "grep", Args: map[string]any{"pattern": "x"}},
		{Tool: "glob", Args: map[string]any{"pattern": "*"}},
		{Tool: "write", Args: map[string]any{"filePath": "notes.txt", "content": "x"}},
		{Tool: "edit", Args: map[string]any{"filePath": "notes.txt", "oldString": "x", "newString": "y"}},
		{Tool: "webfetch", Args: map[string]any{"url": "http://127.0.0.1:9/", "format": "text"}},
	}
	allowed := []sandbox.Turn{
		{Tool: sandbox.ToolFiles, Args: map[string]any{}},
		{Tool: sandbox.ToolSearch, Args: map[string]any{"pattern": "nothing"}},
	}
	turns := append(append([]sandbox.Turn(nil), refused...), allowed...)
	dir := gitRepo(t)
	head, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	recordSession(t, dir, "owner/demo", 1, strings.TrimSpace(string(head)))
	outputs := runScripted(ctx, t, setup, deploy.Reviewer, dir, "Review PR #1. Repo: owner/demo.", turns)
	for i, out := range outputs {
		call := fmt.Sprintf("%s%s %v", turns[i].Bash, turns[i].Tool, turns[i].Args)
		t.Logf("%s\n  -> %s", call, strings.TrimSpace(out))
		if strings.Contains(out, token) {
			t.Errorf("%s: the output shows the token", call)
		}
		if (i < len(refused)) != refusal(out) {
			t.Errorf("%s: refused %v, want %v: %q", call, refusal(out), i < len(refused), out)
		}
	}
	if got := outputs[len(refused)+1]; !strings.Contains(got, "(no match)") {
		t.Errorf("the search tool said %q, want no match", got)
	}
}

// recordSession writes, beside the work tree dir, the record the pool
// writes for a session started there for repo#pr at head: pool-review acts
// only for it.
func recordSession(t *testing.T, dir, repo string, pr int, head string) sessionmark.Record {
	t.Helper()
	r := sessionmark.Record{Repo: repo, PR: pr, Head: head, Base: "main", Session: "ses_deploy",
		Mark: sessionmark.NewKey("a pool token").Mark(repo, pr, head, "ses_deploy")}
	if err := sessionmark.Write(dir, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// clonePRHead clones owner/repo from the forge and checks out PR n's head,
// detached, as the pool's work trees are.
func clonePRHead(ctx context.Context, t *testing.T, f *sandbox.Forge, owner, repo string, n int) (dir, head string) {
	t.Helper()
	dir = t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("clone", "-q", fmt.Sprintf("%s/%s/%s.git", f.URL, owner, repo), ".")
	git("fetch", "-q", "origin", fmt.Sprintf("refs/pull/%d/head", n))
	git("checkout", "-q", "--detach", "FETCH_HEAD")
	return dir, git("rev-parse", "HEAD")
}

// TestShippedReviewerFilesItsReviewThroughTheTool: a session of the shipped
// reviewer, in a work tree at a PR's head, reads the PR and the diff and
// files an approval with a line comment through pool-review: the forge has
// it on the head commit, by the reviewer's account, official and signed, and
// no output of the session, the tool or the agent server shows the token.
func TestShippedReviewerFilesItsReviewThroughTheTool(t *testing.T) {
	f := sandbox.ForgeForTest(t) // skips in -short mode
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// Names of this test's own, so that a forge shared by tests keeps them apart.
	const author, reviewer, repo = "deploy-tool-author", "deploy-tool-reviewer", "reviewed"
	ch, err := f.OpenChange(ctx, author, repo, "feature", "feature.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateUser(ctx, reviewer); err != nil {
		t.Fatal(err)
	}
	if err := f.AddCollaborator(ctx, ch.Token, author, repo, reviewer, "write"); err != nil {
		t.Fatal(err)
	}
	token, err := f.ScopedToken(ctx, reviewer, sandbox.ReviewerScopes)
	if err != nil {
		t.Fatal(err)
	}
	setup, err := sandbox.SetUpReviewer(ctx, t.TempDir(), f.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range setup.Env {
		if strings.Contains(v, token) {
			t.Errorf("the agent server's environment holds the token in %s", k)
		}
	}
	rec := &recorder{}
	srv := startShipped(ctx, t, rec, setup)

	dir, head := clonePRHead(ctx, t, f, author, repo, ch.PR)
	if head != ch.Head {
		t.Fatalf("work tree at %s, want the PR's head %s", head, ch.Head)
	}
	session := recordSession(t, dir, author+"/"+repo, ch.PR, head)
	turns := []sandbox.Turn{
		{Tool: sandbox.ToolPR, Args: map[string]any{}},
		{Tool: sandbox.ToolDiff, Args: map[string]any{}},
		{Tool: sandbox.ToolRead, Args: map[string]any{"path": "feature.txt"}},
		{Tool: sandbox.ToolSearch, Args: map[string]any{"pattern": "feature"}},
		{Tool: sandbox.ToolFiles, Args: map[string]any{}},
		{Tool: sandbox.ToolVerdict, Args: map[string]any{"verdict": "approve", "commit": head, "body": "The new file is what the PR says.",
			"comments": []any{map[string]any{"path": "feature.txt", "line": 1, "body": "Fine as a first line."}}}},
		// One verdict a session: a second is refused.
		{Tool: sandbox.ToolVerdict, Args: map[string]any{"verdict": "comment", "commit": head, "body": "Again."}},
	}
	rec.setTurns(turns)
	text := runSession(ctx, t, agent.New(srv.URL, "", agent.Options{}), deploy.Reviewer, dir,
		fmt.Sprintf("Review PR #%d. Repo: %s/%s.\nHead SHA: %s\n", ch.PR, author, repo, head))
	outputs := rec.seen()
	if len(outputs) != len(turns) {
		t.Fatalf("tool outputs %q; want %d", outputs, len(turns))
	}
	t.Logf("tool outputs:\n%s", strings.Join(outputs, "\n---\n"))
	for i, want := range []string{`"head_sha": "` + head + `"`, "+feature", "1\t", "feature.txt:1:", "feature.txt", `"posted": "review"`, "one verdict a session"} {
		if !strings.Contains(outputs[i], want) {
			t.Errorf("call %d (%s) gave %q; want %q in it", i, turns[i].Tool, outputs[i], want)
		}
	}
	if !strings.Contains(text, "REVIEW-RESULT:") {
		t.Errorf("final text %q lacks the result line", text)
	}

	var reviews []struct {
		ID       int64  `json:"id"`
		State    string `json:"state"`
		Body     string `json:"body"`
		CommitID string `json:"commit_id"`
		Official bool   `json:"official"`
		User     struct {
			Login string `json:"login"`
		} `json:"user"`
	}
	if _, err := f.Do(ctx, ch.Token, "GET", fmt.Sprintf("/repos/%s/%s/pulls/%d/reviews", author, repo, ch.PR), nil, &reviews); err != nil {
		t.Fatal(err)
	}
	if len(reviews) != 1 {
		t.Fatalf("reviews on the forge: %+v; want the reviewer's one", reviews)
	}
	r := reviews[0]
	if r.State != "APPROVED" || r.CommitID != head || r.User.Login != reviewer || !r.Official ||
		r.Body != "The new file is what the PR says."+texts.Signature+sessionmark.Tag(session.Mark) {
		t.Errorf("review %+v; want APPROVED on the head %s by %s, official, signed", r, head, reviewer)
	}
	var lines []struct {
		Body string `json:"body"`
		Path string `json:"path"`
	}
	if _, err := f.Do(ctx, ch.Token, "GET", fmt.Sprintf("/repos/%s/%s/pulls/%d/reviews/%d/comments", author, repo, ch.PR, r.ID), nil, &lines); err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 || lines[0].Path != "feature.txt" || lines[0].Body != "Fine as a first line."+texts.Signature {
		t.Errorf("line comments %+v; want one, signed, on feature.txt", lines)
	}

	log, err := os.ReadFile(filepath.Join(srv.Dir, "opencode.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range append(outputs, text, string(log)) {
		if strings.Contains(out, token) {
			t.Errorf("the token shows in the session's outputs or the agent server's log")
		}
	}
}

// startShipped starts an agent server with the shipped reviewer, whose
// model answers as rec says, and stops it when the test ends, showing the
// end of its log if the test failed.
func startShipped(ctx context.Context, t *testing.T, rec *recorder, setup sandbox.ReviewerSetup) *sandbox.AgentServer {
	t.Helper()
	m, err := sandbox.StartModel(rec.script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	srv, err := sandbox.StartAgentServer(ctx, t.TempDir(), sandbox.AgentOptions{
		ModelURL: m.URL, AgentName: deploy.Reviewer, Shipped: true, Env: setup.Env, MCP: setup.MCP, Log: sandbox.TestLog(t),
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
	return srv
}

// runScripted runs one session of the shipped agent agentName in dir on a
// new agent server, its model making the calls turns, and returns what each
// call gave back; it fails the test unless every call was made.
func runScripted(ctx context.Context, t *testing.T, setup sandbox.ReviewerSetup, agentName, dir, prompt string, turns []sandbox.Turn) []string {
	t.Helper()
	rec := &recorder{turns: turns}
	srv := startShipped(ctx, t, rec, setup)
	runSession(ctx, t, agent.New(srv.URL, "", agent.Options{}), agentName, dir, prompt)
	outputs := rec.seen()
	if len(outputs) != len(turns) {
		t.Fatalf("%d tool outputs, want %d: %q", len(outputs), len(turns), outputs)
	}
	return outputs
}
