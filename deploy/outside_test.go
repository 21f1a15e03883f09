package deploy_test

import (
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
// the reviewer's token file. The agent server's read tool follows links
// (on a plain checkout it shows the token), so in a work tree the pool made
// the link is a plain file: reading it shows the link's text, never the
// token.
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
	read := []sandbox.Turn{{Tool: "read", Args: map[string]any{"filePath": filepath.Join(dir, "notes.md")}}}
	outputs := runScripted(ctx, t, setup, deploy.Reviewer, dir, "Review PR #1. Repo: owner/demo.", read)
	t.Logf("read notes.md -> %s", strings.TrimSpace(outputs[0]))
	if strings.Contains(outputs[0], token) {
		t.Errorf("reading the PR's link shows the token: %q", outputs[0])
	}
	if !strings.Contains(outputs[0], setup.TokenFile) {
		t.Errorf("reading the PR's link shows %q, want the link's text %s", outputs[0], setup.TokenFile)
	}
}

// TestShippedReviewerGitStaysInItsTree: git diffs any two paths when one is
// outside the repository, no --no-index needed, and the permissions, which
// match the command's text, let `git diff /dev/null TOKENFILE` through: it
// printed the token. The git guard (pool-review as git, first on the
// server's PATH) sees the arguments after the shell and refuses every
// spelling of a path outside the tree; git in the tree still runs.
func TestShippedReviewerGitStaysInItsTree(t *testing.T) {
	const token = "0123456789abcdef-reviewer-token-for-the-git-test"
	ctx, setup := offlineReviewer(t, token)
	dir := gitRepo(t)
	tf := setup.TokenFile
	up, err := filepath.Rel(dir, tf)
	if err != nil {
		t.Fatal(err)
	}
	refused := []sandbox.Turn{
		{Bash: "git diff /dev/null " + tf},
		{Bash: "git diff -- /dev/null " + tf},
		{Bash: `git diff "/dev/null" "` + tf + `"`},
		{Bash: "git diff /dev/null $" + sandbox.EnvReviewTokenFile},
		{Bash: "git diff " + up + " README"},
		{Bash: "git show HEAD --output-indicator-new=x"},
	}
	allowed := []sandbox.Turn{{Bash: "git log --format=%s"}}
	turns := append(append([]sandbox.Turn(nil), refused...), allowed...)
	outputs := runScripted(ctx, t, setup, deploy.Reviewer, dir, "Review PR #1. Repo: owner/demo.", turns)
	for i, out := range outputs {
		t.Logf("%s\n  -> %s", turns[i].Bash, strings.TrimSpace(out))
		if strings.Contains(out, token) {
			t.Errorf("%s: the output shows the token", turns[i].Bash)
		}
		if i < len(refused) && !refusal(out) && !strings.Contains(out, "pool-review: git") {
			t.Errorf("%s was not refused: %q", turns[i].Bash, out)
		}
	}
	if got := strings.TrimSpace(outputs[len(refused)]); got != "one" {
		t.Errorf("git log in the tree said %q, want the commit's subject %q", got, "one")
	}
}
