package configs

import (
	"errors"
	"os"
	"slices"
	"testing"
)

func TestSeveralRepositories(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		file    string
		repos   []string
		org     string
		max     int
		wantKey string // a refusal naming this key
	}{
		{name: "one repo, as before", args: []string{"--repo", "a/b"}, repos: []string{"a/b"}},
		{name: "--repo repeated", args: []string{"--repo", "a/b", "--repo", "a/c"}, repos: []string{"a/b", "a/c"}},
		{name: "POOL_REPO with commas", env: map[string]string{"POOL_REPO": "a/b,a/c"}, repos: []string{"a/b", "a/c"}},
		{name: "repos in the file", file: "repos: [a/b, a/c]\n", repos: []string{"a/b", "a/c"}},
		{name: "repo and repos, once each", file: "repo: a/b\nrepos: [A/B, a/c]\n", repos: []string{"a/b", "a/c"}},
		{name: "POOL_REPOS", env: map[string]string{"POOL_REPOS": "a/b,a/c"}, repos: []string{"a/b", "a/c"}},
		{name: "org alone", args: []string{"--org", "acme"}, org: "acme"},
		{name: "org and a repo of another owner", args: []string{"--org", "acme", "--repo", "x/y"}, org: "acme", repos: []string{"x/y"}},
		{name: "max per repo", args: []string{"--repo", "a/b", "--repo", "a/c", "--max-per-repo", "2"}, repos: []string{"a/b", "a/c"}, max: 2},
		{name: "nothing to serve", wantKey: "repo"},
		{name: "a bad one among several", args: []string{"--repo", "a/b", "--repo", "a/x..y"}, wantKey: "repo"},
		{name: "bad org", args: []string{"--org", "-acme"}, wantKey: "org"},
		{name: "negative max per repo", args: []string{"--repo", "a/b", "--max-per-repo", "-1"}, wantKey: "max_per_repo"},
		{name: "status page with several", args: []string{"--repo", "a/b", "--repo", "a/c", "--ops-listen", "9090"}, repos: []string{"a/b", "a/c"}},
		{name: "unknown key in the file", file: "repositories: [a/b]\n", wantKey: "repositories"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("POOL_FORGEJO_TOKEN", "t")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			args := append([]string{"--forgejo-url", "https://f.test"}, tt.args...)
			if tt.file != "" {
				if err := os.WriteFile("pool.yaml", []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := Load(args)
			if tt.wantKey != "" {
				var ce *Error
				if !errors.As(err, &ce) || ce.Key != tt.wantKey {
					t.Fatalf("Load = %v, want a refusal naming %s", err, tt.wantKey)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !slices.Equal(cfg.Repos, tt.repos) || cfg.Org != tt.org || cfg.MaxPerRepo != tt.max {
				t.Errorf("repos %v org %q max %d; want %v %q %d", cfg.Repos, cfg.Org, cfg.MaxPerRepo, tt.repos, tt.org, tt.max)
			}
			if len(tt.repos) > 0 && cfg.Repo() != tt.repos[0] {
				t.Errorf("Repo() = %q, want the first, %q", cfg.Repo(), tt.repos[0])
			}
			if want := len(tt.repos) > 1 || tt.org != ""; cfg.Several() != want {
				t.Errorf("Several() = %v, want %v", cfg.Several(), want)
			}
		})
	}
}

func TestForOneRepository(t *testing.T) {
	cfg := Config{Owner: "a", Name: "b", Repos: []string{"a/b", "c/d"}, Org: "acme", Workers: 3}
	one := cfg.For("c/d")
	if one.Repo() != "c/d" || one.Several() || one.Workers != 3 || !slices.Equal(one.Repos, []string{"c/d"}) {
		t.Errorf("For(c/d) = %+v", one)
	}
}
