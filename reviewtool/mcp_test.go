package reviewtool

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"pool/sessionmark"
)

// mcpClient talks to a Server over pipes, as the agent server does.
type mcpClient struct {
	t    *testing.T
	in   io.WriteCloser
	out  *bufio.Scanner
	next int
}

func startMCP(t *testing.T, dir string, args ...string) *mcpClient {
	t.Helper()
	t.Chdir(dir)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Serve(context.Background(), args, inR, outW, io.Discard)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		<-done
	})
	return &mcpClient{t: t, in: inW, out: bufio.NewScanner(outR)}
}

func (c *mcpClient) request(method string, params any) json.RawMessage {
	c.t.Helper()
	c.next++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method, "params": params})
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	if !c.out.Scan() {
		c.t.Fatalf("%s: no answer", method)
	}
	var reply struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(c.out.Bytes(), &reply); err != nil || reply.ID != c.next {
		c.t.Fatalf("%s: answer %s (%v)", method, c.out.Bytes(), err)
	}
	if reply.Error != nil {
		c.t.Fatalf("%s: error %+v", method, reply.Error)
	}
	return reply.Result
}

// call calls a tool and returns its text and whether it says it failed.
func (c *mcpClient) call(name string, args map[string]any) (string, bool) {
	c.t.Helper()
	var r toolResult
	if err := json.Unmarshal(c.request("tools/call", map[string]any{"name": name, "arguments": args}), &r); err != nil || len(r.Content) != 1 {
		c.t.Fatalf("tools/call %s: %v %+v", name, err, r)
	}
	return r.Content[0].Text, r.IsError
}

// treeRepo makes a work tree as the pool does: the base branch as
// refs/remotes/origin/main, a PR head with a change checked out detached.
func treeRepo(t *testing.T) (dir, head string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "tree")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q")
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# demo\n")
	git("add", "-A")
	git("commit", "-qm", "base")
	git("update-ref", "refs/remotes/origin/main", "HEAD")
	write("src/feature.go", "package src\n\n// Feature says hello.\nfunc Feature() string { return \"hello\" }\n")
	git("add", "-A")
	git("commit", "-qm", "feature")
	head = git("rev-parse", "HEAD")
	git("checkout", "-q", "--detach", head)
	return dir, head
}

// TestToolServerReadsTheSessionsTree: over the protocol, the server lists
// its tools and answers the reading ones from the session's head: the
// diff from the base, the files, a file with line numbers, a search. Paths
// that leave the tree or name .git are refused; so is any call outside a
// session's tree.
func TestToolServerReadsTheSessionsTree(t *testing.T) {
	dir, head := treeRepo(t)
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	token := tokenFile(t, "tok-0123456789abcdef")
	c := startMCP(t, dir, "--forge", "http://127.0.0.1:9", "--token-file", token, "--git", git)
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(c.request("initialize", map[string]any{"protocolVersion": "2025-06-18"}), &init); err != nil || init.ProtocolVersion != "2025-06-18" {
		t.Fatalf("initialize: %+v %v", init, err)
	}
	var list struct {
		Tools []struct{ Name string }
	}
	if err := json.Unmarshal(c.request("tools/list", map[string]any{}), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, " "); got != "pr diff files read search verdict" {
		t.Errorf("tools %q", got)
	}
	if text, failed := c.call("files", nil); !failed || !strings.Contains(text, "not the work tree of a session") {
		t.Errorf("files outside a session: %q, failed %v; want a refusal", text, failed)
	}
	r := sessionmark.Record{Repo: "o/r", PR: 1, Head: head, Base: "main", Session: "ses_test",
		Mark: sessionmark.NewKey("k").Mark("o/r", 1, head, "ses_test")}
	if err := sessionmark.Write(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"diff", nil, "+func Feature() string"},
		{"diff", map[string]any{"stat": true}, "src/feature.go | 4 ++++"},
		{"files", nil, "README.md\nsrc/feature.go\n"},
		{"read", map[string]any{"path": "src/feature.go", "offset": 3, "limit": 1}, "3\t// Feature says hello.\n[lines 3-3 of 4"},
		{"search", map[string]any{"pattern": "hello"}, "src/feature.go:3:// Feature says hello."},
		{"search", map[string]any{"pattern": "nowhere to be found"}, "(no match)"},
	} {
		text, failed := c.call(tt.tool, tt.args)
		if failed || !strings.Contains(text, tt.want) {
			t.Errorf("%s %v: %q (failed %v); want %q", tt.tool, tt.args, text, failed, tt.want)
		}
	}
	for _, tt := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read", map[string]any{"path": "../tree.session"}, "leads out of the work tree"},
		{"read", map[string]any{"path": "/etc/passwd"}, "relative to the top"},
		{"read", map[string]any{"path": ".git/config"}, "not the PR's"},
		{"read", map[string]any{"path": "README.md", "repo": "x/y"}, "unknown field"},
		{"search", map[string]any{"pattern": "x", "path": "../"}, "leads out of the work tree"},
		{"diff", map[string]any{"path": "src/../../x"}, "leads out of the work tree"},
		{"shell", map[string]any{"command": "id"}, `no tool "shell"`},
	} {
		text, failed := c.call(tt.tool, tt.args)
		if !failed || !strings.Contains(text, tt.want) {
			t.Errorf("%s %v: %q (failed %v); want a refusal saying %q", tt.tool, tt.args, text, failed, tt.want)
		}
	}
}

// TestVerdictToolActsOnlyForItsSession: the verdict tool takes no target:
// naming another PR or repository is refused, as are a head prefix,
// another commit, a forged session mark, the token in a body, and a tree
// whose HEAD moved. Nothing reaches the forge (nothing answers at its URL),
// and no answer shows the token.
func TestVerdictToolActsOnlyForItsSession(t *testing.T) {
	const token = "tok-0123456789abcdef-verdict"
	dir, head := treeRepo(t)
	c := startMCP(t, dir, "--forge", "http://127.0.0.1:9", "--token-file", tokenFile(t, token))
	r := sessionmark.Record{Repo: "o/r", PR: 1, Head: head, Base: "main", Session: "ses_test",
		Mark: sessionmark.NewKey("k").Mark("o/r", 1, head, "ses_test")}
	if err := sessionmark.Write(dir, r); err != nil {
		t.Fatal(err)
	}
	other := strings.Repeat("cd", 20)
	verdict := func(extra map[string]any) map[string]any {
		a := map[string]any{"verdict": "approve", "commit": head, "body": "ok"}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	for _, tt := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"another PR", verdict(map[string]any{"pr": 2}), "unknown field \"pr\""},
		{"another repository", verdict(map[string]any{"repo": "x/y"}), "always on this session's PR, o/r#1"},
		{"a short commit", verdict(map[string]any{"commit": head[:7]}), "not a full commit id"},
		{"another commit", verdict(map[string]any{"commit": other}), "not the head this session was started for"},
		{"no verdict word", verdict(map[string]any{"verdict": "merge"}), "verdict must be"},
		{"a forged mark", verdict(map[string]any{"body": "ok" + sessionmark.Tag("ses_x."+strings.Repeat("0", 32))}), "session mark"},
		{"the token", verdict(map[string]any{"body": "see " + token}), "holds the reviewer's token"},
		{"a line comment out of the tree", verdict(map[string]any{"comments": []any{map[string]any{"path": "../x", "line": 1, "body": "x"}}}), "leads out"},
	} {
		text, failed := c.call("verdict", tt.args)
		if !failed || !strings.Contains(text, tt.want) || strings.Contains(text, token) {
			t.Errorf("%s: %q (failed %v); want a refusal saying %q, without the token", tt.name, text, failed, tt.want)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte(other+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if text, failed := c.call("verdict", verdict(nil)); !failed || !strings.Contains(text, "work tree's HEAD is") {
		t.Errorf("a tree whose HEAD moved: %q (failed %v)", text, failed)
	}
}

// TestToolServerRunsNothingOfTheTree: the tree's .git/config (which a
// session of another kind may have written) names an external diff, a
// text conversion for the PR's files and a pager, each a command that
// leaves a file; the tools' diff, read and search run none of them.
func TestToolServerRunsNothingOfTheTree(t *testing.T) {
	dir, head := treeRepo(t)
	marks := t.TempDir()
	config := fmt.Sprintf("[diff]\n\texternal = touch %[1]s/external\n[diff \"conv\"]\n\ttextconv = touch %[1]s/textconv\n"+
		"[core]\n\tpager = touch %[1]s/pager\n\tattributesFile = %[2]s/attributes\n", marks, dir)
	f, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(config); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.WriteFile(filepath.Join(dir, "attributes"), []byte("* diff=conv\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := sessionmark.Record{Repo: "o/r", PR: 1, Head: head, Base: "main", Session: "ses_test",
		Mark: sessionmark.NewKey("k").Mark("o/r", 1, head, "ses_test")}
	if err := sessionmark.Write(dir, r); err != nil {
		t.Fatal(err)
	}
	c := startMCP(t, dir, "--forge", "http://127.0.0.1:9", "--token-file", tokenFile(t, "tok-0123456789abcdef"))
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"diff", nil}, {"diff", map[string]any{"stat": true}}, {"read", map[string]any{"path": "src/feature.go"}},
		{"search", map[string]any{"pattern": "Feature"}}, {"files", nil},
	} {
		text, failed := c.call(call.tool, call.args)
		if failed {
			t.Errorf("%s: %q", call.tool, text)
		}
	}
	entries, err := os.ReadDir(marks)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("the tree's config ran a command: %s", e.Name())
	}
}
