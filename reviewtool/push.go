package reviewtool

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"pool/internal/redact"
)

// pushTimeout bounds one push.
const pushTimeout = 2 * time.Minute

// runPush pushes the work tree's HEAD to the PR's branch, as a fast-forward
// only, in the repository the PR's head lives in. The token reaches git
// through its environment (GIT_CONFIG_*), never a URL, a config file or the
// command line.
func runPush(ctx context.Context, t *tool, args []string, stdout, stderr io.Writer) int {
	fs := flags("push", stderr)
	target, ok := parse(fs, args, stderr)
	if !ok {
		return exitUsage
	}
	c, err := t.connect(ctx)
	if err != nil {
		return fail(stderr, "push", err)
	}
	pr, err := c.PR(ctx, target.Owner, target.Repo, target.Number)
	if err != nil {
		return fail(stderr, "push", err)
	}
	if pr.State != "open" || pr.Merged {
		return fail(stderr, "push", fmt.Errorf("%s is %s: nothing to fix", target, prState(pr)))
	}
	repo := pr.HeadRepo
	if repo == "" {
		repo = target.Owner + "/" + target.Repo
	}
	if !branchRE.MatchString(pr.HeadRef) || strings.Contains(pr.HeadRef, "..") {
		return fail(stderr, "push", fmt.Errorf("%s's branch name is not one to push to", target))
	}
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	// No hook runs: code in the work tree may have planted one, and the
	// push's environment holds the token.
	cmd := exec.CommandContext(ctx, "git", slices.Concat([]string{"-c", "core.hooksPath=/dev/null"}, safeHere(),
		[]string{"push", "--porcelain", t.url + "/" + repo + ".git", "HEAD:refs/heads/" + pr.HeadRef})...)
	cmd.Env = gitEnv(os.Environ(), t.pushToken)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	output := redact.Clip(strings.TrimSpace(out.String()), maxShownText)
	if err != nil {
		return fail(stderr, "push to "+repo+" "+pr.HeadRef, fmt.Errorf("%v: %s", err, output))
	}
	return writeJSON(stdout, map[string]any{"pushed": "HEAD", "repo": repo, "branch": pr.HeadRef, "git": output})
}

// safeHere tells git to trust the repository in the working directory
// though another user owns it: the agent server may run as a user of its
// own, in a work tree the pool made and shared with its group (README,
// "Shared with the agent server's user"). The environment cannot say so:
// gitEnv drops every GIT_CONFIG_* setting.
func safeHere() []string {
	wd, err := os.Getwd()
	if err == nil {
		wd, err = filepath.EvalSymlinks(wd)
	}
	if err != nil {
		return nil
	}
	return []string{"-c", "safe.directory=" + wd}
}

var branchRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$`)

// gitEnv is env without anything that makes git trace its requests (their
// headers hold the token) or ask for credentials, and with the token as an
// extra HTTP header.
func gitEnv(env []string, token string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GIT_TRACE") || name == "GIT_CURL_VERBOSE" || strings.HasPrefix(name, "GIT_CONFIG") ||
			name == "GIT_ASKPASS" || name == "SSH_ASKPASS" {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=Authorization: token "+token)
}
