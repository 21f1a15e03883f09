package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"pool/agent"
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
	rec := &recorder{turns: []sandbox.Turn{{Tool: "read", Args: map[string]any{"filePath": filepath.Join(dir, "notes.md")}}}}
	srv := startShipped(ctx, t, rec, setup)
	runSession(ctx, t, agent.New(srv.URL, "", agent.Options{}), deploy.Reviewer, dir, "Review PR #1. Repo: owner/demo.")
	outputs := rec.seen()
	if len(outputs) != 1 {
		t.Fatalf("%d tool outputs, want 1: %q", len(outputs), outputs)
	}
	t.Logf("read notes.md -> %s", strings.TrimSpace(outputs[0]))
	if strings.Contains(outputs[0], token) {
		t.Errorf("reading the PR's link shows the token: %q", outputs[0])
	}
	if !strings.Contains(outputs[0], setup.TokenFile) {
		t.Errorf("reading the PR's link shows %q, want the link's text %s", outputs[0], setup.TokenFile)
	}
}
