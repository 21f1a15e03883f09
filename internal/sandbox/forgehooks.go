package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The test forge's pre- and post-receive hooks. Gitea writes each as a
// script that starts its 150 MB binary (`gitea hook`), about 0.3 s of CPU
// before the hook does anything: in TestSixPRsTwoWorkers alone
// (2026-12-03, process accounting) 8.4 of the forge's 20 CPU-seconds. The sandbox rewrites them (trimHooks) to
// answer an internal push in the shell and to hand every other push to
// forgehook (internal/sandbox/forgehook), a small client of the same
// internal hook API that gitea's hook command calls: the forge's server
// still decides every push. Where forgehook cannot be built, the scripts
// stay gitea's, with the shell's answer to internal pushes before them.

// useForgeHook builds forgehook into the forge's directory and writes its
// config; on success trimHooks points the hooks at it.
func (f *Forge) useForgeHook(ctx context.Context, internalToken string) error {
	bin := filepath.Join(f.Dir, "forgehook")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "pool/internal/sandbox/forgehook")
	cmd.Dir = moduleRoot()
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build forgehook: %w: %s", err, tail(b, 2000))
	}
	config, err := json.Marshal(map[string]string{"url": f.URL + "/", "token": internalToken})
	if err != nil {
		return err
	}
	path := filepath.Join(f.Dir, "forgehook.json")
	if err := os.WriteFile(path, config, 0o600); err != nil {
		return fmt.Errorf("write the forgehook config: %w", err)
	}
	f.hookBin, f.hookConfig = bin, path
	return nil
}

// internalPushAnswers is, by hook, what gitea's hook command does for an
// internal push (GITEA_INTERNAL_PUSH, which Gitea sets only where it pushes
// a PR's refs/pull/N/head), as a shell command (Gitea 1.26, cmd/hook.go).
var internalPushAnswers = map[string]string{
	"pre-receive":  "exit 0",
	"post-receive": "exec git update-server-info",
}

// internalPushTest is the shell line that answers an internal push:
// GITEA_INTERNAL_PUSH true as Go's strconv.ParseBool reads it.
func internalPushTest(answer string) string {
	return `case "$GITEA_INTERNAL_PUSH" in 1|t|T|true|TRUE|True) ` + answer + ";; esac\n"
}

// writeHook makes the gitea script of hook in hooks (hooks/<hook>.d/gitea)
// the forge's hook for the sandbox.
func (f *Forge) writeHook(hooks, hook string) error {
	path := filepath.Join(hooks, hook+".d", "gitea")
	answer := internalPushAnswers[hook]
	if f.hookBin == "" {
		return answerInternalPushes(path, answer)
	}
	script := "#!/usr/bin/env bash\n# written by the pool sandbox: the forge's " + hook + " hook, run by internal/sandbox/forgehook\n" +
		internalPushTest(answer) +
		"exec " + shellQuote(f.hookBin) + " -config " + shellQuote(f.hookConfig) + " " + hook + "\n"
	return os.WriteFile(path, []byte(script), 0o755)
}

// answerInternalPushes puts the internal push's answer before the gitea
// command of the hook script at path, after the script's opening comment
// lines.
func answerInternalPushes(path, answer string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.SplitAfter(string(b), "\n")
	i := 0
	for i < len(lines) && strings.HasPrefix(lines[i], "#") {
		i++
	}
	if i == 0 || i == len(lines) || !strings.Contains(lines[i], " hook ") {
		return fmt.Errorf("not the script gitea writes: %q", b)
	}
	script := strings.Join(lines[:i], "") + internalPushTest(answer) + strings.Join(lines[i:], "")
	return os.WriteFile(path, []byte(script), 0o755)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
