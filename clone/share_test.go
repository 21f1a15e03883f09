package clone

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"pool/internal/sandbox"
)

// asAgent runs the shell script as the agent server's user would, in dir,
// and returns its output.
func asAgent(t *testing.T, u sandbox.OSUser, dir, script string) string {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "umask 0007; "+script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent", "GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com",
		"GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{u.GID}}}
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// TestSharedTreeIsTheAgentUsersAndNothingElse: with a tree group, the
// agent server's user (another OS user, in that group) can review and fix
// in a work tree (read the diff against the base, commit), and cannot read
// the clone's config, list or write its hooks, or list repo.git; its commit
// stays in the work tree's own objects; a reset gives the next session a
// clean tree it can use; the pool deletes the tree whole.
func TestSharedTreeIsTheAgentUsersAndNothingElse(t *testing.T) {
	u, err := sandbox.SeparateUser()
	if err != nil {
		t.Skipf("needs a second OS user: %v", err)
	}
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src")
	head := localForge(t, src)
	opt := Options{Dir: filepath.Join(t.TempDir(), "clone"), URL: src, Token: "tok", Branch: "main", TreeGroup: strconv.Itoa(int(u.GID))}
	c, err := Open(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	if err := sandbox.OpenWayTo(c.Dir); err != nil {
		t.Fatal(err)
	}
	dir, err := c.TakeTree(ctx, 1, head)
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(c.Dir, "repo.git")
	out := asAgent(t, u, dir, `git rev-parse HEAD; git diff --name-only origin/main...HEAD
mkdir -p sub && echo x > sub/fix.txt && git add sub/fix.txt && git commit -qm fix && echo COMMITTED $(git rev-parse HEAD)
cat `+repo+`/config >/dev/null && echo READ config
ls `+repo+`/hooks >/dev/null && echo LISTED hooks
mkdir -p `+repo+`/hooks && echo x > `+repo+`/hooks/post-checkout && echo WROTE hook
ls `+repo+` >/dev/null && echo LISTED repo.git
true`)
	t.Logf("as %s:\n%s", u.Name, out)
	for _, want := range []string{head, "feature.txt", "COMMITTED"} {
		if !strings.Contains(out, want) {
			t.Errorf("the agent's user could not use the work tree: no %q in its output", want)
		}
	}
	for _, bad := range []string{"READ config", "LISTED hooks", "WROTE hook", "LISTED repo.git"} {
		if strings.Contains(out, bad) {
			t.Errorf("the agent's user %s", bad)
		}
	}
	_, commit, _ := strings.Cut(out, "COMMITTED ")
	commit, _, _ = strings.Cut(commit, "\n")
	if commit != "" && exec.Command("git", "-C", repo, "cat-file", "-e", commit).Run() == nil {
		t.Error("the agent's commit is in the pool's object store")
	}

	// The tree, given back and taken for the next session, is reset: the
	// session's commit and files are gone, and it is the group's again.
	if kept, err := c.GiveTree(ctx, dir, 1); err != nil || !kept {
		t.Fatalf("GiveTree = %v, %v; want kept", kept, err)
	}
	again, err := c.TakeTree(ctx, 1, head)
	if err != nil || again != dir {
		t.Fatalf("TakeTree = %s, %v; want the reset %s", again, err, dir)
	}
	out = asAgent(t, u, dir, `git rev-parse HEAD; git status --porcelain; ls sub 2>&1; echo y > more.txt && git add more.txt && git commit -qm more && echo COMMITTED`)
	t.Logf("as %s, after the reset:\n%s", u.Name, out)
	if !strings.HasPrefix(out, head+"\n") || !strings.Contains(out, "No such file") || !strings.Contains(out, "COMMITTED") {
		t.Errorf("after the reset the tree is not at the head, clean and usable by the agent's user:\n%s", out)
	}
	if err := c.RemoveTree(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the pool could not delete the shared tree: %v", err)
	}
}
