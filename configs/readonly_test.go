package configs

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spf13/pflag"
)

// TestReadOnlyCommandsJudgeByThePoolsFile: `pool report` and `pool tick`
// given the supervisor's config file (by --config, POOL_CONFIG, or
// ./pool.yaml where they run) judge by the very policy the supervisor
// decides by: its skip label, its update setting and its reviewers.
func TestReadOnlyCommandsJudgeByThePoolsFile(t *testing.T) {
	yaml := "repo: acme/widgets\nskip_label: hold for humans\n" +
		"merge:\n  update: always\nreviewers:\n  accounts: review-bot\n  allow_unofficial: true\nchecks_grace: 7m\n"
	tests := []struct {
		name string
		args func(file string) []string
		env  func(t *testing.T, file string)
	}{
		{"--config", func(file string) []string { return []string{"--config", file} }, func(*testing.T, string) {}},
		{"POOL_CONFIG", func(string) []string { return nil }, func(t *testing.T, file string) { t.Setenv("POOL_CONFIG", file) }},
		{"./pool.yaml", func(string) []string { return nil }, func(t *testing.T, file string) { t.Chdir(filepath.Dir(file)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("POOL_FORGEJO_TOKEN", "t")
			t.Setenv("POOL_FORGEJO_URL", "https://forge.test")
			file := filepath.Join(t.TempDir(), "pool.yaml")
			if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			supervisor, err := Load([]string{"--config", file})
			if err != nil {
				t.Fatal(err)
			}
			tt.env(t, file)
			fs := pflag.NewFlagSet("report", pflag.ContinueOnError)
			resolve := ForgeFlags(fs)
			if err := fs.Parse(tt.args(file)); err != nil {
				t.Fatalf("pool report %q: %v", tt.args(file), err)
			}
			cfg, err := resolve()
			if err != nil {
				t.Fatal(err)
			}
			if got, want := cfg.Policy(), supervisor.Policy(); !reflect.DeepEqual(got, want) {
				t.Errorf("pool report judges by\n%+v\nthe supervisor decides by\n%+v", got, want)
			}
		})
	}
}
