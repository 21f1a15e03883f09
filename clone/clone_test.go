package clone

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pool/internal/sandbox"
)

// TestCloneKeepsTheTokenOutOfTheRepository clones a private repository from
// the real test forge with a token, refreshes after a push, and removes it.
func TestCloneKeepsTheTokenOutOfTheRepository(t *testing.T) {
	forge := sandbox.ForgeForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	token, err := forge.CreateUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := forge.CreateRepo(ctx, token, "secret-repo"); err != nil {
		t.Fatal(err)
	}
	if _, err := forge.Do(ctx, token, "PATCH", "/repos/alice/secret-repo", map[string]any{"private": true}, nil); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", t.TempDir())

	c, err := New(ctx, Options{URL: fmt.Sprintf("%s/alice/secret-repo.git", forge.URL), Token: token, Branch: "main",
		GitName: "Pool Bot", GitEmail: "pool@example.com"})
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	defer c.Remove()
	if !strings.HasPrefix(c.Dir, os.Getenv("TMPDIR")) {
		t.Errorf("clone at %s, want a fresh directory under TMPDIR", c.Dir)
	}
	assertNoToken(t, c.Dir, token)

	pushed, err := forge.PushFile(ctx, token, "alice", "secret-repo", "main", "NEW.md", "new\n", "add NEW.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctx); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if head, _ := c.Head(); head != pushed {
		t.Errorf("head after refresh = %s, want %s", head, pushed)
	}
	if _, err := os.Stat(filepath.Join(c.Dir, "NEW.md")); err != nil {
		t.Errorf("work tree not reset to the new head: %v", err)
	}
	assertNoToken(t, c.Dir, token)

	dir := c.Dir
	if err := c.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("clone still on disk after Remove: %v", err)
	}
}

func assertNoToken(t *testing.T, dir, token string) {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cfg), token) {
		t.Errorf("the token is in .git/config:\n%s", cfg)
	}
	if !strings.Contains(string(cfg), "Pool Bot") {
		t.Errorf("identity not set in .git/config:\n%s", cfg)
	}
}

func TestCloneFailureLeavesNothing(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	_, err := New(context.Background(), Options{URL: "http://127.0.0.1:1/none.git", Token: "x", Branch: "main"})
	if err == nil {
		t.Fatal("clone of an unreachable URL succeeded")
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "pool-clone-*")); len(left) > 0 {
		t.Errorf("failed clone left %v", left)
	}
}
