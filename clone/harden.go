package clone

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Code running in a work tree (a PR's, which anyone may have written) can
// write into the bare clone it was added from. Three things keep what it
// writes there from running as the pool: every git command gets
// gitSafeArgs, which name no hooks directory and no file system monitor,
// whatever the clone's config says; git gets gitEnv, so nothing of the
// pool's environment (a token, a GIT_DIR) reaches git or anything it runs;
// and before each use the pool empties the clone's hooks directory and keeps
// only the config keys a clone needs (scrub).

// gitSafeArgs come before every git command's own arguments. Command-line
// settings outrank the repository's config. core.symlinks=false checks a
// PR's symbolic link out as a plain file holding the link's text: a link
// to a file outside the tree (a token) would be followed by whatever reads
// the tree, the agent server's read tool included.
var gitSafeArgs = []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.symlinks=false"}

// passedEnv are the only variables of the pool's environment git gets.
var passedEnv = []string{"PATH", "HOME", "LANG"}

// gitEnv is git's whole environment: passedEnv from the pool's, and what the
// pool sets on purpose: no prompt for credentials, no system or global
// config (files a process of another identity might write).
func gitEnv() []string {
	env := []string{"GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	for _, k := range passedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// scrub empties the clone's hooks directory (but for git's own samples)
// and puts back the config the pool wrote if it was changed, since some
// keys git honours run commands (core.fsmonitor, core.sshCommand, filter
// drivers, include.path). It returns what it removed or replaced. Callers
// hold mu, or own c alone.
func (c *Clone) scrub() ([]string, error) {
	removed, err := c.scrubHooks()
	if err != nil {
		return removed, err
	}
	path := filepath.Join(c.repoDir(), "config")
	if got, err := os.ReadFile(path); err == nil && bytes.Equal(got, c.config) {
		return removed, nil
	}
	if err := writeFile(path, c.config); err != nil {
		return removed, fmt.Errorf("clone: restore config: %w", err)
	}
	return append(removed, "config"), nil
}

func (c *Clone) scrubHooks() ([]string, error) {
	dir := filepath.Join(c.repoDir(), "hooks")
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clone: check hooks: %w", err)
	}
	var removed []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".sample") && e.Type().IsRegular() {
			continue // git's own examples, never run
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return removed, fmt.Errorf("clone: remove hook %s: %w", e.Name(), err)
		}
		removed = append(removed, "hooks/"+e.Name())
	}
	return removed, nil
}

// writeFile replaces path whole with data, readable by its owner only.
func writeFile(path string, data []byte) error {
	tmp := path + ".pool-tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
