package reviewtool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// The tool server reads the session's tree through git, as the objects of
// the session's head: never the files of the tree, never a path outside
// it, never a setting of its environment. git runs at a fixed path, with a
// fixed environment (no system or global config, literal pathspecs), and
// with command-line settings that outrank the tree's own config: no hooks,
// no file system monitor, no pager, no external diff, no text conversion.

// DefaultGit is the git the tool server runs unless --git names another.
const DefaultGit = "/usr/bin/git"

// gitEnv is git's whole environment.
var gitEnv = []string{
	"PATH=/usr/bin:/bin",
	"HOME=/nonexistent",
	"LANG=C.UTF-8",
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_CONFIG_GLOBAL=/dev/null",
	"GIT_TERMINAL_PROMPT=0",
	"GIT_LITERAL_PATHSPECS=1",
	"GIT_NO_REPLACE_OBJECTS=1",
	"GIT_OPTIONAL_LOCKS=0",
	"GIT_PAGER=cat",
}

// gitSettings come before every command's own arguments. safe.directory:
// the tree is the pool's, shared with the agent's user by group.
var gitSettings = []string{
	"-c", "safe.directory=*",
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.pager=cat",
	"-c", "core.attributesFile=/dev/null",
	"-c", "diff.external=",
	"-c", "color.ui=false",
}

// gitTimeout bounds one git command.
const gitTimeout = time.Minute

// git runs git in the work tree dir with args and returns at most max
// bytes of its output, and whether there was more.
func (s *Server) git(ctx context.Context, dir string, max int, args ...string) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	full := append([]string{"--git-dir=" + filepath.Join(dir, ".git"), "--work-tree=" + dir}, gitSettings...)
	cmd := exec.CommandContext(ctx, s.gitPath, append(full, args...)...)
	cmd.Dir = dir
	cmd.Env = gitEnv
	out := &capped{max: max}
	errOut := &capped{max: 2 << 10}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errOut.buf.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, false, fmt.Errorf("git %s: %s", args[0], msg)
	}
	return out.buf.Bytes(), out.over, nil
}

// capped keeps the first max bytes written to it and counts the rest.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.over = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}

// treePath checks a path the agent names: relative to the tree's top, and
// in it. "" and "." are the whole tree.
func treePath(p string) (string, error) {
	if p == "" || p == "." {
		return "", nil
	}
	if strings.ContainsRune(p, 0) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.Contains(p, "\\") {
		return "", fmt.Errorf("path %q: give a path relative to the top of the work tree", p)
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("path %q leads out of the work tree", p)
	}
	if clean == ".git" || strings.HasPrefix(clean, ".git/") {
		return "", fmt.Errorf("path %q: the .git directory is not the PR's", p)
	}
	return clean, nil
}

// baseRef is the base branch the pool put in the tree (clone.makeGitDir):
// the record's base under refs/remotes/origin, or, for a record that names
// none, the one ref there.
func (s *Server) baseRef(ctx context.Context, dir, base string) (string, error) {
	if base != "" {
		return "refs/remotes/origin/" + base, nil
	}
	out, _, err := s.git(ctx, dir, 4<<10, "for-each-ref", "--format=%(refname)", "refs/remotes/origin/")
	if err != nil {
		return "", err
	}
	refs := strings.Fields(string(out))
	if len(refs) != 1 {
		return "", errors.New("the work tree does not hold exactly one base branch")
	}
	return refs[0], nil
}
