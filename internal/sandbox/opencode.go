package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// OpencodeVersion is the agent server the tests run (1.x API; see FACTS.md,
// "The agent server").
const OpencodeVersion = "1.18.33"

// OpencodeBinary returns <CacheDir>/opencode/node_modules/.bin/opencode,
// installing opencode-ai@OpencodeVersion with npm in <CacheDir>/opencode when
// it is missing or another version. Concurrent callers wait for one install.
func OpencodeBinary(ctx context.Context, log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "opencode")
	bin := filepath.Join(dir, "node_modules", ".bin", "opencode")
	if opencodeInstalled(dir) {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("sandbox: opencode binary: %w", err)
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, "install.lock"), io.Discard)
	if err != nil {
		return "", fmt.Errorf("sandbox: opencode binary: lock: %w", err)
	}
	defer unlock()
	if opencodeInstalled(dir) { // another process installed it while we waited
		return bin, nil
	}
	if err := npmInstallOpencode(ctx, dir, log); err != nil {
		return "", fmt.Errorf("sandbox: install opencode-ai@%s: %w", OpencodeVersion, err)
	}
	return bin, nil
}

// opencodeInstalled reports whether dir holds opencode-ai at OpencodeVersion
// with its executable.
func opencodeInstalled(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", "opencode-ai", "package.json"))
	if err != nil {
		return false
	}
	var pkg struct{ Version string }
	if json.Unmarshal(b, &pkg) != nil || pkg.Version != OpencodeVersion {
		return false
	}
	fi, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "opencode"))
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o100 != 0
}

// npmInstallOpencode runs npm in dir, logging to dir/npm.log. npm skips the
// package's postinstall script here; the binary works without it.
func npmInstallOpencode(ctx context.Context, dir string, log io.Writer) error {
	start := time.Now()
	logPath := filepath.Join(dir, "npm.log")
	fmt.Fprintf(log, "sandbox: installing opencode-ai@%s into %s (npm output in %s)\n", OpencodeVersion, dir, logPath)
	out, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, "npm", "i", "--no-audit", "--no-fund", "opencode-ai@"+OpencodeVersion)
	cmd.Dir = dir
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Run(); err != nil {
		b, _ := os.ReadFile(logPath)
		return fmt.Errorf("npm i: %w: %s", err, tail(b, 2000))
	}
	if !opencodeInstalled(dir) {
		return errors.New("npm i finished but node_modules/.bin/opencode is missing")
	}
	fmt.Fprintf(log, "sandbox: opencode installed in %s\n", time.Since(start).Round(time.Second))
	return nil
}
