// Package clone keeps the pool's own git clone of the repository, and a work
// tree of it for every session.
//
// The clone lives in a directory the pool gives it, <state_dir>/<owner>_<name>/clone,
// which the state store's lock makes this pool's alone:
//
//	repo.git/                       a bare clone: the default branch as
//	                                refs/remotes/origin/<base>, each PR's head
//	                                as refs/remotes/origin/pr/<N>
//	trees/tree-<random>/            a work tree for one session at a time,
//	                                detached at its PR's head, kept warm for
//	                                the next session (warm.go): a repository
//	                                of its own that borrows repo.git's objects
//	                                (tree.go)
//
// go-git clones and fetches, so the token stays in the pool's memory: it is
// sent with each request and never written to the clone's config, a remote
// URL, the environment or a command line. The git CLI (a declared
// requirement) checks work trees out: local operations that need no
// credentials. Every operation has a deadline. git runs with no hooks and
// none of the pool's environment, and the pool scrubs the clone's hooks and
// config before each use (harden.go). With Options.TreeGroup, the agent
// server's user may use the work trees and read repo.git's objects, and
// nothing else of the clone (share.go).
package clone

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"pool/sessionmark"
)

// deadlines of the git operations, so a stalled git endpoint cannot hang the
// pool; tests shorten them.
var deadlines = struct {
	clone, fetch, tree time.Duration // tree: add, remove or prune work trees
}{clone: 10 * time.Minute, fetch: 2 * time.Minute, tree: 2 * time.Minute}

// Options say where the clone lives, what to clone and as whom.
type Options struct {
	Dir      string // the clone's directory; whatever is there is the pool's own
	URL      string // https URL of the repository, without credentials
	Token    string
	Branch   string // the default branch
	GitName  string
	GitEmail string
	// Instance names the pool instance in the merge train's cars it makes.
	Instance string
	Log      *slog.Logger // where a scrubbed hook or config is reported; nil: nowhere
	// TreeGroup names the OS group (a name or a number) the agent server's
	// user is in: work trees are shared with it, and the clone's objects
	// readable by it (share.go). Empty: everything is the pool's alone.
	TreeGroup string
	// Reaper is the unix socket of the helper that ends, as the agent
	// server's user, the processes a session left in a work tree
	// (leftover.go). Empty: the pool ends those it may see itself.
	Reaper string
}

// Clone is the pool's clone. Its methods are safe for concurrent use.
type Clone struct {
	Dir string
	// Reused says Open found a clone a killed pool left and kept it, with
	// its work trees until PruneTrees.
	Reused bool

	// mu serialises the git commands on repo.git and the work trees, and
	// guards the fields marked so; a fetch holds net instead.
	mu sync.Mutex
	// net serialises the use of repo, the go-git repository (fetches,
	// the objects PushFix stores), and the git commands that read
	// repo.git's refs, which a fetch rewrites in place. Taken alone or
	// with mu held, never mu while it is held: TakeTree fetches holding
	// net alone.
	net     sync.Mutex
	fetched atomic.Pointer[fetchedBase] // written under net
	repo    *git.Repository
	url     string
	auth    *githttp.BasicAuth
	branch  string
	config  []byte // the clone's config as configure wrote it
	log     *slog.Logger
	group   int       // TreeGroup's id; -1: not shared
	reaper  string    // Options.Reaper
	ident   [2]string // GitName and GitEmail, for the work trees' config
	inst    string    // Options.Instance

	// guarded by mu (warm.go)
	trees   map[string]*tree // the work trees made in this run, by directory
	retired []string         // trees removed since RetireTrees last said so
	blind   bool             // said once that the agent's processes cannot be looked into (leftover.go)
}

// Open makes the clone in opt.Dir. A clone left there by a pool that was
// killed is reused if it opens and fetches, and its work trees kept (sessions
// the relaunch adopts run in them) until PruneTrees; anything else there is
// removed and the repository cloned afresh. On error nothing is left behind.
func Open(ctx context.Context, opt Options) (*Clone, error) {
	c := &Clone{Dir: opt.Dir, url: opt.URL, branch: opt.Branch, auth: &githttp.BasicAuth{Username: "pool", Password: opt.Token}, log: opt.Log,
		ident: [2]string{opt.GitName, opt.GitEmail}, reaper: opt.Reaper, inst: opt.Instance}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if c.group, err = LookupGroup(opt.TreeGroup); err != nil {
		return nil, err
	}
	if c.reuse(ctx, opt) == nil {
		c.Reused = true
		return c, c.shareClone()
	}
	if err := c.fresh(ctx, opt); err != nil {
		os.RemoveAll(c.Dir)
		return nil, err
	}
	if err := c.shareClone(); err != nil {
		os.RemoveAll(c.Dir)
		return nil, err
	}
	return c, nil
}

func (c *Clone) repoDir() string  { return filepath.Join(c.Dir, "repo.git") }
func (c *Clone) treesDir() string { return filepath.Join(c.Dir, "trees") }

// reuse opens a clone already in the directory and brings it up to date.
func (c *Clone) reuse(ctx context.Context, opt Options) error {
	repo, err := git.PlainOpen(c.repoDir())
	if err != nil {
		return err
	}
	c.repo = repo
	if err := c.configure(opt); err != nil {
		return err
	}
	if err := os.MkdirAll(c.treesDir(), 0o700); err != nil {
		return err
	}
	return c.fetch(ctx, c.branch, 0)
}

// fresh clones into an emptied directory.
func (c *Clone) fresh(ctx context.Context, opt Options) error {
	if err := os.RemoveAll(c.Dir); err != nil {
		return fmt.Errorf("clone: remove %s: %w", c.Dir, err)
	}
	if err := os.MkdirAll(c.treesDir(), 0o700); err != nil {
		return fmt.Errorf("clone: make %s: %w", c.treesDir(), err)
	}
	cctx, cancel := context.WithTimeout(ctx, deadlines.clone)
	defer cancel()
	repo, err := git.PlainCloneContext(cctx, c.repoDir(), true, &git.CloneOptions{
		URL:           opt.URL,
		Auth:          c.auth,
		ReferenceName: plumbing.NewBranchReferenceName(opt.Branch),
		SingleBranch:  true,
		Tags:          git.NoTags,
	})
	if err != nil {
		return fmt.Errorf("clone: clone %s: %w", opt.URL, err)
	}
	c.repo = repo
	if err := c.configure(opt); err != nil {
		return err
	}
	return c.fetch(ctx, c.branch, 0)
}

// configure writes the clone's config whole: origin at opt.URL (the clone
// may be a killed pool's, made before a change of forge URL), the commit
// identity, and nothing else, whatever was there; scrub puts it back if it
// changes.
func (c *Clone) configure(opt Options) error {
	cfg := gitconfig.NewConfig()
	cfg.Core.IsBare = true
	cfg.Remotes["origin"] = &gitconfig.RemoteConfig{Name: "origin", URLs: []string{opt.URL}, Fetch: []gitconfig.RefSpec{baseSpec(c.branch)}}
	cfg.User.Name, cfg.User.Email = opt.GitName, opt.GitEmail
	data, err := cfg.Marshal()
	if err != nil {
		return fmt.Errorf("clone: write config: %w", err)
	}
	if err := writeFile(filepath.Join(c.repoDir(), "config"), data); err != nil {
		return fmt.Errorf("clone: write config: %w", err)
	}
	c.config = data
	return nil
}

// check scrubs the clone before the pool runs git on it, and says what it
// found: code in a work tree wrote it.
func (c *Clone) check() error {
	removed, err := c.scrub()
	if len(removed) > 0 {
		c.log.Warn("removed what was planted in the clone", "dir", c.repoDir(), "removed", removed)
	}
	return err
}

// FollowBranch makes branch the base the clone fetches and compares with,
// after the repository's default branch was renamed.
func (c *Clone) FollowBranch(branch string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.branch = branch
}

func baseSpec(branch string) gitconfig.RefSpec {
	return gitconfig.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/remotes/origin/%s", branch, branch))
}

// prSpec fetches a PR's head, which Forgejo and Gitea publish as
// refs/pull/<N>/head.
func prSpec(pr int) gitconfig.RefSpec {
	return gitconfig.RefSpec(fmt.Sprintf("+refs/pull/%d/head:refs/remotes/origin/pr/%d", pr, pr))
}

// fetch fetches the default branch, branch, and PR pr's head (none for
// 0) with the token, notes the branch's commit (baseHead), and lets the
// tree group read what it brought (shareObjects), under net.
func (c *Clone) fetch(ctx context.Context, branch string, pr int) error {
	c.net.Lock()
	defer c.net.Unlock()
	return c.fetchHeld(ctx, branch, pr)
}

// fetchHeld is fetch for a caller that holds net.
func (c *Clone) fetchHeld(ctx context.Context, branch string, pr int) error {
	specs := []gitconfig.RefSpec{baseSpec(branch)}
	if pr > 0 {
		specs = append(specs, prSpec(pr))
	}
	ctx, cancel := context.WithTimeout(ctx, deadlines.fetch)
	defer cancel()
	err := c.repo.FetchContext(ctx, &git.FetchOptions{RemoteURL: c.url, Auth: c.auth, RefSpecs: specs, Force: true, Tags: git.NoTags})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("clone: fetch %s: %w", specs, err)
	}
	ref, err := c.repo.Reference(plumbing.NewRemoteReferenceName("origin", branch), true)
	if err != nil {
		return fmt.Errorf("clone: fetch %s: read the branch fetched: %w", specs, err)
	}
	c.fetched.Store(&fetchedBase{branch: branch, commit: ref.Hash().String()})
	return c.shareObjects()
}

// fetchedBase is the default branch's commit as the clone last fetched it.
type fetchedBase struct{ branch, commit string }

var shaRE = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// addTree adds a work tree detached at head in a new directory, for what
// (a PR, "#3", or a spare). Callers hold mu.
func (c *Clone) addTree(ctx context.Context, what, head string) (string, error) {
	dir, err := os.MkdirTemp(c.treesDir(), "tree-") // reused for other PRs: named for none
	if err != nil {
		return "", fmt.Errorf("clone: add work tree for %s: %w", what, err)
	}
	if err := c.checkOut(ctx, dir, head); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("clone: add work tree for %s at %s: %w", what, head, err)
	}
	if err := c.ShareTree(dir); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("clone: add work tree for %s: %w", what, err)
	}
	return dir, nil
}

// OnBase fetches the default branch and PR pr's head, and reports whether
// head is already in the branch's history (a merge cut off mid-call can
// push it there and leave the PR open). commit is then the branch's oldest
// commit that holds head: the merge commit, or head itself when the branch
// was fast-forwarded to it.
func (c *Clone) OnBase(ctx context.Context, pr int, head string) (commit string, ok bool, err error) {
	if !shaRE.MatchString(head) {
		return "", false, fmt.Errorf("clone: is #%d on the base: %q is not a commit id", pr, head)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(); err != nil {
		return "", false, err
	}
	c.net.Lock() // its git commands read the base's ref
	defer c.net.Unlock()
	if err := c.fetchHeld(ctx, c.branch, pr); err != nil {
		return "", false, err
	}
	base := "refs/remotes/origin/" + c.branch
	if _, err := c.gitOut(ctx, "merge-base", "--is-ancestor", head, base); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 1 {
			return "", false, nil // not an ancestor
		}
		return "", false, fmt.Errorf("clone: is #%d on the base: %w", pr, err)
	}
	out, err := c.gitOut(ctx, "rev-list", "--ancestry-path", "--topo-order", "--reverse", head+".."+base)
	if err != nil {
		return "", false, fmt.Errorf("clone: is #%d on the base: %w", pr, err)
	}
	if first, _, _ := strings.Cut(out, "\n"); first != "" {
		return first, true, nil
	}
	return head, true, nil
}

// RemoveTree removes a work tree TakeTree made. A directory that is not one
// of the clone's work trees is left alone.
func (c *Clone) RemoveTree(ctx context.Context, dir string) error {
	if !c.Owns(dir) {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(); err != nil {
		return err
	}
	return c.removeTree(ctx, dir)
}

// Owns reports whether dir is one of the clone's work trees: a directory
// directly under its trees directory.
func (c *Clone) Owns(dir string) bool {
	return dir != "" && filepath.Dir(filepath.Clean(dir)) == c.treesDir()
}

// RecordSession writes the record of the session working in dir beside
// it (sessionmark.Path): in the trees directory, which the agent's user
// may pass through but not write, so no session can change what it may
// act on. The record goes when the tree is given back or removed.
func (c *Clone) RecordSession(dir string, r sessionmark.Record) error {
	if !c.Owns(dir) {
		return fmt.Errorf("clone: record a session: %s is not a work tree of the clone", dir)
	}
	return sessionmark.Write(dir, r)
}

// SessionRecord reads the record of the session working in dir
// (sessionmark.Read), which only the pool may write.
func (c *Clone) SessionRecord(dir string) (sessionmark.Record, error) {
	if !c.Owns(dir) {
		return sessionmark.Record{}, fmt.Errorf("clone: read a session's record: %s is not a work tree of the clone", dir)
	}
	return sessionmark.Read(dir)
}

// removeTree deletes a work tree: a repository of its own, of which
// repo.git knows nothing, and its session's record, once the processes a
// session left there are ended (endLeftovers). Callers hold mu.
func (c *Clone) removeTree(ctx context.Context, dir string) error {
	if err := c.endLeftovers(ctx, dir); err != nil {
		c.log.Warn("ending the processes left in a work tree failed; removing it all the same", "dir", dir, "err", err)
	}
	if err := sessionmark.Remove(dir); err != nil {
		return fmt.Errorf("clone: remove work tree %s: %w", dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clone: remove work tree %s: %w", dir, err)
	}
	return nil
}

// PruneTrees removes every work tree but those in keep: after a relaunch,
// the trees of sessions the killed pool left that were not adopted.
func (c *Clone) PruneTrees(ctx context.Context, keep []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(); err != nil {
		return err
	}
	entries, err := os.ReadDir(c.treesDir())
	if err != nil {
		return fmt.Errorf("clone: list work trees: %w", err)
	}
	kept := map[string]bool{}
	for _, k := range keep {
		kept[filepath.Clean(k)] = true
	}
	var errs []error
	for _, e := range entries {
		if dir := filepath.Join(c.treesDir(), e.Name()); !kept[dir] && !kept[strings.TrimSuffix(dir, ".session")] {
			errs = append(errs, c.removeTree(ctx, dir))
		}
	}
	// A clone an older pool made may record linked work trees.
	errs = append(errs, c.git(ctx, "worktree", "prune"))
	return errors.Join(errs...)
}

// git runs the git CLI in the bare repository with the tree deadline. It
// never carries the token: work tree operations are local.
func (c *Clone) git(ctx context.Context, args ...string) error {
	_, err := c.gitOut(ctx, args...)
	return err
}

// gitOut is git that returns the standard output, trimmed. Its error wraps
// git's *exec.ExitError and carries the error output.
func (c *Clone) gitOut(ctx context.Context, args ...string) (string, error) {
	return runGit(ctx, "", slices.Concat([]string{"-C", c.repoDir()}, args))
}

// gitIn runs git in work tree dir, whose admin directory is admin, never
// through the tree's .git file, and keeps no reflog (it would name the
// heads checked out before).
func (c *Clone) gitIn(ctx context.Context, dir, admin string, args ...string) (string, error) {
	where := []string{"-c", "core.logAllRefUpdates=false", "--git-dir=" + admin, "--work-tree=" + dir}
	return runGit(ctx, dir, slices.Concat(where, args))
}

// runGit runs git with args in dir ("": the pool's own), with the tree
// deadline, gitSafeArgs and gitEnv.
func runGit(ctx context.Context, dir string, args []string) (string, error) {
	return runGitEnv(ctx, dir, args, nil)
}

// runGitEnv is runGit with env added to gitEnv.
func runGitEnv(ctx context.Context, dir string, args, env []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, deadlines.tree)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", slices.Concat(gitSafeArgs, args)...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(), env...)
	cmd.WaitDelay = 5 * time.Second
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errOut.String())
		if len(msg) > 500 {
			msg = msg[:500] + "..."
		}
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(gitVerb(args), " "), err, msg)
	}
	return strings.TrimSpace(out.String()), nil
}

// gitVerb is the command and its first argument, past the options that
// say where git runs.
func gitVerb(args []string) []string {
	for len(args) > 0 && (args[0] == "-C" || args[0] == "-c" || strings.HasPrefix(args[0], "--git-dir=") || strings.HasPrefix(args[0], "--work-tree=")) {
		if (args[0] == "-C" || args[0] == "-c") && len(args) > 1 {
			args = args[1:]
		}
		args = args[1:]
	}
	return args[:min(2, len(args))]
}

// Remove deletes the clone and its work trees. It is safe to call more than
// once.
func (c *Clone) Remove() error {
	if c == nil || c.Dir == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	err := os.RemoveAll(c.Dir)
	c.Dir = ""
	return err
}
