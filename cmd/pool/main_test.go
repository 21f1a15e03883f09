package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
