package clone

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// twoPRForge makes a repository in dir whose main branch ignores *.log, and
// two PRs, each adding a file: it returns their heads.
func twoPRForge(t *testing.T, dir string) (head1, head2 string) {
	t.Helper()
	gitIn(t, ".", "init", "-q", "-b", "main", dir)
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", ".gitignore")
	commitFile(t, dir, "README.md")
	for i, name := range []string{"one.txt", "two.txt"} {
		gitIn(t, dir, "checkout", "-qb", "pr"+name, "main")
		commitFile(t, dir, name)
		head := gitIn(t, dir, "rev-parse", "HEAD")
		gitIn(t, dir, "update-ref", "refs/pull/"+string(rune('1'+i))+"/head", head)
		if i == 0 {
			head1 = head
		} else {
			head2 = head
		}
	}
	gitIn(t, dir, "checkout", "-q", "main")
	return head1, head2
}

func openTwoPRs(t *testing.T) (c *Clone, head1, head2 string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	head1, head2 = twoPRForge(t, src)
	c, err := Open(context.Background(), Options{Dir: filepath.Join(t.TempDir(), "clone"), URL: src, Token: "tok", Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Remove() })
	return c, head1, head2
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// messUp does what a session may do in its tree: change a tracked file
// (and hide the change from git), stage a new file, leave untracked and
// ignored files and a nested repository, and write into git's files for
// the tree: a per-tree ref, a reflog, a file of its own, a hook and a
// hooks directory in its config, each of which would write mark if run.
func messUp(t *testing.T, dir, mark string) {
	t.Helper()
	write(t, filepath.Join(dir, "README.md"), "changed by the first session\n")
	gitIn(t, dir, "update-index", "--assume-unchanged", "README.md")
	write(t, filepath.Join(dir, "staged.txt"), "staged\n")
	gitIn(t, dir, "add", "staged.txt")
	write(t, filepath.Join(dir, "untracked.txt"), "untracked\n")
	write(t, filepath.Join(dir, "build", "ignored.log"), "ignored\n")
	gitIn(t, dir, "init", "-q", filepath.Join(dir, "nested"))
	write(t, filepath.Join(dir, "nested", "inner.txt"), "nested\n")
	gitIn(t, dir, "update-ref", "--create-reflog", "-m", "note", "refs/worktree/note", "HEAD")
	gitDir := filepath.Join(dir, ".git")
	write(t, filepath.Join(gitDir, "planted"), "for the next session\n")
	if _, err := os.Stat(filepath.Join(gitDir, "logs", "refs", "worktree", "note")); err != nil {
		t.Fatalf("expected a reflog in the tree's git dir: %v", err)
	}
	hook := "#!/bin/sh\ntouch '" + mark + "'\n"
	write(t, filepath.Join(gitDir, "hooks", "post-checkout"), hook)
	write(t, filepath.Join(dir, "myhooks", "post-checkout"), hook)
	for _, h := range []string{filepath.Join(gitDir, "hooks", "post-checkout"), filepath.Join(dir, "myhooks", "post-checkout")} {
		if err := os.Chmod(h, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, dir, "config", "core.hooksPath", filepath.Join(dir, "myhooks"))
}

// TestReusedTreeKeepsNothingOfTheLastSession: a tree given back is the
// one the next session gets, at its own head, and what the first session
// wrote there (a tracked file changed, untracked, ignored and staged
// files, a nested repository, git's per-tree files) is gone before the
// second one starts.
func TestReusedTreeKeepsNothingOfTheLastSession(t *testing.T) {
	ctx := context.Background()
	c, head1, head2 := openTwoPRs(t)
	dir, err := c.TakeTree(ctx, 1, head1)
	if err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(t.TempDir(), "hook-ran")
	messUp(t, dir, mark)
	if kept, err := c.GiveTree(ctx, dir, 1); err != nil || !kept {
		t.Fatalf("GiveTree = %v, %v; want kept", kept, err)
	}
	again, err := c.TakeTree(ctx, 2, head2)
	if err != nil {
		t.Fatal(err)
	}
	if again != dir {
		t.Fatalf("second take got %s, want the warm tree %s", again, dir)
	}
	if got := gitIn(t, dir, "rev-parse", "HEAD"); got != head2 {
		t.Errorf("HEAD %s, want PR 2's head %s", got, head2)
	}
	if st := gitIn(t, dir, "status", "--porcelain", "--ignored"); st != "" {
		t.Errorf("status after the reset:\n%s", st)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "README.md")); string(b) != "README.md\n" {
		t.Errorf("README.md = %q, want the committed text", b)
	}
	for _, name := range []string{"one.txt", "staged.txt", "untracked.txt", "build", "nested"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s is still in the tree", name)
		}
	}
	for _, l := range strings.Split(gitIn(t, dir, "ls-files", "-v"), "\n") {
		if !strings.HasPrefix(l, "H ") {
			t.Errorf("an index flag survived the reset: %q", l)
		}
	}
	gitDir := filepath.Join(dir, ".git")
	for _, name := range []string{"planted", "hooks", filepath.Join("logs", "refs", "worktree")} {
		if _, err := os.Lstat(filepath.Join(gitDir, name)); err == nil {
			t.Errorf("the tree's .git still holds the session's %s", name)
		}
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("a hook the session planted ran at the reset")
	}
	if got := gitIn(t, dir, "config", "--default", "", "core.hooksPath"); got != "" {
		t.Errorf("the tree's config still names the session's hooks: %q", got)
	}
	if refs := gitIn(t, dir, "for-each-ref", "refs/worktree/"); refs != "" {
		t.Errorf("per-tree refs survived: %s", refs)
	}
}

// TestBusyTreesAreNeverShared: a tree is given to one session at a time;
// a second take while it is busy makes another, and a tree given back
// beyond keep is removed.
func TestBusyTreesAreNeverShared(t *testing.T) {
	ctx := context.Background()
	c, head1, head2 := openTwoPRs(t)
	a, err := c.TakeTree(ctx, 1, head1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.TakeTree(ctx, 2, head2)
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("two busy sessions got the same tree %s", a)
	}
	if kept, _ := c.GiveTree(ctx, a, 1); !kept {
		t.Error("first tree given back not kept")
	}
	if kept, _ := c.GiveTree(ctx, b, 1); kept {
		t.Error("second tree kept beyond keep=1")
	}
	if _, err := os.Stat(b); !os.IsNotExist(err) {
		t.Errorf("tree given back beyond keep still there: %v", err)
	}
	if got := c.RetireTrees(ctx, time.Now().Add(-time.Hour)); len(got) != 0 {
		t.Errorf("RetireTrees = %v, want none: %s was removed by GiveTree, which said so", got, b)
	}
	if got := c.RetireTrees(ctx, time.Now()); len(got) != 1 || got[0] != a {
		t.Errorf("RetireTrees = %v, want the idle %s", got, a)
	}
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Errorf("retired tree still there: %v", err)
	}
}

// TestTreeThatCannotBeResetIsReplaced: a tree that is no longer a
// directory cannot be reset; the next take makes a new tree, and the
// broken one is retired.
func TestTreeThatCannotBeResetIsReplaced(t *testing.T) {
	ctx := context.Background()
	c, head1, head2 := openTwoPRs(t)
	dir, err := c.TakeTree(ctx, 1, head1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "not a tree\n")
	if _, err := c.GiveTree(ctx, dir, 1); err != nil {
		t.Fatal(err)
	}
	fresh, err := c.TakeTree(ctx, 2, head2)
	if err != nil {
		t.Fatal(err)
	}
	if fresh == dir {
		t.Fatal("the broken tree was given out again")
	}
	if got := gitIn(t, fresh, "rev-parse", "HEAD"); got != head2 {
		t.Errorf("new tree at %s, want %s", got, head2)
	}
	if got := c.RetireTrees(ctx, time.Now().Add(-time.Hour)); !slices.Equal(got, []string{dir}) {
		t.Errorf("RetireTrees = %v, want the broken %s", got, dir)
	}
}
