package configs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/viper"
)

func TestOpsSettings(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		listen string
		key    string // the failing key, "" for none
	}{
		{"off by default", nil, "", ""},
		{"a bare port binds loopback", []string{"--ops-listen", "9090"}, "127.0.0.1:9090", ""},
		{"a port alone binds loopback", []string{"--ops-listen", ":9090"}, "127.0.0.1:9090", ""},
		{"a named host is kept", []string{"--ops-listen", "0.0.0.0:9090"}, "0.0.0.0:9090", ""},
		{"no port", []string{"--ops-listen", "localhost"}, "", "ops.listen"},
		{"bad page URL", []string{"--ops-url", "pool.example.org"}, "", "ops.url"},
		{"bad log format", []string{"--log-format", "xml"}, "", "log_format"},
		{"json logs", []string{"--log-format", "JSON"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("POOL_FORGEJO_TOKEN", "tok")
			args := append([]string{"--forgejo-url", "https://forge.test", "--repo", "a/b"}, tt.args...)
			cfg, err := Load(args)
			if tt.key != "" {
				if ce, ok := err.(*Error); !ok || ce.Key != tt.key {
					t.Fatalf("Load = %v, want an error naming %s", err, tt.key)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.OpsListen != tt.listen {
				t.Errorf("ops.listen = %q, want %q", cfg.OpsListen, tt.listen)
			}
			if cfg.StatusContext != "pool" {
				t.Errorf("commit_status.context defaults to %q, want pool", cfg.StatusContext)
			}
		})
	}
}

// commentedKey is a commented-out "key: value" line of the example.
var commentedKey = regexp.MustCompile(`^(\s*)# ([a-z_]+:.*)$`)

// The example deploy/pool.yaml holds every key of the settings table, set
// or commented out, and as written it is a valid configuration.
func TestExampleConfigHasEveryKey(t *testing.T) {
	example, err := filepath.Abs(filepath.Join("..", "deploy", "pool.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, line := range strings.Split(string(b), "\n") {
		all = append(all, commentedKey.ReplaceAllString(line, "$1$2"))
	}
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(strings.NewReader(strings.Join(all, "\n"))); err != nil {
		t.Fatalf("the example with its comments opened is not YAML: %v", err)
	}
	for _, s := range settings {
		if !v.IsSet(s.key) {
			t.Errorf("deploy/pool.yaml lacks %s", s.key)
		}
	}

	clearEnv(t)
	t.Setenv("POOL_FORGEJO_TOKEN", "tok")
	cfg, err := Load([]string{"--config", example})
	if err != nil {
		t.Fatalf("the example does not load: %v", err)
	}
	if cfg.Repo() != "acme/widgets" || cfg.OpsListen != "127.0.0.1:9090" || cfg.LogFormat != "json" || cfg.IdleExit != 0 {
		t.Errorf("example loaded as %s", cfg)
	}
}
