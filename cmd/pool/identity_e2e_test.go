package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"pool/internal/sandbox"
)

// otherUser returns the OS user the agent server is to run as, an
// identity of its own (sandbox.SeparateUser creates it when the test runs
// as root); elsewhere it skips, saying why.
func otherUser(t *testing.T) (uid, gid uint32) {
	t.Helper()
	u, err := sandbox.SeparateUser()
	if err != nil {
		t.Skipf("needs a second OS user (CI runs as root): %v", err)
	}
	return u.UID, u.GID
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
// its clone: a hook that, were it run, writes its environment to mark.
// Each line says READ/WROTE or DENIED, and the error the OS gave.
func probe(environ, token, db, hook, mark string) string {
	return fmt.Sprintf(`for f in %q %q %q; do if cat "$f" >/dev/null; then echo "READ $f"; else echo "DENIED $f"; fi; done 2>&1
if mkdir -p %q && printf '#!/bin/sh\nenv > %s\n' > %q && chmod +x %q; then echo "WROTE %s"; else echo "DENIED %s"; fi 2>&1
cat %q %q 2>&1 | head -c 4096`, environ, token, db, filepath.Dir(hook), mark, hook, hook, hook, hook, environ, token)
}

// TestAnotherUserCannotReachThePoolsSecrets: a running pool, and a process
// of another OS user (the identity the agent server is to run as) that
// tries, as hostile code in a work tree would, to read the pool's
// environment, its token file and its state database, and to write a hook
// into its clone. The OS refuses each, by the modes the pool keeps (state
// dir 0700, database 0600) and the token file's (0600); the token is in
// none of the output. TestHostileReviewerAsItsOwnUser runs the same probe
// as a reviewer session's first command.
func TestAnotherUserCannotReachThePoolsSecrets(t *testing.T) {
	parallel(t)
	uid, gid := otherUser(t)
	ctx := testContext(t)
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
	cmd := exec.CommandContext(ctx, "sh", "-c", probe(environ, tokenFile, db, filepath.Join(hooks, "post-checkout"), filepath.Join(tmp, "hook-ran")))
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
