// Package bwrap runs a fixer's shell commands in a sandbox made with
// bubblewrap (Debian package bubblewrap): no network, a fixed environment,
// the work tree the only place it may write, and nothing of the machine
// but the system's programs and libraries, the tree and the clone's
// objects the tree borrows. No token file, no agent server data, no state
// of the pool's is in it. The pool probes it at start (Probe); the agent
// server of the fixers runs every command through it (pool-review called
// as fixer-sh, its shell).
package bwrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Path is where the sandbox's program is looked for: a fixed path, not the
// PATH a hostile command might have changed.
var Path = "/usr/bin/bwrap"

// systemDirs are bound read-only when they are directories, made the same
// links when they are links (a merged /usr).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcFiles are the few files of /etc programs need; /etc itself is not
// bound (a token file may live there).
var etcFiles = []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/passwd", "/etc/group",
	"/etc/nsswitch.conf", "/etc/localtime", "/etc/alternatives", "/etc/ssl/certs", "/etc/mime.types"}

// Env is the whole environment of a sandboxed command. git trusts the
// work tree (the pool's files) and reads no system or global config.
var Env = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"HOME=/tmp",
	"LANG=C.UTF-8",
	"TERM=dumb",
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_CONFIG_GLOBAL=/dev/null",
	"GIT_CONFIG_COUNT=1",
	"GIT_CONFIG_KEY_0=safe.directory",
	"GIT_CONFIG_VALUE_0=*",
}

// Identity are the variables passed into the sandbox as they are, when
// set: the git identity of a fixer's commits.
var Identity = []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"}

// Args are bubblewrap's arguments for running argv in dir, a directory in
// work tree tree, with write access to tree alone and read access to
// readOnly besides the system's files; env (KEY=VALUE) is added to Env.
func Args(tree, dir string, readOnly, env, argv []string) []string {
	args := []string{"--unshare-all", "--die-with-parent", "--new-session", "--clearenv"}
	for _, kv := range append(Env[:len(Env):len(Env)], env...) {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	for _, f := range etcFiles {
		args = append(args, "--ro-bind-try", f, f)
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
	for _, p := range readOnly {
		args = append(args, "--ro-bind", p, p)
	}
	args = append(args, "--bind", tree, tree, "--chdir", dir, "--")
	return append(args, argv...)
}

// Probe makes a sandbox as Args does, with a directory of its own as the
// tree, and runs true in it; an error says why no sandbox can be made here.
func Probe(ctx context.Context) error {
	if _, err := os.Stat(Path); err != nil {
		return fmt.Errorf("bwrap: %s: %w (install the bubblewrap package)", Path, err)
	}
	dir, err := os.MkdirTemp("", "pool-bwrap-probe-")
	if err != nil {
		return fmt.Errorf("bwrap: probe: %w", err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, Path, Args(dir, dir, nil, nil, []string{"/bin/sh", "-c", "touch probe"})...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("bwrap: probe: %w: %s", err, strings.TrimSpace(string(out)))
	}
	if _, err := os.Stat(filepath.Join(dir, "probe")); err != nil {
		return errors.New("bwrap: probe: the sandbox could not write its tree")
	}
	return nil
}

// WorkTree finds the pool's work tree dir is in, and the clone's objects
// it borrows, from the clone's layout alone (<clone>/trees/<tree>,
// <clone>/repo.git/objects): never from the tree's own files, which the
// fixer writes (its .git/objects/info/alternates could name any path).
func WorkTree(dir string) (tree, objects string, err error) {
	dir, err = filepath.EvalSymlinks(dir)
	if err != nil {
		return "", "", fmt.Errorf("bwrap: %w", err)
	}
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		parent := filepath.Dir(d)
		if filepath.Base(parent) != "trees" {
			continue
		}
		objects := filepath.Join(filepath.Dir(parent), "repo.git", "objects")
		if fi, err := os.Stat(objects); err == nil && fi.IsDir() {
			return d, objects, nil
		}
	}
	return "", "", fmt.Errorf("bwrap: %s is in no work tree of the pool's", dir)
}

// ReviewerMark is the file whose presence says the session in work tree
// tree reviews: its shell runs commands as they are, for pool-review to
// reach the forge. The pool writes it in <clone>/reviewers, a directory
// the agent server's user may pass through but not write; without it, as
// for a fixer, every command runs in the sandbox.
func ReviewerMark(tree string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(tree)), "reviewers", filepath.Base(tree))
}
