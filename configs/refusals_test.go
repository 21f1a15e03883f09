package configs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestRefusals checks that each refused value stops Load with one line that
// names the key and never shows a URL's user info.
func TestRefusals(t *testing.T) {
	base := func(extra ...string) []string {
		return append([]string{"--forgejo-url", "https://f.test", "--repo", "a/b"}, extra...)
	}
	tests := []struct {
		name    string
		args    []string
		file    string
		wantKey string
		wantIn  string
	}{
		{name: "tree group that does not exist", args: base("--agent-tree-group", "no-such-group-of-pool"), wantKey: "agent.tree_group", wantIn: "names no group"},
		{name: "poll interval below 1s", args: base("--poll-interval", "999ms"), wantKey: "poll_interval", wantIn: "at least 1s"},
		{name: "poll interval of 1ns", args: base("--poll-interval", "1ns"), wantKey: "poll_interval", wantIn: "at least 1s"},
		{name: "status interval below 100ms", args: base("--status-interval", "99ms"), wantKey: "status_interval", wantIn: "at least 100ms"},
		{name: "owner ..", args: []string{"--forgejo-url", "https://f.test", "--repo", "../b"}, wantKey: "repo", wantIn: `owner ".."`},
		{name: "owner with a space", args: []string{"--forgejo-url", "https://f.test", "--repo", "a b/c"}, wantKey: "repo"},
		{name: "owner ending in a dot", args: []string{"--forgejo-url", "https://f.test", "--repo", "alice./c"}, wantKey: "repo", wantIn: "at the end"},
		{name: "owner with two dashes", args: []string{"--forgejo-url", "https://f.test", "--repo", "al--ice/c"}, wantKey: "repo", wantIn: "in a row"},
		{name: "owner starting with a dash", args: []string{"--forgejo-url", "https://f.test", "--repo", "-alice/c"}, wantKey: "repo"},
		{name: "owner too long", args: []string{"--forgejo-url", "https://f.test", "--repo", strings.Repeat("a", 41) + "/c"}, wantKey: "repo", wantIn: "longer than 40"},
		{name: "repo ..", args: []string{"--forgejo-url", "https://f.test", "--repo", "a/.."}, wantKey: "repo"},
		{name: "repo .", args: []string{"--forgejo-url", "https://f.test", "--repo", "a/."}, wantKey: "repo", wantIn: "reserved"},
		{name: "repo with ..", args: []string{"--forgejo-url", "https://f.test", "--repo", "a/x..y"}, wantKey: "repo"},
		{name: "repo ending .git", args: []string{"--forgejo-url", "https://f.test", "--repo", "a/widgets.GIT"}, wantKey: "repo", wantIn: ".git"},
		{name: "repo with a query", args: []string{"--forgejo-url", "https://f.test", "--repo", "a/b?x=1"}, wantKey: "repo"},
		{name: "repo with percent", args: []string{"--forgejo-url", "https://f.test", "--repo", "a/b%2f"}, wantKey: "repo"},
		{name: "forge URL with a password", args: []string{"--forgejo-url", "https://bob:hunter2@f.test", "--repo", "a/b"}, wantKey: "forgejo.url"},
		{name: "unparsable forge URL with a password", args: []string{"--forgejo-url", "ftp://bob:hunter2@f.test", "--repo", "a/b"}, wantKey: "forgejo.url"},
		{name: "agent URL with a password", args: base("--agent-url", "http://bob:hunter2@localhost:4096"), wantKey: "agent.url"},
		{name: "hook URL with a password", args: base("--hook-url", "gopher://bob:hunter2@h.test/x"), wantKey: "webhook.url"},
		{name: "plain http forge", args: []string{"--forgejo-url", "http://forge.example.org", "--repo", "a/b"}, wantKey: "forgejo.url", wantIn: "allow_insecure_http"},
		{name: "plain http agent", args: base("--agent-url", "http://10.0.0.5:4096"), wantKey: "agent.url", wantIn: "allow_insecure_http"},
		{name: "max body in words", args: base("--max-body", "big"), wantKey: "limits.max_body"},
		{name: "max body too small", args: base("--max-body", "1KiB"), wantKey: "limits.max_body", wantIn: "between 64 KiB and 1 GiB"},
		{name: "max body too large", args: base("--max-body", "2GiB"), wantKey: "limits.max_body"},
		{name: "unknown key in the file", args: base(), file: "forgejo:\n  tokn: x\n", wantKey: "forgejo.tokn", wantIn: "unknown key"},
		{name: "unknown top-level key", args: base(), file: "worker: 3\n", wantKey: "worker", wantIn: "unknown key"},
		{name: "empty key in the file", args: base(), file: "\"\": 1\n", wantKey: `""`, wantIn: "unknown key"},
		{name: "key with a newline in the file", args: base(), file: "\"a\\nb\": 1\n", wantKey: `"a\nb"`, wantIn: "unknown key"},
		{name: "scalar where a section belongs", args: base(), file: "forgejo: 3\n", wantKey: "forgejo", wantIn: "unknown key"},
		{name: "file line with a password", args: base(), file: "forgejo:\n  url: [https://bob:hunter2@f.test\n", wantKey: "config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("POOL_FORGEJO_TOKEN", "t")
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
			msg := err.Error()
			if ce.Key != tt.wantKey || !strings.HasPrefix(msg, "config: "+tt.wantKey+": ") {
				t.Errorf("error %q does not name the key %q first", msg, tt.wantKey)
			}
			if !strings.Contains(msg, tt.wantIn) {
				t.Errorf("error %q lacks %q", msg, tt.wantIn)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			if strings.Contains(msg, "hunter2") || strings.Contains(msg, "bob") {
				t.Errorf("error shows the URL's user info: %q", msg)
			}
		})
	}
}

func TestAccepted(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(Config) bool
	}{
		{"floors exactly", []string{"--poll-interval", "1s", "--status-interval", "100ms"},
			func(c Config) bool { return c.PollInterval == time.Second && c.StatusInterval == 100*time.Millisecond }},
		{"names the forge allows", []string{"--repo", "Go_lang-2.x/my.repo_name-1"},
			func(c Config) bool { return slices.Contains(c.Repos, "Go_lang-2.x/my.repo_name-1") }},
		{"http to loopback", []string{"--forgejo-url", "http://127.0.0.1:3000", "--agent-url", "http://[::1]:4096"},
			func(c Config) bool { return c.ForgejoURL == "http://127.0.0.1:3000" }},
		{"http to localhost", []string{"--forgejo-url", "http://localhost:3000"},
			func(c Config) bool { return true }},
		{"http allowed by the switch", []string{"--forgejo-url", "http://forge.lan", "--agent-url", "http://agent.lan:4096", "--allow-insecure-http"},
			func(c Config) bool { return c.AllowInsecureHTTP }},
		{"max body in MiB", []string{"--max-body", "4MiB"},
			func(c Config) bool { return c.MaxBody == 4<<20 }},
		{"max body in bytes", []string{"--max-body", "100000"},
			func(c Config) bool { return c.MaxBody == 100000 }},
		{"default max body", nil,
			func(c Config) bool { return c.MaxBody == 16<<20 && !c.AllowInsecureHTTP }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("POOL_FORGEJO_TOKEN", "t")
			args := append([]string{"--forgejo-url", "https://f.test", "--repo", "a/b"}, tt.args...)
			cfg, err := Load(args)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !tt.check(cfg) {
				t.Errorf("unexpected config: %+v", cfg)
			}
		})
	}
}

func TestFileIsReported(t *testing.T) {
	clearEnv(t) // also moves into an empty temporary directory
	t.Setenv("POOL_FORGEJO_TOKEN", "t")
	cfg, err := Load([]string{"--forgejo-url", "https://f.test", "--repo", "a/b"})
	if err != nil || cfg.File != "" {
		t.Fatalf("without a file: File = %q, %v", cfg.File, err)
	}
	yaml := "repo: a/b\nforgejo:\n  url: https://f.test\nlimits:\n  max_body: 1MiB\nallow_insecure_http: true\n"
	if err := os.WriteFile("pool.yaml", []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.File != "pool.yaml" || cfg.MaxBody != 1<<20 || !cfg.AllowInsecureHTTP {
		t.Errorf("./pool.yaml: File = %q, MaxBody = %d, AllowInsecureHTTP = %v", cfg.File, cfg.MaxBody, cfg.AllowInsecureHTTP)
	}
}

func TestDefaultIsTheTable(t *testing.T) {
	clearEnv(t)
	d := Default()
	if d.Workers != 4 || d.PollInterval != 30*time.Second || d.StatusInterval != 10*time.Second ||
		d.ClaimTTL != 30*time.Minute || d.IdleExit != 50 || d.AgentName != "ca-pr-self-reviewer" ||
		d.MaxBody != 16<<20 || d.MergeStyle != "merge" || d.MergeUpdate != "when_required" || d.UpdateStyle != "merge" || d.MergeTrain != "off" || d.TrainSize != 8 || d.StateDir == "" || d.AgentURL != "http://localhost:4096" {
		t.Errorf("Default() = %+v", d)
	}
	// Load with only the required settings gives the same values.
	t.Setenv("POOL_FORGEJO_TOKEN", "t")
	cfg, err := Load([]string{"--forgejo-url", "https://f.test", "--repo", "a/b"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.ForgejoURL, cfg.Owner, cfg.Name, cfg.Token, cfg.Repos = "", "", "", "", nil
	if cfg.String() != d.String() {
		t.Errorf("Load's defaults differ from Default():\n%s\n%s", cfg, d)
	}
}

func TestParseSize(t *testing.T) {
	good := map[string]int64{"16MiB": 16 << 20, "16 MiB": 16 << 20, "512kib": 512 << 10, "1GiB": 1 << 30, "70000": 70000, "70000B": 70000}
	for in, want := range good {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1MiB", "1.5MiB", "16MB", "99999999999GiB"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
	for _, n := range []int64{16 << 20, 1 << 30, 100000, 3 << 10} {
		if got, err := parseSize(sizeText(n)); err != nil || got != n {
			t.Errorf("sizeText(%d) = %q reads back as %d, %v", n, sizeText(n), got, err)
		}
	}
}

func TestForgeFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantKey string
	}{
		{name: "all set", args: []string{"--forgejo-url", "https://f.test"}, env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}},
		{name: "from the environment", env: map[string]string{"POOL_FORGEJO_URL": "http://127.0.0.1:3000", "POOL_FORGEJO_TOKEN": "t", "POOL_MAX_BODY": "1MiB"}},
		{name: "no url", env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "forgejo.url"},
		{name: "no token", args: []string{"--forgejo-url", "https://f.test"}, wantKey: "forgejo.token"},
		{name: "plain http", args: []string{"--forgejo-url", "http://forge.example.org"}, env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "forgejo.url"},
		{name: "plain http allowed", args: []string{"--forgejo-url", "http://forge.example.org", "--allow-insecure-http"}, env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}},
		{name: "bad max body", args: []string{"--forgejo-url", "https://f.test", "--max-body", "1"}, env: map[string]string{"POOL_FORGEJO_TOKEN": "t"}, wantKey: "limits.max_body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			fs := pflag.NewFlagSet("report", pflag.ContinueOnError)
			resolve := ForgeFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := resolve()
			var ce *Error
			switch {
			case tt.wantKey == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tt.wantKey != "" && (!errors.As(err, &ce) || ce.Key != tt.wantKey):
				t.Fatalf("err = %v, want key %s", err, tt.wantKey)
			case tt.wantKey == "" && (cfg.ForgejoURL == "" || cfg.Token != "t" || cfg.MaxBody < minMaxBody):
				t.Errorf("cfg = %+v", cfg)
			}
		})
	}
}

func TestEmptySectionIsNotAnUnknownKey(t *testing.T) {
	clearEnv(t)
	t.Setenv("POOL_FORGEJO_TOKEN", "t")
	f := filepath.Join(t.TempDir(), "pool.yaml")
	body := "forgejo:\n  url: https://f.test\nrepo: a/b\nclaims:\n  # trusted: other\ngit:\n"
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load([]string{"--config", f}); err != nil {
		t.Errorf("sections with every key commented out: %v", err)
	}
}
