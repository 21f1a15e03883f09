package bwrap

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// layout makes a clone's layout: <clone>/repo.git/objects and a work tree
// <clone>/trees/tree-1 that is a git repository, and a token file outside
// both. It returns the tree and the token file.
func layout(t *testing.T) (tree, token string) {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "clone", "repo.git", "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	tree = filepath.Join(root, "clone", "trees", "tree-1")
	if out, err := exec.Command("git", "init", "-q", tree).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	token = filepath.Join(root, "token")
	if err := os.WriteFile(token, []byte("0123456789abcdef-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return tree, token
}

// run runs script in the sandbox in tree, as the fixer's shell does.
func run(t *testing.T, tree, script string) (string, error) {
	t.Helper()
	_, objects, err := WorkTree(tree)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(Path, Args(tree, tree, []string{objects}, []string{"GIT_AUTHOR_NAME=f"}, []string{"/bin/sh", "-c", script})...).CombinedOutput()
	return string(out), err
}

// TestTheSandboxHoldsTheFixer: in the sandbox a command may write and
// commit in its work tree, and nothing else: the token file outside it is
// not there (to read, or to commit with -F, -t or as a path), nothing
// outside the tree can be written, the network is unreachable, and the
// environment is the fixed one.
func TestTheSandboxHoldsTheFixer(t *testing.T) {
	if err := Probe(context.Background()); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	tree, token := layout(t)
	t.Setenv("POOL_SECRET_FOR_THE_TEST", "leaked-environment")
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	commit := "git -c user.name=f -c user.email=f@example.com commit -q"
	denied := []string{
		"cat " + token,
		"echo x > a.txt && git add a.txt && " + commit + " -nF " + token,
		"echo y > b.txt && git add b.txt && " + commit + " --no-edit -t " + token,
		"echo z > c.txt && git add c.txt && " + commit + " -F " + token,
		"cp " + token + " stolen.txt",
		"git ls-remote " + srv.URL + "/o/r.git",
		"ls " + filepath.Dir(token) + "/token",
	}
	for _, script := range denied {
		out, err := run(t, tree, script)
		t.Logf("%s\n  -> %v: %s", script, err, strings.TrimSpace(out))
		if err == nil {
			t.Errorf("%q ran in the sandbox: %s", script, out)
		}
		if strings.Contains(out, "secret") {
			t.Errorf("%q showed the token: %s", script, out)
		}
	}
	// Outside the tree the sandbox's files are its own, gone with it.
	if out, err := run(t, tree, "touch "+filepath.Join(filepath.Dir(token), "outside.txt")+"; ls "+filepath.Dir(token)); strings.Contains(out, "token") {
		t.Errorf("the sandbox lists the token file: %v %s", err, out)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the sandbox reached the network: %d requests", n)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(token), "outside.txt")); err == nil {
		t.Error("the sandbox wrote outside its tree")
	}
	out, err := run(t, tree, "echo fixed > FIXED.txt && git add FIXED.txt && "+commit+" -m fix && git log --format=%s && env")
	if err != nil || !strings.Contains(out, "fix\n") {
		t.Fatalf("a commit in the tree: %v\n%s", err, out)
	}
	if strings.Contains(out, "leaked-environment") || !strings.Contains(out, "HOME=/tmp") || !strings.Contains(out, "GIT_AUTHOR_NAME=f") {
		t.Errorf("the environment is not the fixed one:\n%s", out)
	}
}

// TestWorkTreeIsFoundFromTheLayout: the tree and the objects come from the
// clone's layout, whatever the tree's alternates say; a directory in no
// work tree is refused.
func TestWorkTreeIsFoundFromTheLayout(t *testing.T) {
	tree, token := layout(t)
	sub := filepath.Join(tree, "sub")
	if err := os.MkdirAll(filepath.Join(tree, ".git", "objects", "info"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tree, ".git", "objects", "info", "alternates"), []byte(filepath.Dir(token)+"\n"), 0o644)
	os.MkdirAll(sub, 0o755)
	got, objects, err := WorkTree(sub)
	want := filepath.Join(filepath.Dir(filepath.Dir(tree)), "repo.git", "objects")
	if err != nil || got != tree || objects != want {
		t.Errorf("WorkTree(%s) = %s, %s, %v; want %s, %s", sub, got, objects, err, tree, want)
	}
	if _, _, err := WorkTree(filepath.Dir(token)); err == nil {
		t.Error("a directory in no work tree was taken for one")
	}
}
