package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// agentTestUser is the OS user the test runs its probe as: what the agent
// server is to be, an identity of its own.
const agentTestUser = "pool-agent-e2e"

// otherUser returns agentTestUser's uid and gid, creating the user when the
// test runs as root (idempotently); elsewhere it skips, saying why.
func otherUser(t *testing.T) (uid, gid uint32) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create and act as a second OS user (CI runs as root)")
	}
	u, err := user.Lookup(agentTestUser)
	if err != nil {
		out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", agentTestUser).CombinedOutput()
		if err != nil && !strings.Contains(string(out), "already exists") {
			t.Skipf("cannot create the user %s: %v: %s", agentTestUser, err, out)
		}
		if u, err = user.Lookup(agentTestUser); err != nil {
			t.Fatal(err)
		}
	}
	id, _ := strconv.ParseUint(u.Uid, 10, 32)
	g, _ := strconv.ParseUint(u.Gid, 10, 32)
	return uint32(id), uint32(g)
}

// openAncestors lets every user traverse the test's own temporary
// directories above path (Go makes them 0700), so that only the modes the
// pool and the sandbox chose stand between another user and path.
func openAncestors(t *testing.T, path string) {
	t.Helper()
	tmp := filepath.Clean(os.TempDir())
	for dir := filepath.Dir(path); strings.HasPrefix(dir, tmp+string(os.PathSeparator)); dir = filepath.Dir(dir) {
		if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o001 == 0 && strings.Contains(dir, "Test") {
			if err := os.Chmod(dir, fi.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// probe is what hostile code in a work tree would try first: read the
// pool's environment, its token file and its state, and plant a hook in
// its clone. Each line says READ/WROTE or DENIED.
func probe(environ, token, db, hook string) string {
	return fmt.Sprintf(`for f in %q %q %q; do if cat "$f" >/dev/null; then echo "READ $f"; else echo "DENIED $f"; fi; done
if mkdir -p %q && printf '#!/bin/sh\nenv > /dev/null\n' > %q; then echo "WROTE %s"; else echo "DENIED %s"; fi
cat %q %q 2>&1 | head -c 4096`, environ, token, db, filepath.Dir(hook), hook, hook, hook, environ, token)
}

// TestAnotherUserCannotReachThePoolsSecrets: a running pool, and a process
// of another OS user (the identity the agent server is to run as) that
// tries, as hostile code in a work tree would, to read the pool's
// environment, its token file and its state database, and to write a hook
// into its clone. The OS refuses each, by the modes the pool keeps (state
// dir 0700, database 0600) and the token file's (0600); the token is in
// none of the output. What is left of issue 19 part 7: the agent server
// itself running as that user, with the work trees shared with it.
func TestAnotherUserCannotReachThePoolsSecrets(t *testing.T) {
	parallel(t)
	uid, gid := otherUser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sb := startSandbox(t, ctx, 1, nil)
	tmp := t.TempDir()
	env := poolEnv(t, sb, tmp, "POOL_IDLE_EXIT=0")
	var tokenFile string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "POOL_FORGEJO_TOKEN_FILE="); ok {
			tokenFile = v
		}
	}
	bin := buildPool(t)
	pool := startPool(t, ctx, bin, env, "--workers", "1")
	repoDir := filepath.Join(tmp, "state", sb.Owner+"_"+sb.Repo)
	db, hooks := filepath.Join(repoDir, "state.db"), filepath.Join(repoDir, "clone", "repo.git", "hooks")
	eventually(t, ctx, "the pool's clone", func() bool { _, err := os.Stat(filepath.Join(repoDir, "clone", "repo.git")); return err == nil }, pool)
	for _, p := range []string{tokenFile, db, hooks} {
		openAncestors(t, p)
	}
	environ := fmt.Sprintf("/proc/%d/environ", pool.cmd.Process.Pid)
	cmd := exec.CommandContext(ctx, "sh", "-c", probe(environ, tokenFile, db, filepath.Join(hooks, "post-checkout")))
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	t.Logf("the other user's probe:\n%s", out)
	for _, what := range []string{environ, tokenFile, db, filepath.Join(hooks, "post-checkout")} {
		if !strings.Contains(string(out), "DENIED "+what) {
			t.Errorf("another user was not denied %s", what)
		}
	}
	if token, err := os.ReadFile(tokenFile); err != nil || strings.Contains(string(out), strings.TrimSpace(string(token))) {
		t.Errorf("the token is in the other user's output (or unreadable here: %v)", err)
	}
	if err := pool.cmd.Process.Signal(sigterm); err != nil {
		t.Fatal(err)
	}
	pool.wait(t, ctx)
}
