// Package reviewtool is the reviewer agent's narrow way to its work tree
// and the forge. The shipped reviewer has no shell: the agent server starts
// `pool-review mcp` (Serve) in each work tree with a fixed argument vector,
// and the reviewer's only tools are that server's: read the PR, its diff,
// the head's files, search them, and file one verdict with line comments on
// the session's head. They take named arguments, never a command line, and
// read no setting from the environment. It pushes nothing: a fixer commits
// in its work tree, and the pool pushes its commits with a token the agent
// side never sees (clone.PushFix).
//
// It acts only for the session working in its directory: the pool records,
// beside each session's work tree, the repository, PR, full head id, base
// and session the session was started for (package sessionmark). Any other
// target is refused, a verdict must name that head in full, and every
// review body ends with the session's mark, by which the pool tells its
// sessions' reviews from any other review of the reviewer's account. The
// token never appears in what it answers or prints.
//
// The command form (Main: pool-review pr|review|line|comment), kept for an
// operator, reads the forge's URL and the token file's path from its
// environment (POOL_REVIEW_FORGE_URL, POOL_REVIEW_TOKEN_FILE). Linked as
// git, the same binary is the git guard (GitGuard); as fixer-sh, the
// fixers' sandboxed shell (Shell).
package reviewtool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"pool/forge"
	"pool/forgejo"
	"pool/internal/loopback"
	"pool/internal/redact"
	"pool/sessionmark"
)

// The environment the tool reads.
const (
	EnvForgeURL  = "POOL_REVIEW_FORGE_URL"
	EnvTokenFile = "POOL_REVIEW_TOKEN_FILE"
)

// Signature ends everything the tool posts; it is the pool's own
// (texts.Signature), which a test keeps equal.
const Signature = "\n\n---\n**Automated by CleverAgents Bot**\nSupervisor: PR Review | Agent: ca-continuous-pr-reviewer"

// ReviewerScopes are the token scopes the tool needs on Forgejo and Gitea:
// reviews are repository writes, PR comments issue writes.
var ReviewerScopes = []string{"write:repository", "write:issue"}

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the forge or git refused, or could not be reached
	exitUsage = 2 // bad arguments or environment, or a target not the session's
)

// Bounds on what goes in and out: a body the agent writes, and the forge
// text the tool prints (written by anyone with an account: data).
const (
	maxBody      = 32 << 10
	maxShownText = 4 << 10
	maxReviews   = 50
	maxComments  = 20
	maxTokenFile = 4 << 10
)

const usage = `usage: pool-review COMMAND OWNER/REPO#N [flags]

Commands:
  pr       OWNER/REPO#N                  the PR: title, author, head, base, state, reviews (JSON)
  review   OWNER/REPO#N --commit SHA --verdict approve|request-changes|comment --body TEXT
                        [--comment PATH:LINE:TEXT]...
                                         submit a review on the PR's head commit
  line     OWNER/REPO#N --commit SHA --path PATH --line N --body TEXT
                                         comment on one line of the head (a commenting review)
  comment  OWNER/REPO#N --body TEXT      post a comment on the PR

Every body is signed. Bodies come from --body only: the tool reads no file and no standard input.
The tool acts only on the PR of the session whose work tree it runs in (the record the pool
wrote beside the tree), and a verdict names that session's head, in full.
Environment: POOL_REVIEW_FORGE_URL (the forge), POOL_REVIEW_TOKEN_FILE (the reviewer's token).
`

// Main runs one command with args (without the program name); getenv reads
// the environment. It returns the exit code.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, args := args[0], args[1:]
	run, ok := commands[cmd]
	if !ok {
		fmt.Fprintf(stderr, "pool-review: unknown command %q\n%s", cmd, usage)
		return exitUsage
	}
	t, err := newTool(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "pool-review: %v\n", err)
		return exitUsage
	}
	stdout, stderr = t.scrub(stdout), t.scrub(stderr)
	return run(ctx, t, args, stdout, stderr)
}

var commands = map[string]func(context.Context, *tool, []string, io.Writer, io.Writer) int{
	"pr":      runPR,
	"review":  runReview,
	"line":    runLine,
	"comment": runComment,
}

// tool is one run's connection to the forge, for one session.
type tool struct {
	url     string
	token   string
	forge   *forgejo.Client
	dir     string             // the working directory: the session's work tree
	session sessionmark.Record // what the session may act on
}

func newTool(getenv func(string) string) (*tool, error) {
	dir, rec, err := ownSession()
	if err != nil {
		return nil, err
	}
	forge := strings.TrimRight(getenv(EnvForgeURL), "/")
	if err := checkForgeURL(EnvForgeURL, forge); err != nil {
		return nil, err
	}
	token, err := readToken(getenv(EnvTokenFile))
	if err != nil {
		return nil, err
	}
	return &tool{url: forge, token: token, dir: dir, session: rec}, nil
}

// checkForgeURL wants https, or http to this machine: the token travels
// in every request. name says where the URL came from.
func checkForgeURL(name, s string) error {
	if s == "" {
		return fmt.Errorf("%s is not set: it names the forge", name)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fmt.Errorf("%s: want an http(s) URL without credentials, got %q", name, redact.URL(s))
	}
	if u.Scheme == "http" && !loopback.Host(u.Hostname()) {
		return fmt.Errorf("%s: %s is plain http to another machine; the token would travel in clear: use https", name, redact.URL(s))
	}
	return nil
}

// readToken reads the reviewer's token: the file's first line. A file that
// every user may read is refused.
func readToken(path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("%s is not set: it names the file with the reviewer's token", EnvTokenFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	if fi.Mode().Perm()&0o004 != 0 {
		return "", fmt.Errorf("token file %s is readable by every user: chmod o-r it", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile))
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	token, _, _ := strings.Cut(string(b), "\n")
	token = strings.TrimSpace(token)
	if token == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	return token, nil
}

// connect reaches the forge on first use.
func (t *tool) connect(ctx context.Context) (*forgejo.Client, error) {
	if t.forge != nil {
		return t.forge, nil
	}
	c, err := forgejo.New(ctx, t.url, t.token, forgejo.Options{})
	if err != nil {
		return nil, err
	}
	t.forge = c
	return c, nil
}

// scrub wraps w so that the token never reaches it, whatever prints.
func (t *tool) scrub(w io.Writer) io.Writer {
	return &scrubber{w: w, secret: []byte(t.token)}
}

type scrubber struct {
	w      io.Writer
	secret []byte
}

// Write blanks the secret. The tool writes whole lines or documents at
// once, so a secret is never split across two writes.
func (s *scrubber) Write(p []byte) (int, error) {
	if len(s.secret) > 0 && bytes.Contains(p, s.secret) {
		if _, err := s.w.Write(bytes.ReplaceAll(p, s.secret, []byte("[token]"))); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return s.w.Write(p)
}

// flags is a flag set for one command, with the target as its one argument.
func flags(name string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("pool-review "+name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	return fs
}

// ownSession reads the record of the session working in the current
// directory: without one, the tool acts for nobody.
func ownSession() (string, sessionmark.Record, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", sessionmark.Record{}, fmt.Errorf("read the working directory: %w", err)
	}
	rec, err := sessionmark.Read(dir)
	if errors.Is(err, sessionmark.ErrNoRecord) {
		return "", rec, fmt.Errorf("%s is not the work tree of a session the pool started (no record at %s): "+
			"pool-review acts only for such a session, on its own PR", dir, sessionmark.Path(dir))
	}
	return dir, rec, err
}

// parse parses args and reads the one target, OWNER/REPO#N (or OWNER/REPO
// N), which must be the session's own PR.
func (t *tool) parse(fs *pflag.FlagSet, args []string, stderr io.Writer) (forge.Target, bool) {
	target, ok := parse(fs, args, stderr)
	if !ok {
		return target, false
	}
	own := fmt.Sprintf("%s#%d", t.session.Repo, t.session.PR)
	if !strings.EqualFold(target.Owner+"/"+target.Repo, t.session.Repo) || target.Number != t.session.PR {
		fmt.Fprintf(stderr, "%s: refused: this session may act only on %s, the PR it was started for, not on %s\n", fs.Name(), own, target)
		return target, false
	}
	return target, true
}

// parse parses args and reads the one target, OWNER/REPO#N (or OWNER/REPO N).
func parse(fs *pflag.FlagSet, args []string, stderr io.Writer) (forge.Target, bool) {
	if err := fs.Parse(args); err != nil {
		return forge.Target{}, false
	}
	rest := fs.Args()
	if len(rest) == 2 && !strings.Contains(rest[0], "#") {
		rest = []string{rest[0] + "#" + strings.TrimPrefix(rest[1], "#")}
	}
	if len(rest) != 1 {
		fmt.Fprintf(stderr, "%s: want one OWNER/REPO#N, got %q\n", fs.Name(), rest)
		return forge.Target{}, false
	}
	t, err := forge.ParseTarget(rest[0])
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return forge.Target{}, false
	}
	return t, true
}

func fail(stderr io.Writer, op string, err error) int {
	fmt.Fprintf(stderr, "pool-review: %s: %v\n", op, err)
	return exitFail
}

func usageErr(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "pool-review %s: %v\n", name, err)
	return exitUsage
}

func writeJSON(w io.Writer, v any) int {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return exitFail
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return exitFail
	}
	return exitOK
}
