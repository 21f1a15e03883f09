package configs

import (
	"bytes"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/viper"
)

// secretMark is the token in the seed files.
const secretMark = "tok-S3CRET-mark"

// FuzzLoad loads arbitrary config files (YAML, JSON or TOML by extension)
// with no environment and only --config. Seeds are in testdata/fuzz/FuzzLoad.
func FuzzLoad(f *testing.F) {
	for _, s := range settings {
		for _, e := range s.env {
			f.Setenv(e, "")
			os.Unsetenv(e)
		}
	}
	f.Setenv("POOL_CONFIG", "")
	os.Unsetenv("POOL_CONFIG")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content []byte, ext uint8) {
		file := filepath.Join(dir, "pool."+[]string{"yaml", "json", "toml", "yml"}[ext%4])
		if err := os.WriteFile(file, content, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load([]string{"--config", file})
		again, errAgain := Load([]string{"--config", file})
		if !reflect.DeepEqual(cfg, again) || errText(err) != errText(errAgain) {
			t.Fatalf("two loads of the same file differ: %v / %v", err, errAgain)
		}
		if err != nil {
			checkRefusal(t, err, tokenIn(file, content))
			return
		}
		checkLoaded(t, cfg)
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// tokenIn returns the file's forge token when it is long enough to be told
// apart and written once in the file, so that any echo of it comes from the
// token setting; "" otherwise. A file that does not parse counts the seeds'
// token: a parse error quotes no value at all.
func tokenIn(file string, content []byte) string {
	v := viper.New()
	v.SetConfigFile(file)
	token := secretMark
	if v.ReadInConfig() == nil {
		token = v.GetString("forgejo.token")
	}
	if len(token) < 8 || bytes.Count(content, []byte(token)) != 1 {
		return ""
	}
	return token
}

// checkRefusal: a refusal is one line naming its key, and never the token.
func checkRefusal(t *testing.T, err error, token string) {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) || ce.Key == "" || !IsConfigError(err) {
		t.Fatalf("refusal %v (%T) is not a configs.Error naming a key", err, err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "config: "+ce.Key+": ") {
		t.Fatalf("refusal is not one line naming its key: %q", msg)
	}
	if token != "" && strings.Contains(err.Error(), token) {
		t.Fatalf("refusal shows the token %q: %v", token, err)
	}
}

// checkLoaded: what loads is valid, and its String hides the secrets.
func checkLoaded(t *testing.T, cfg Config) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Load accepted a config that does not validate: %v", err)
	}
	if cfg.Workers < 1 || cfg.PollInterval <= 0 || cfg.StatusInterval <= 0 || cfg.ClaimTTL <= 0 ||
		cfg.SessionTimeout <= 0 || cfg.ShutdownTimeout <= 0 || cfg.IdleExit < 0 || cfg.DiagnosticEvery < 1 {
		t.Fatalf("Load accepted out-of-range numbers: %s", cfg)
	}
	if cfg.Owner == "" || cfg.Name == "" || strings.Contains(cfg.Name, "/") {
		t.Fatalf("Load accepted repo %q/%q", cfg.Owner, cfg.Name)
	}
	if cfg.Token == "" || strings.ContainsAny(cfg.Token, " \t\r\n") {
		t.Fatalf("Load accepted token %q", cfg.Token)
	}
	for _, s := range []string{cfg.ForgejoURL, cfg.AgentURL} {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			t.Fatalf("Load accepted URL %q", s)
		}
	}
	for _, secret := range []string{cfg.Token, cfg.AgentPassword, cfg.WebhookSecret} {
		if secret != "" && strings.Contains(cfg.String(), secret) && !strings.Contains(withoutSecrets(cfg).String(), secret) {
			t.Fatalf("Config.String shows a secret: %s", cfg)
		}
	}
}

func withoutSecrets(c Config) Config {
	c.Token, c.AgentPassword, c.WebhookSecret = "", "", ""
	return c
}
