package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const secret = "s3cret-token-value"

// versionOnlyForge answers the version probe and 404 to everything else.
func versionOnlyForge(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/version" {
			_, _ = w.Write([]byte(`{"version":"1.26.0"}`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"not found"}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// closedPort is a loopback URL nobody listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr
}

func TestReportAndTickExitCodes(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	forge := versionOnlyForge(t)
	conn := []string{"--forgejo-url", forge, "--forgejo-token-file", tokenFile}
	tests := []struct {
		name string
		main func(context.Context, []string, *bytes.Buffer, *bytes.Buffer) int
		args []string
		env  map[string]string
		want int
	}{
		{"help", mainReport, []string{"--help"}, nil, 0},
		{"no target", mainReport, conn, nil, 2},
		{"two targets", mainReport, append([]string{"a/b#1", "a/b#2"}, conn...), nil, 2},
		{"bad target", mainTick, append([]string{"a/b"}, conn...), nil, 2},
		{"unknown flag", mainReport, append([]string{"a/b#1", "--frobnicate"}, conn...), nil, 2},
		{"no url", mainReport, []string{"a/b#1", "--forgejo-token-file", tokenFile}, nil, 2},
		{"no token", mainTick, []string{"a/b#1", "--forgejo-url", forge}, nil, 2},
		{"token twice", mainTick, append([]string{"a/b#1"}, conn...), map[string]string{"POOL_FORGEJO_TOKEN": secret}, 2},
		{"bad cap", mainReport, append([]string{"a/b#1", "--wait", "--cap", "0s"}, conn...), nil, 2},
		{"bad auto-merge env", mainTick, append([]string{"a/b#1"}, conn...), map[string]string{"POOL_TICK_AUTO_MERGE": "maybe"}, 2},
		{"PR not found", mainReport, append([]string{"a/b#1"}, conn...), nil, 1},
		{"PR not found, tick", mainTick, append([]string{"a/b#1"}, conn...), nil, 1},
		{"PR not found, waiting", mainReport, append([]string{"a/b#1", "--wait"}, conn...), nil, 1},
		{"forge unreachable", mainReport, []string{"a/b#1", "--forgejo-url", closedPort(t)}, map[string]string{"POOL_FORGEJO_TOKEN": secret}, 1},
		{"settings from the environment", mainTick, []string{"a/b#1"},
			map[string]string{"POOL_FORGEJO_URL": forge, "POOL_FORGEJO_TOKEN_FILE": tokenFile}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"POOL_FORGEJO_URL", "POOL_FORGEJO_TOKEN", "POOL_FORGEJO_TOKEN_FILE", "POOL_TICK_AUTO_MERGE"} {
				t.Setenv(k, tt.env[k])
				if tt.env[k] == "" {
					os.Unsetenv(k)
				}
			}
			var stdout, stderr bytes.Buffer
			if got := tt.main(context.Background(), tt.args, &stdout, &stderr); got != tt.want {
				t.Errorf("exit %d, want %d; stderr:\n%s", got, tt.want, stderr.String())
			}
			if strings.Contains(stdout.String()+stderr.String(), secret) {
				t.Errorf("the token was printed:\n%s%s", stdout.String(), stderr.String())
			}
		})
	}
}

func mainReport(ctx context.Context, args []string, stdout, stderr *bytes.Buffer) int {
	return run(ctx, append([]string{"report"}, args...), stdout, stderr)
}

func mainTick(ctx context.Context, args []string, stdout, stderr *bytes.Buffer) int {
	return run(ctx, append([]string{"tick"}, args...), stdout, stderr)
}
