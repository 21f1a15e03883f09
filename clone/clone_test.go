package clone

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"pool/internal/sandbox"
)

// gitIn runs git in dir and returns its trimmed output.
func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commitFile commits a file named name, holding its name, on dir's current
// branch.
func commitFile(t testing.TB, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", name)
	gitIn(t, dir, "commit", "-qm", "add "+name)
}

// localForge makes a repository in dir with a main branch and PR 1's head
// published as refs/pull/1/head, as the forge does. It returns the head.
func localForge(t testing.TB, dir string) string {
	t.Helper()
	gitIn(t, ".", "init", "-q", "-b", "main", dir)
	commitFile(t, dir, "README.md")
	gitIn(t, dir, "checkout", "-qb", "feature")
	commitFile(t, dir, "feature.txt")
	head := gitIn(t, dir, "rev-parse", "HEAD")
	gitIn(t, dir, "update-ref", "refs/pull/1/head", head)
	gitIn(t, dir, "checkout", "-q", "main")
	return head
}

func trees(t *testing.T, c *Clone) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(c.Dir, "trees"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, filepath.Join(c.Dir, "trees", e.Name()))
	}
	return out
}

// TestWorkTreesAddRemovePruneAndReuse goes through a work tree's life on a
// local repository: added at the PR head with the base branch beside it,
// refused at a head the forge does not have, removed, kept or pruned after
// a relaunch that reuses the clone, and all gone with the clone.
func TestWorkTreesAddRemovePruneAndReuse(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src")
	head := localForge(t, src)
	opt := Options{Dir: filepath.Join(t.TempDir(), "clone"), URL: src, Token: "tok", Branch: "main", GitName: "Pool Bot", GitEmail: "pool@example.com"}

	c, err := Open(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	if c.Reused {
		t.Error("a fresh directory was reported as reused")
	}
	dir, err := c.TakeTree(ctx, 1, head)
	if err != nil {
		t.Fatal(err)
	}
	if got := gitIn(t, dir, "rev-parse", "HEAD"); got != head {
		t.Errorf("work tree HEAD = %s, want the PR head %s", got, head)
	}
	if _, err := os.Stat(filepath.Join(dir, "feature.txt")); err != nil {
		t.Errorf("work tree lacks the PR's file: %v", err)
	}
	if got := gitIn(t, dir, "diff", "--name-only", "origin/main...HEAD"); got != "feature.txt" {
		t.Errorf("diff against origin/main names %q, want feature.txt", got)
	}
	if got := gitIn(t, dir, "config", "user.name"); got != "Pool Bot" {
		t.Errorf("identity in the work tree = %q", got)
	}

	if _, err := c.TakeTree(ctx, 1, strings.Repeat("a", 40)); err == nil {
		t.Error("a work tree at a commit the forge does not have was added")
	}
	if _, err := c.TakeTree(ctx, 1, "--orphan"); err == nil {
		t.Error("a head that is not a commit id was passed to git")
	}
	if got := trees(t, c); len(got) != 1 || got[0] != dir {
		t.Errorf("trees after failed adds = %v, want only %s", got, dir)
	}

	second, err := c.TakeTree(ctx, 1, head)
	if err != nil {
		t.Fatal(err)
	}
	if second == dir {
		t.Fatal("two sessions at one head got the same directory")
	}
	if err := c.RemoveTree(ctx, second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(second); !os.IsNotExist(err) {
		t.Errorf("removed work tree still on disk: %v", err)
	}
	if err := c.RemoveTree(ctx, src); err != nil {
		t.Errorf("a foreign directory: %v", err)
	}
	if _, err := os.Stat(src); err != nil {
		t.Errorf("RemoveTree touched a directory that is not its own: %v", err)
	}

	// A killed pool leaves the clone and its trees; the relaunch reuses it.
	third, err := c.TakeTree(ctx, 1, head)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Open(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Reused {
		t.Error("the clone left behind was not reused")
	}
	if err := again.PruneTrees(ctx, []string{dir}); err != nil {
		t.Fatal(err)
	}
	if got := trees(t, again); len(got) != 1 || got[0] != dir {
		t.Errorf("trees after prune = %v, want only the kept %s", got, dir)
	}
	if _, err := os.Stat(third); !os.IsNotExist(err) {
		t.Errorf("pruned work tree still on disk: %v", err)
	}
	if list := gitIn(t, filepath.Join(opt.Dir, "repo.git"), "worktree", "list"); strings.Count(list, "\n") != 0 {
		t.Errorf("git still records pruned trees:\n%s", list)
	}
	if err := again.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(opt.Dir); !os.IsNotExist(err) {
		t.Errorf("clone still on disk after Remove: %v", err)
	}
}

// TestOpenReplacesWhatIsNotAClone: a directory holding something that does
// not open as a clone is emptied and cloned afresh.
func TestOpenReplacesWhatIsNotAClone(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	localForge(t, src)
	dir := filepath.Join(t.TempDir(), "clone")
	os.MkdirAll(filepath.Join(dir, "repo.git"), 0o700)
	os.WriteFile(filepath.Join(dir, "repo.git", "junk"), []byte("x"), 0o600)
	c, err := Open(context.Background(), Options{Dir: dir, URL: src, Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	if c.Reused {
		t.Error("junk was reused as a clone")
	}
	if _, err := os.Stat(filepath.Join(dir, "repo.git", "junk")); !os.IsNotExist(err) {
		t.Errorf("junk survived a fresh clone: %v", err)
	}
}

func TestCloneFailureLeavesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "clone")
	_, err := Open(context.Background(), Options{Dir: dir, URL: "http://127.0.0.1:1/none.git", Token: "x", Branch: "main"})
	if err == nil {
		t.Fatal("clone of an unreachable URL succeeded")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("failed clone left %s: %v", dir, err)
	}
}

// TestWorkTreeOfAPrivateRepositoryKeepsTheTokenOut clones a private
// repository from the real test forge with a token, adds a work tree at a
// real PR's head, and finds the token in no file of the clone or the tree.
func TestWorkTreeOfAPrivateRepositoryKeepsTheTokenOut(t *testing.T) {
	forge := sandbox.ForgeForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	ch, err := forge.OpenChange(ctx, "alice", "secret-repo", "feature", "f.txt")
	if err != nil {
		t.Fatal(err)
	}
	token, n, head := ch.Token, ch.PR, ch.Head
	if _, err := forge.Do(ctx, token, "PATCH", "/repos/alice/secret-repo", map[string]any{"private": true}, nil); err != nil {
		t.Fatal(err)
	}

	c, err := Open(ctx, Options{Dir: filepath.Join(t.TempDir(), "clone"), URL: fmt.Sprintf("%s/alice/secret-repo.git", forge.URL),
		Token: token, Branch: "main", GitName: "Pool Bot", GitEmail: "pool@example.com"})
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	defer c.Remove()
	dir, err := c.TakeTree(ctx, n, head)
	if err != nil {
		t.Fatal(err)
	}
	if got := gitIn(t, dir, "rev-parse", "HEAD"); got != head {
		t.Errorf("work tree HEAD = %s, want PR #%d's head %s", got, n, head)
	}
	err = filepath.WalkDir(c.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), token) {
			t.Errorf("the token is in %s", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg := gitIn(t, dir, "config", "--list", "--show-origin"); strings.Contains(cfg, token) || !strings.Contains(cfg, "Pool Bot") {
		t.Errorf("work tree config holds the token or lacks the identity:\n%s", cfg)
	}
}

// TestOnBase tells a PR head on the base from one that is not, and names
// the base's commit that holds it: the merge commit after a merge, the
// head itself after a fast-forward.
func TestOnBase(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src")
	head := localForge(t, src)
	c, err := Open(ctx, Options{Dir: filepath.Join(t.TempDir(), "clone"), URL: src, Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if commit, ok, err := c.OnBase(ctx, 1, head); err != nil || ok {
		t.Errorf("OnBase before any merge = %q, %v, %v; want not on the base", commit, ok, err)
	}
	if _, _, err := c.OnBase(ctx, 1, "--all"); err == nil {
		t.Error("a head that is not a commit id was passed to git")
	}

	gitIn(t, src, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
	merge := gitIn(t, src, "rev-parse", "HEAD")
	commitFile(t, src, "later.txt")
	if commit, ok, err := c.OnBase(ctx, 1, head); err != nil || !ok || commit != merge {
		t.Errorf("OnBase after a merge and a later commit = %q, %v, %v; want the merge commit %s", commit, ok, err, merge)
	}

	gitIn(t, src, "checkout", "-qb", "second", "main")
	commitFile(t, src, "second.txt")
	second := gitIn(t, src, "rev-parse", "HEAD")
	gitIn(t, src, "update-ref", "refs/pull/2/head", second)
	gitIn(t, src, "checkout", "-q", "main")
	gitIn(t, src, "merge", "-q", "--ff-only", "second")
	if commit, ok, err := c.OnBase(ctx, 2, second); err != nil || !ok || commit != second {
		t.Errorf("OnBase after a fast-forward = %q, %v, %v; want the head %s", commit, ok, err, second)
	}
}
