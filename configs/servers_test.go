package configs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// loadFile loads a config of the file text alone (and the token).
func loadFile(t *testing.T, text string, args ...string) (Config, error) {
	t.Helper()
	clearEnv(t)
	t.Setenv("POOL_FORGEJO_TOKEN", "t")
	f := filepath.Join(t.TempDir(), "pool.yaml")
	if err := os.WriteFile(f, []byte("forgejo:\n  url: https://f.test\nrepo: a/b\n"+text), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(append([]string{"--config", f}, args...))
}

func TestAgentServers(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(secret, []byte("s3cret-two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadFile(t, `agent:
  servers:
    - url: http://127.0.0.1:4096/
      password: s3cret-one
      workers: 3
      role: review
      labels: {model: qwen}
    - url: http://127.0.0.1:4097
      password_file: `+secret+`
      workers: 2
      role: FIX
    - url: http://127.0.0.1:4098
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []AgentServer{
		{URL: "http://127.0.0.1:4096", Password: "s3cret-one", Workers: 3, Role: RoleReview, Labels: map[string]string{"model": "qwen"}},
		{URL: "http://127.0.0.1:4097", Password: "s3cret-two", Workers: 2, Role: RoleFix},
		{URL: "http://127.0.0.1:4098", Workers: 1, Role: RoleBoth},
	}
	if !reflect.DeepEqual(cfg.Servers(), want) {
		t.Errorf("servers = %+v\nwant %+v", cfg.Servers(), want)
	}
	if cfg.Workers != 6 {
		t.Errorf("workers = %d, want the servers' 6", cfg.Workers)
	}
	if s := cfg.String(); strings.Contains(s, "s3cret") {
		t.Errorf("String shows a server's password: %s", s)
	}

	one, err := loadFile(t, "", "--agent-url", "http://127.0.0.1:5000", "--workers", "2")
	if err != nil {
		t.Fatal(err)
	}
	if got := one.Servers(); !reflect.DeepEqual(got, []AgentServer{{URL: "http://127.0.0.1:5000", Workers: 2, Role: RoleBoth}}) {
		t.Errorf("agent.url alone: servers = %+v, want one of both roles with the 2 workers", got)
	}
}

func TestAgentServersRefused(t *testing.T) {
	open := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(open, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, file string
		args       []string
		key, in    string
	}{
		{name: "the same url twice", file: "agent:\n  servers:\n    - {url: http://127.0.0.1:4096, workers: 2}\n    - {url: HTTP://127.0.0.1:4096/, workers: 1}\n",
			key: "agent.servers[1].url", in: "the same server as agent.servers[0]"},
		{name: "no workers", file: "agent:\n  servers:\n    - {url: http://127.0.0.1:4096, workers: 0}\n",
			key: "agent.servers[0].workers", in: "at least 1, got 0"},
		{name: "workers in words", file: "agent:\n  servers:\n    - {url: http://127.0.0.1:4096, workers: many}\n",
			key: "agent.servers[0].workers", in: "whole number"},
		{name: "an unknown role", file: "agent:\n  servers:\n    - {url: http://127.0.0.1:4096, role: reviewer}\n",
			key: "agent.servers[0].role", in: `unknown role "reviewer": review, fix or both`},
		{name: "no fix server while fixers are on", file: "agent:\n  servers:\n    - {url: http://127.0.0.1:4096, role: review}\n",
			key: "agent.servers", in: "no server of role fix or both while fixers.enabled is true"},
		{name: "no review server", file: "fixers:\n  enabled: false\nagent:\n  servers:\n    - {url: http://127.0.0.1:4096, role: fix}\n",
			key: "agent.servers", in: "no server of role review or both"},
		{name: "an unknown key", file: "agent:\n  servers:\n    - {url: http://127.0.0.1:4096, pasword: x}\n",
			key: "agent.servers[0].pasword", in: "unknown key"},
		{name: "no url", file: "agent:\n  servers:\n    - {workers: 2}\n",
			key: "agent.servers[0].url", in: "required"},
		{name: "plain http off loopback", file: "agent:\n  servers:\n    - {url: http://10.0.0.5:4096}\n",
			key: "agent.servers[0].url", in: "allow_insecure_http"},
		{name: "a password in the url", file: "agent:\n  servers:\n    - {url: http://bob:hunter2@127.0.0.1:4096}\n",
			key: "agent.servers[0].url", in: "must not carry credentials"},
		{name: "a password and its file", file: "agent:\n  servers:\n    - {url: http://127.0.0.1:4096, password: x, password_file: /nonexistent}\n",
			key: "agent.servers[0].password", in: "not both"},
		{name: "a password file others read", file: "agent:\n  servers:\n    - {url: http://127.0.0.1:4096, password_file: " + open + "}\n",
			key: "agent.servers[0].password_file", in: "chmod 600"},
		{name: "agent.url beside them", file: "agent:\n  url: http://127.0.0.1:5000\n  servers:\n    - {url: http://127.0.0.1:4096}\n",
			key: "agent.url", in: "not both"},
		{name: "workers beside them", file: "agent:\n  servers:\n    - {url: http://127.0.0.1:4096}\n", args: []string{"--workers", "8"},
			key: "workers", in: "give each server its workers"},
		{name: "not a list", file: "agent:\n  servers: http://127.0.0.1:4096\n",
			key: "agent.servers", in: "want a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadFile(t, tt.file, tt.args...)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *configs.Error", err)
			}
			if ce.Key != tt.key || !strings.Contains(err.Error(), tt.in) {
				t.Errorf("error %q, want key %q and %q", err, tt.key, tt.in)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error shows the URL's password: %q", err)
			}
		})
	}
}
