package configs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clearEnv unsets every POOL_* variable for the test.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, s := range settings {
		for _, e := range s.env {
			t.Setenv(e, "")
			os.Unsetenv(e)
		}
	}
	t.Setenv("POOL_CONFIG", "")
	os.Unsetenv("POOL_CONFIG")
	t.Chdir(t.TempDir())
}

func TestLoadDefaultsAndPrecedence(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "pool.yaml")
	yaml := "forgejo:\n  url: https://forge.test/\nrepo: acme/widgets\nworkers: 3\npoll_interval: 5s\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("POOL_FORGEJO_TOKEN", "secret-token")
	t.Setenv("POOL_WORKERS", "6")

	cfg, err := Load([]string{"--config", file, "--workers", "2"})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.Workers != 2 {
		t.Errorf("workers = %d, want the flag's 2", cfg.Workers)
	}
	if cfg.PollInterval != 5*time.Second {
		t.Errorf("poll_interval = %s, want the file's 5s", cfg.PollInterval)
	}
	if cfg.ForgejoURL != "https://forge.test" || cfg.Owner != "acme" || cfg.Name != "widgets" {
		t.Errorf("forge/repo = %q %q %q", cfg.ForgejoURL, cfg.Owner, cfg.Name)
	}
	if cfg.ClaimTTL != 30*time.Minute || cfg.IdleExit != 50 || cfg.SkipLabel != "needs feedback" || cfg.AgentName != "ca-pr-self-reviewer" {
		t.Errorf("defaults not applied: %+v", cfg)
	}
	if strings.Contains(cfg.String(), "secret-token") {
		t.Errorf("String() leaks the token: %s", cfg)
	}
}

// TestLoadTrainSettings: the names poolbench drives the pool with:
// merge.train and merge.train_size from the file, the environment
// overriding the file.
func TestLoadTrainSettings(t *testing.T) {
	clearEnv(t)
	file := filepath.Join(t.TempDir(), "pool.yaml")
	yaml := "forgejo:\n  url: https://forge.test/\nrepo: acme/widgets\nmerge:\n  train: always\n  train_size: 3\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("POOL_FORGEJO_TOKEN", "t")
	cfg, err := Load([]string{"--config", file})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.MergeTrain != "always" || cfg.TrainSize != 3 {
		t.Errorf("train = %q size %d, want the file's always, 3", cfg.MergeTrain, cfg.TrainSize)
	}
	t.Setenv("POOL_MERGE_TRAIN", "Auto")
	t.Setenv("POOL_MERGE_TRAIN_SIZE", "20")
	if cfg, err = Load([]string{"--config", file}); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.MergeTrain != "auto" || cfg.TrainSize != 20 {
		t.Errorf("train = %q size %d, want the environment's auto, 20", cfg.MergeTrain, cfg.TrainSize)
	}
}

func TestLoadWorkersFallsBackToCAVariable(t *testing.T) {
	clearEnv(t)
	t.Setenv("POOL_FORGEJO_URL", "https://forge.test")
	t.Setenv("POOL_REPO", "a/b")
	t.Setenv("POOL_FORGEJO_TOKEN", "t")
	t.Setenv("CA_MAX_PARALLEL_WORKERS", "7")
	cfg, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Workers != 7 {
		t.Errorf("workers = %d, want 7 from CA_MAX_PARALLEL_WORKERS", cfg.Workers)
	}
}

func TestSwitchesNeedNoValue(t *testing.T) {
	clearEnv(t)
	t.Setenv("POOL_FORGEJO_TOKEN", "t")
	cfg, err := Load([]string{"--forgejo-url", "https://f.test", "--repo", "a/b", "--abort-on-exit", "--workers", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.AbortOnExit || cfg.Workers != 3 {
		t.Errorf("switches not set: %+v", cfg)
	}
	cfg, err = Load([]string{"--forgejo-url", "https://f.test", "--repo", "a/b", "--abort-on-exit=false"})
	if err != nil || cfg.AbortOnExit {
		t.Errorf("--abort-on-exit=false gave %v, %v", cfg.AbortOnExit, err)
	}
}

// TestTrustSettings: the forge's scheduled merge is refused, and
// allow_unofficial widens only a list of reviewers.
func TestTrustSettings(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantKey string
	}{
		{"auto-merge is refused", []string{"--auto-merge"}, "merge.auto"},
		{"allow_unofficial needs reviewers", []string{"--allow-unofficial-reviewers"}, "reviewers.allow_unofficial"},
		{"a negative grace", []string{"--checks-grace", "-1s"}, "checks_grace"},
		{"allow_unofficial with reviewers", []string{"--allow-unofficial-reviewers", "--reviewers", "bot"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("POOL_FORGEJO_TOKEN", "t")
			cfg, err := Load(append([]string{"--forgejo-url", "https://f.test", "--repo", "a/b"}, tt.args...))
			var ce *Error
			switch {
			case tt.wantKey == "" && err != nil:
				t.Fatalf("Load: %v", err)
			case tt.wantKey == "":
				if !cfg.AllowUnofficial || cfg.ChecksGrace != 2*time.Minute {
					t.Errorf("settings not read: %+v", cfg)
				}
			case !errors.As(err, &ce) || ce.Key != tt.wantKey:
				t.Errorf("err = %v, want a config error naming %s", err, tt.wantKey)
			}
		})
	}
}

func TestLoadTokenFile(t *testing.T) {
	clearEnv(t)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("abc123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load([]string{"--forgejo-url", "https://f.test", "--repo", "a/b", "--forgejo-token-file", file})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Token != "abc123" {
		t.Errorf("token = %q", cfg.Token)
	}
	// A file every user may read is refused: the agent server's user, which
	// runs what strangers wrote, is one of them.
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load([]string{"--forgejo-url", "https://f.test", "--repo", "a/b", "--forgejo-token-file", file})
	var ce *Error
	if !errors.As(err, &ce) || ce.Key != "forgejo.token_file" || !strings.Contains(ce.Reason, "readable by every user") {
		t.Errorf("a token file readable by every user: %v, want a config error on forgejo.token_file", err)
	}
	// A file its group may read is refused too: the agent server's user
	// may be in the pool's group or the work trees' group.
	for _, mode := range []os.FileMode{0o640, 0o660, 0o620} {
		if err := os.Chmod(file, mode); err != nil {
			t.Fatal(err)
		}
		_, err = Load([]string{"--forgejo-url", "https://f.test", "--repo", "a/b", "--forgejo-token-file", file})
		if !errors.As(err, &ce) || ce.Key != "forgejo.token_file" || !strings.Contains(ce.Reason, file) || !strings.Contains(ce.Reason, "chmod 600") {
			t.Errorf("a token file of mode %o: %v, want a config error on forgejo.token_file naming the file and chmod 600", mode, err)
		}
	}
}

func TestLoadErrorsNameTheKey(t *testing.T) {
	base := []string{"--forgejo-url", "https://f.test", "--repo", "a/b"}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		file    string
		wantKey string
	}{
		{name: "missing url", args: []string{"--repo", "a/b"}, env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "forgejo.url"},
		{name: "missing token", args: base, wantKey: "forgejo.token"},
		{name: "bad repo", args: []string{"--forgejo-url", "https://f.test", "--repo", "nope"}, env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "repo"},
		{name: "zero workers", args: append(base, "--workers", "0"), env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "workers"},
		{name: "words for workers", args: append(base, "--workers", "four"), env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "workers"},
		{name: "bad duration", args: append(base, "--poll-interval", "soon"), env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "poll_interval"},
		{name: "url with credentials", args: []string{"--forgejo-url", "http://u:p@f.test", "--repo", "a/b"}, env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "forgejo.url"},
		{name: "token file missing", args: append(base, "--forgejo-token-file", "/nonexistent/token"), wantKey: "forgejo.token_file"},
		{name: "unknown flag", args: append(base, "--bogus"), wantKey: "flags"},
		{name: "malformed file", args: base, file: "forgejo: [unclosed\n", env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "config"},
		{name: "listen without secret", args: append(base, "--listen", "127.0.0.1:0"), env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "webhook.secret"},
		{name: "public forge polled too often", args: []string{"--forgejo-url", "https://codeberg.org", "--repo", "a/b", "--poll-interval", "5s"}, env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "poll_interval"},
		{name: "token twice", args: base, env: map[string]string{"POOL_FORGEJO_TOKEN": "t", "POOL_FORGEJO_TOKEN_FILE": "/etc/hostname"}, wantKey: "forgejo.token"},
		{name: "bad merge style", args: append(base, "--merge-style", "octopus"), env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "merge.style"},
		{name: "bad update mode", args: append(base, "--merge-update", "sometimes"), env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "merge.update"},
		{name: "no sessions per PR", args: append(base, "--reviews-per-pr", "0"), env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "reviews.budget.per_pr"},
		{name: "words for the author budget", args: base, file: "reviews:\n  budget:\n    per_author: lots\n", env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "reviews.budget.per_author"},
		{name: "bad review authors", args: append(base, "--review-authors", "friends"), env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "reviews.authors"},
		{name: "allow label is the skip label", args: append(base, "--review-allow-label", "Needs Feedback"), env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "reviews.allow_label"},
		{name: "empty allow label", args: base, env: map[string]string{"POOL_FORGEJO_TOKEN": "t", "POOL_REVIEWS_ALLOW_LABEL": " "}, wantKey: "reviews.allow_label"},
		{name: "bad update style", args: append(base, "--merge-update-style", "squash"), env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "merge.update_style"},
		{name: "bad train mode", args: append(base, "--merge-train", "sometimes"), env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "merge.train"},
		{name: "no cars", args: base, env: map[string]string{"POOL_FORGEJO_TOKEN": "t", "POOL_MERGE_TRAIN_SIZE": "0"}, wantKey: "merge.train_size"},
		{name: "a train too long", args: base, file: "merge:\n  train_size: 51\n", env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "merge.train_size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			args := tt.args
			if tt.file != "" {
				f := filepath.Join(t.TempDir(), "pool.yaml")
				if err := os.WriteFile(f, []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--config", f)
			}
			_, err := Load(args)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *configs.Error", err)
			}
			if ce.Key != tt.wantKey {
				t.Errorf("key = %q (%v), want %q", ce.Key, err, tt.wantKey)
			}
			if !IsConfigError(err) {
				t.Errorf("IsConfigError(%v) = false", err)
			}
		})
	}
}

// TestReviewersInAFile: the reviewers section, or the accounts alone as a
// plain list.
func TestReviewersInAFile(t *testing.T) {
	tests := []struct {
		body      string
		want      []string
		unofficed bool
	}{
		{"reviewers:\n  accounts: [a, b]\n  allow_unofficial: true\n", []string{"a", "b"}, true},
		{"reviewers: [a, b]\n", []string{"a", "b"}, false},
		{"reviewers: \"a, b\"\n", []string{"a", "b"}, false},
		{"", nil, false},
	}
	for _, tt := range tests {
		clearEnv(t)
		t.Setenv("POOL_FORGEJO_TOKEN", "t")
		f := filepath.Join(t.TempDir(), "pool.yaml")
		if err := os.WriteFile(f, []byte("forgejo: {url: https://f.test}\nrepo: a/b\n"+tt.body), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load([]string{"--config", f})
		if err != nil {
			t.Errorf("%q: %v", tt.body, err)
			continue
		}
		if strings.Join(cfg.Reviewers, ",") != strings.Join(tt.want, ",") || cfg.AllowUnofficial != tt.unofficed {
			t.Errorf("%q: reviewers %v allow_unofficial %v", tt.body, cfg.Reviewers, cfg.AllowUnofficial)
		}
	}
}

// TestIsolationSettings: the agent server's password rule, the fixers'
// switches and their defaults, read from flags and the environment; a
// value that is not a bool names its key.
func TestIsolationSettings(t *testing.T) {
	base := []string{"--forgejo-url", "https://f.test", "--repo", "a/b"}
	clearEnv(t)
	t.Setenv("POOL_FORGEJO_TOKEN", "t")
	cfg, err := Load(base)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AgentAllowNoPassword || !cfg.Fixers.Enabled || cfg.Fixers.Forks {
		t.Errorf("defaults: allow_no_password %v, fixers %+v; want false, enabled, no forks", cfg.AgentAllowNoPassword, cfg.Fixers)
	}
	if !cfg.AgentOnLoopback() {
		t.Errorf("the default agent URL %s is not on loopback", cfg.AgentURL)
	}
	cfg, err = Load(append(base, "--agent-allow-no-password", "--fixers=false", "--fixers-forks", "--agent-url", "https://agents.example:4096"))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.AgentAllowNoPassword || cfg.Fixers.Enabled || !cfg.Fixers.Forks || cfg.AgentOnLoopback() {
		t.Errorf("flags not read: allow_no_password %v, fixers %+v, loopback %v", cfg.AgentAllowNoPassword, cfg.Fixers, cfg.AgentOnLoopback())
	}
	for key, env := range map[string]string{"agent.allow_no_password": "POOL_AGENT_ALLOW_NO_PASSWORD", "fixers.enabled": "POOL_FIXERS_ENABLED"} {
		t.Setenv(env, "maybe")
		_, err := Load(base)
		var ce *Error
		if !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("%s=maybe: %v, want a config error naming %s", env, err, key)
		}
		t.Setenv(env, "")
	}
}
