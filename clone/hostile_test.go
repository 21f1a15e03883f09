package clone

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// plant writes an executable script into the bare clone's hooks directory,
// as code running in a work tree could, which writes its environment to mark.
func plant(t *testing.T, c *Clone, hook, mark string) {
	t.Helper()
	script := "#!/bin/sh\nenv > '" + mark + "'\n"
	if err := os.WriteFile(filepath.Join(c.Dir, "repo.git", "hooks", hook), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestPlantedHookDoesNotRun: a post-checkout hook planted in the bare clone
// (what a hostile PR's code in one work tree can do) is not run when the
// pool adds the next work tree, nor any hook named in the clone's config,
// and the pool removes what was planted before it uses the clone.
func TestPlantedHookDoesNotRun(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src")
	head := localForge(t, src)
	c, err := Open(ctx, Options{Dir: filepath.Join(t.TempDir(), "clone"), URL: src, Token: "tok", Branch: "main", GitName: "Pool Bot", GitEmail: "pool@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	marks := t.TempDir()
	ran := func(m string) bool { _, err := os.Stat(filepath.Join(marks, m)); return err == nil }
	os.MkdirAll(filepath.Join(c.Dir, "repo.git", "hooks"), 0o700)
	plant(t, c, "post-checkout", filepath.Join(marks, "post-checkout"))
	plant(t, c, "reference-transaction", filepath.Join(marks, "reference-transaction"))
	dir, err := c.TakeTree(ctx, 1, head)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"post-checkout", "reference-transaction"} {
		if ran(m) {
			t.Errorf("the planted %s hook ran when the pool added a work tree", m)
		}
	}
	if _, err := os.Stat(filepath.Join(c.Dir, "repo.git", "hooks", "post-checkout")); err == nil {
		t.Error("the planted hook is still in the clone after the pool used it")
	}

	// A hooks directory named in the clone's config is a second way in.
	elsewhere := filepath.Join(t.TempDir(), "hooks")
	os.MkdirAll(elsewhere, 0o700)
	os.WriteFile(filepath.Join(elsewhere, "post-checkout"), []byte("#!/bin/sh\ntouch '"+filepath.Join(marks, "config-hook")+"'\n"), 0o755)
	gitIn(t, filepath.Join(c.Dir, "repo.git"), "config", "core.hooksPath", elsewhere)
	if err := c.RemoveTree(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TakeTree(ctx, 1, head); err != nil {
		t.Fatal(err)
	}
	if ran("config-hook") {
		t.Error("the hook in the directory the clone's config names ran")
	}
	if got, _ := c.gitOut(ctx, "config", "--local", "--get", "core.hooksPath"); got != "" {
		t.Errorf("the clone's config still names a hooks directory: %q", got)
	}
}

// TestGitGetsNoInheritedEnvironment: git is run with PATH, HOME and LANG
// from the pool's environment and nothing else of it: no token, no GIT_*.
// A git on PATH that records its environment shows what git got.
func TestGitGetsNoInheritedEnvironment(t *testing.T) {
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git: ", err)
	}
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src")
	head := localForge(t, src)
	bin := t.TempDir()
	seen := filepath.Join(t.TempDir(), "env")
	wrapper := "#!/bin/sh\nenv >> '" + seen + "'\necho ---- >> '" + seen + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("POOL_FORGEJO_TOKEN", "secret-token-in-env")
	t.Setenv("SOME_API_KEY", "secret-key-in-env")
	t.Setenv("GIT_DIR", "/nonexistent")
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.hookspath'='/tmp'")

	c, err := Open(ctx, Options{Dir: filepath.Join(t.TempDir(), "clone"), URL: src, Token: "tok", Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	if _, err := c.TakeTree(ctx, 1, head); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("git on PATH was not run: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(line, "=")
		switch {
		case strings.Contains(line, "secret-"):
			t.Errorf("git's environment holds a secret: %s", line)
		case line == "" || line == "----":
		case name == "GIT_DIR" || name == "GIT_CONFIG_PARAMETERS":
			t.Errorf("git inherited %s", line)
		case name != "PATH" && name != "HOME" && name != "LANG" && !strings.HasPrefix(name, "GIT_") && name != "PWD" && name != "SHLVL" && name != "_":
			t.Errorf("git got %s, which the pool did not set", name)
		}
	}
}

// linkForge makes a repository in dir whose PR 1 adds notes.md, a symbolic
// link to target, and returns the PR's head.
func linkForge(t *testing.T, dir, target string) string {
	t.Helper()
	gitIn(t, ".", "init", "-q", "-b", "main", dir)
	commitFile(t, dir, "README.md")
	gitIn(t, dir, "checkout", "-qb", "feature")
	if err := os.Symlink(target, filepath.Join(dir, "notes.md")); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", "notes.md")
	gitIn(t, dir, "commit", "-qm", "add a link")
	head := gitIn(t, dir, "rev-parse", "HEAD")
	gitIn(t, dir, "update-ref", "refs/pull/1/head", head)
	gitIn(t, dir, "checkout", "-q", "main")
	return head
}

// TestALinkInThePRIsCheckedOutAsItsText: a PR's symbolic link to a file
// outside the tree (a token) is checked out as a plain file holding the
// link's text, in a new tree and in a reset one, so nothing that reads the
// tree (the agent server's read tool follows links) reaches the file. The
// tree's own git agrees: the status is clean, and adding everything (a
// fixer's commit) keeps the link a link.
func TestALinkInThePRIsCheckedOutAsItsText(t *testing.T) {
	ctx := context.Background()
	secret := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secret, []byte("secret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "src")
	head := linkForge(t, src, secret)
	c, err := Open(ctx, Options{Dir: filepath.Join(t.TempDir(), "clone"), URL: src, Token: "tok", Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	for _, when := range []string{"new tree", "reset tree"} {
		dir, err := c.TakeTree(ctx, 1, head)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "notes.md")
		if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("%s: notes.md is not a plain file: %v, %v", when, fi, err)
		}
		if b, _ := os.ReadFile(path); string(b) != secret {
			t.Errorf("%s: notes.md holds %q, want the link's text %q", when, b, secret)
		}
		if st := gitIn(t, dir, "status", "--porcelain"); st != "" {
			t.Errorf("%s: the tree's git sees changes:\n%s", when, st)
		}
		gitIn(t, dir, "add", "-A")
		if got := gitIn(t, dir, "ls-files", "-s", "notes.md"); !strings.HasPrefix(got, "120000 ") {
			t.Errorf("%s: after adding everything, notes.md is %q, want a link (120000)", when, got)
		}
		if kept, err := c.GiveTree(ctx, dir, 1); err != nil || !kept {
			t.Fatalf("GiveTree = %v, %v", kept, err)
		}
	}
}
