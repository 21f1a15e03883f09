package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pool/configs"
	"pool/internal/guard"
)

func TestExitCodes(t *testing.T) {
	forge500 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	defer forge500.Close()
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantCode int
		wantErr  string
	}{
		{name: "missing everything", args: nil, wantCode: 2, wantErr: "config: forgejo.url: required"},
		{name: "bad workers", args: []string{"--forgejo-url", "http://127.0.0.1:1", "--repo", "a/b", "--workers", "-1"},
			env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantCode: 2, wantErr: "config: workers"},
		{name: "unknown command", args: []string{"frobnicate"}, wantCode: 2, wantErr: "unknown command"},
		{name: "forge answers 500", args: []string{"--forgejo-url", forge500.URL, "--repo", "a/b"},
			env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantCode: 1, wantErr: "connect to the forge"},
		{name: "help", args: []string{"--help"}, wantCode: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			for _, k := range []string{"POOL_FORGEJO_URL", "POOL_FORGEJO_TOKEN", "POOL_REPO", "POOL_CONFIG", "POOL_FORGEJO_TOKEN_FILE"} {
				t.Setenv(k, "")
				os.Unsetenv(k)
			}
			t.Setenv("POOL_STATE_DIR", filepath.Join(t.TempDir(), "state"))
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", code, tt.wantCode, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantErr, stderr.String())
			}
			if strings.Contains(stderr.String()+stdout.String(), "POOL_FORGEJO_TOKEN=t") {
				t.Errorf("token echoed")
			}
		})
	}
}

// TestConfigRefusals runs the binary's entry point on each refused setting:
// exit 2 and one line on stderr naming the key, with no URL's user info.
func TestConfigRefusals(t *testing.T) {
	base := func(extra ...string) []string {
		return append([]string{"--forgejo-url", "http://127.0.0.1:1", "--repo", "a/b"}, extra...)
	}
	tests := []struct {
		name string
		args []string
		file string // ./pool.yaml
		key  string
	}{
		{"poll interval of 1ns", base("--poll-interval", "1ns"), "", "poll_interval"},
		{"status interval of 10ms", base("--status-interval", "10ms"), "", "status_interval"},
		{"owner ..", []string{"--forgejo-url", "http://127.0.0.1:1", "--repo", "../b"}, "", "repo"},
		{"repository ..", []string{"--forgejo-url", "http://127.0.0.1:1", "--repo", "a/.."}, "", "repo"},
		{"forge URL with a password", []string{"--forgejo-url", "https://bob:hunter2@forge.example.org", "--repo", "a/b"}, "", "forgejo.url"},
		{"plain http off loopback", []string{"--forgejo-url", "http://forge.example.org", "--repo", "a/b"}, "", "forgejo.url"},
		{"plain http agent off loopback", base("--agent-url", "http://10.1.2.3:4096"), "", "agent.url"},
		{"max body too small", base("--max-body", "1KiB"), "", "limits.max_body"},
		{"unknown key in ./pool.yaml", nil, "forgejo:\n  url: http://127.0.0.1:1\nrepo: a/b\npoll_intervall: 5s\n", "poll_intervall"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			for _, k := range []string{"POOL_FORGEJO_URL", "POOL_REPO", "POOL_CONFIG", "POOL_FORGEJO_TOKEN_FILE"} {
				t.Setenv(k, "")
				os.Unsetenv(k)
			}
			t.Setenv("POOL_FORGEJO_TOKEN", "t")
			if tt.file != "" {
				if err := os.WriteFile("pool.yaml", []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tt.args, &stdout, &stderr); code != 2 {
				t.Errorf("exit %d, want 2; stderr:\n%s", code, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "pool: config: "+tt.key+": ") {
				t.Errorf("last stderr line %q does not name %s", last, tt.key)
			}
			if tt.file == "" && len(lines) != 1 {
				t.Errorf("want one line on stderr, got:\n%s", stderr.String())
			}
			if strings.Contains(stderr.String(), "hunter2") || strings.Contains(stderr.String(), "bob") {
				t.Errorf("stderr shows the URL's user info:\n%s", stderr.String())
			}
		})
	}
}

func TestImplicitConfigFileIsLogged(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, k := range []string{"POOL_FORGEJO_URL", "POOL_REPO", "POOL_CONFIG", "POOL_FORGEJO_TOKEN_FILE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("POOL_FORGEJO_TOKEN", "t")
	t.Setenv("POOL_STATE_DIR", filepath.Join(dir, "state"))
	forge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer forge.Close()
	if err := os.WriteFile("pool.yaml", []byte("forgejo:\n  url: "+forge.URL+"\nrepo: a/b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), nil, &stdout, &stderr); code != 1 {
		t.Errorf("exit %d, want 1 (forge down); stderr:\n%s", code, stderr.String())
	}
	want := "file=" + filepath.Join(dir, "pool.yaml")
	if !strings.Contains(stderr.String(), "config file loaded") || !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr does not name ./pool.yaml (%s):\n%s", want, stderr.String())
	}
}

func TestExitCodeOfAPanic(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	var stderr bytes.Buffer
	if code := exitCode(context.Background(), nil, &stderr, log); code != 0 {
		t.Errorf("clean end: exit %d, want 0", code)
	}
	if code := exitCode(context.Background(), &configs.Error{Key: "k", Reason: "r"}, &stderr, log); code != 2 {
		t.Errorf("config error: exit %d, want 2", code)
	}
	root, stop := guard.WithPanics(context.Background(), nil)
	defer stop()
	guard.Go(root, nil, "test goroutine", func() { panic("boom") })
	<-root.Done()
	if code := exitCode(root, nil, &stderr, log); code != 1 {
		t.Errorf("a goroutine panicked and the run ended cleanly: exit %d, want 1", code)
	}
}

func TestPanicOnTheMainGoroutineIsExit1(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("POOL_FORGEJO_TOKEN", "t")
	t.Setenv("POOL_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	var stdout, stderr bytes.Buffer
	// A nil context: the forge calls refuse it, and reading it for a panic
	// cause panics, on the main goroutine.
	var nilCtx context.Context
	code := run(nilCtx, []string{"--forgejo-url", "http://127.0.0.1:1", "--repo", "a/b"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "pool panicked") {
		t.Errorf("exit %d, want 1 with the panic logged; stderr:\n%s", code, stderr.String())
	}
}

// TestHelpAndVersion: --help lists every command and the run flags, each
// switch written like the other flags (no type, no default); version and
// --version name the Go version the binary was built with.
func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"run", "-h"}} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
			t.Errorf("%q: exit %d, want 0; stderr:\n%s", args, code, stderr.String())
		}
		help := stdout.String()
		for _, want := range []string{"pool report OWNER/REPO#N", "pool tick", "pool hook install", "pool status", "pool version",
			"\n      --abort-on-exit  ", "\n      --dry-run  ", "\n      --workers N"} {
			if !strings.Contains(help, want) {
				t.Errorf("%q: help lacks %q:\n%s", args, want, help)
			}
		}
		if strings.Contains(help, "bool[") || strings.Contains(help, "[=true|false]") {
			t.Errorf("%q: a switch's help names its type:\n%s", args, help)
		}
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
			t.Errorf("%q: exit %d, want 0; stderr:\n%s", args, code, stderr.String())
		}
		if got := stdout.String(); !strings.HasPrefix(got, "pool ") || !strings.Contains(got, ", go1.") {
			t.Errorf("%q printed %q, want the version, commit and Go version", args, got)
		}
	}
}

// TestSignalDuringStartIsExit0: a signal that arrives while the pool is
// still starting (here, waiting on a forge that does not answer) stops it
// with exit 0, as a signal at any other time does, not 1.
func TestSignalDuringStartIsExit0(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	t.Chdir(t.TempDir())
	for _, k := range []string{"POOL_FORGEJO_URL", "POOL_REPO", "POOL_CONFIG", "POOL_FORGEJO_TOKEN_FILE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("POOL_FORGEJO_TOKEN", "t")
	t.Setenv("POOL_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel) // the signal
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"--forgejo-url", hang.URL, "--repo", "a/b"}, &stdout, &stderr); code != 0 {
		t.Errorf("exit %d after a signal during start, want 0; stderr:\n%s", code, stderr.String())
	}
}

// TestReapAnswersOneRequest: `pool reap` (the helper systemd starts for
// each connection on the reaper socket) needs its root, refuses a tree
// outside it with an error line and exit 1, and answers "ok" for a tree
// under it with nothing left there.
func TestReapAnswersOneRequest(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(root, "clone", "trees", "tree-1")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantCode int
		wantOut  string
	}{
		{"no root", nil, tree + "\n", 2, ""},
		{"outside its root", []string{"--under", root}, "/etc\n", 1, "error: "},
		{"a tree under its root", []string{"--under", root}, tree + "\n", 0, "ok\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := reapTree(context.Background(), tt.args, strings.NewReader(tt.stdin), &stdout, &stderr)
			if code != tt.wantCode || !strings.HasPrefix(stdout.String(), tt.wantOut) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and stdout starting %q", code, stdout.String(), stderr.String(), tt.wantCode, tt.wantOut)
			}
		})
	}
}
