package deploy_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"pool/clone"
	"pool/deploy"
	"pool/internal/sandbox"
)

// linkPR makes a repository whose PR 1 adds notes.md, a symbolic link to
// target, published as the forge publishes a PR's head; it returns the
// repository's path and the head.
func linkPR(t *testing.T, target string) (src, head string) {
	t.Helper()
	src = t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", src, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	git("commit", "-q", "--allow-empty", "-m", "one")
	git("checkout", "-qb", "feature")
	if err := os.Symlink(target, filepath.Join(src, "notes.md")); err != nil {
		t.Fatal(err)
	}
	git("add", "notes.md")
	git("commit", "-q", "-m", "a link")
	head = git("rev-parse", "HEAD")
	git("update-ref", "refs/pull/1/head", head)
	git("checkout", "-q", "main")
	return src, head
}

// TestShippedReviewerReadsALinkAsItsText: a PR links a file of its own to
// the reviewer's token file. The agent server's read tool follows links,
// and the shipped reviewer has none; the review tools read the head's
// objects, where the link is its text: reading it shows the link's text,
// never the token.
func TestShippedReviewerReadsALinkAsItsText(t *testing.T) {
	const token = "0123456789abcdef-reviewer-token-for-the-link-test"
	ctx, setup := offlineReviewer(t, token)
	src, head := linkPR(t, setup.TokenFile)
	c, err := clone.Open(ctx, clone.Options{Dir: filepath.Join(t.TempDir(), "clone"), URL: src, Token: "tok", Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	dir, err := c.TakeTree(ctx, 1, head)
	if err != nil {
		t.Fatal(err)
	}
	recordSession(t, dir, "owner/demo", 1, head)
	turns := []sandbox.Turn{
		{Tool: "read", Args: map[string]any{"filePath": filepath.Join(dir, "notes.md")}},
		{Tool: sandbox.ToolRead, Args: map[string]any{"path": "notes.md"}},
		{Tool: sandbox.ToolSearch, Args: map[string]any{"pattern": "reviewer"}},
	}
	outputs := runScripted(ctx, t, setup, deploy.Reviewer, dir, "Review PR #1. Repo: owner/demo.", turns)
	for i, out := range outputs {
		t.Logf("%s %v -> %s", turns[i].Tool, turns[i].Args, strings.TrimSpace(out))
		if strings.Contains(out, token) {
			t.Errorf("%s shows the token: %q", turns[i].Tool, out)
		}
	}
	if !refusal(outputs[0]) {
		t.Errorf("the agent server's read tool was not refused: %q", outputs[0])
	}
	if !strings.Contains(outputs[1], setup.TokenFile) {
		t.Errorf("reading the PR's link shows %q, want the link's text %s", outputs[1], setup.TokenFile)
	}
}

// TestShippedReviewerGitStaysInItsTree: git diffs any two paths when one is
// outside the repository, and the agent server's command patterns let
// `git diff /dev/null TOKENFILE` through: it printed the token. The shipped
// reviewer runs no git: every spelling is refused, and the review tools,
// which run git themselves on the head's objects, refuse a path out of the
// tree in any of their arguments.
func TestShippedReviewerGitStaysInItsTree(t *testing.T) {
	const token = "0123456789abcdef-reviewer-token-for-the-git-test"
	ctx, setup := offlineReviewer(t, token)
	dir := gitRepo(t)
	head, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	recordSession(t, dir, "owner/demo", 1, strings.TrimSpace(string(head)))
	tf := setup.TokenFile
	up, err := filepath.Rel(dir, tf)
	if err != nil {
		t.Fatal(err)
	}
	refused := []sandbox.Turn{
		{Bash: "git diff /dev/null " + tf},
		{Bash: `git diff "/dev/null" "` + tf + `"`},
		{Bash: "git diff /dev/null $" + sandbox.EnvReviewTokenFile},
		{Bash: "git diff " + up + " README"},
		{Bash: "git log --format=%s"},
	}
	outOfTree := []sandbox.Turn{
		{Tool: sandbox.ToolRead, Args: map[string]any{"path": tf}},
		{Tool: sandbox.ToolRead, Args: map[string]any{"path": up}},
		{Tool: sandbox.ToolDiff, Args: map[string]any{"path": up}},
		{Tool: sandbox.ToolSearch, Args: map[string]any{"pattern": "x", "path": up}},
		{Tool: sandbox.ToolFiles, Args: map[string]any{"path": "../"}},
		{Tool: sandbox.ToolRead, Args: map[string]any{"path": ".git/config"}},
	}
	turns := append(append([]sandbox.Turn(nil), refused...), outOfTree...)
	outputs := runScripted(ctx, t, setup, deploy.Reviewer, dir, "Review PR #1. Repo: owner/demo.", turns)
	for i, out := range outputs {
		call := fmt.Sprintf("%s%s %v", turns[i].Bash, turns[i].Tool, turns[i].Args)
		t.Logf("%s\n  -> %s", call, strings.TrimSpace(out))
		if strings.Contains(out, token) {
			t.Errorf("%s: the output shows the token", call)
		}
		switch {
		case i < len(refused) && !refusal(out):
			t.Errorf("%s was not refused: %q", call, out)
		case i >= len(refused) && !strings.HasPrefix(out, "refused:"):
			t.Errorf("%s was not refused by the tool: %q", call, out)
		}
	}
}
