package clone

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"pool/internal/bwrap"

	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// A fixer session commits in its work tree; the pool, not the agent,
// publishes the commits. It reads them from the tree's .git with go-git
// (no git of the tree's runs: no config, hook, filter or attribute of it
// is read), checks them, copies them into the clone and pushes them from
// there with the fixer account's token, which the agent side never sees.
//
// The checks: the tree's HEAD is a line of commits, each with one parent,
// on top of the head the session was given (no merge, no rewrite, nothing
// of another branch); no new object (commit, tree or blob: messages, names
// and contents) holds a secret the pool knows; and the new objects are
// bounded in number and size. Each object read from the tree is checked
// against its name, so the clone stores only what the names say, and the
// tree's alternates are not followed: what the clone does not have must be
// in the tree's own store. The push is a fast-forward of the PR's own head
// branch, leased on the head the session was given.

// Limits on what a fix may add.
const (
	maxFixCommits = 50
	maxFixObjects = 20000
	maxFixBytes   = 64 << 20 // all new objects together
)

// Fix is what a fixer session may publish.
type Fix struct {
	PR     int
	Head   string // the PR's head the session was given: the lease
	URL    string // the head repository's URL, without credentials
	Branch string // the PR's head branch there
	Token  string // the account that pushes
	// Secrets are values no new object may hold (the tokens).
	Secrets []string
}

// RefusedError says why a fix was not pushed: what the session left is
// not one to publish. It names no secret.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "clone: fix refused: " + e.Reason }

func refuse(format string, a ...any) error { return &RefusedError{Reason: fmt.Sprintf(format, a...)} }

var (
	fullSHA  = regexp.MustCompile(`^[0-9a-f]{40}$`)
	branchRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$`)
)

// PushFix publishes the commits the fixer session in work tree dir added
// on top of f.Head, to f.Branch of f.URL. It returns the new head, or ""
// when the session added nothing. A *RefusedError says the commits were
// not fit to publish; nothing was pushed.
func (c *Clone) PushFix(ctx context.Context, dir string, f Fix) (string, error) {
	if !c.Owns(dir) {
		return "", fmt.Errorf("clone: push the fix of #%d: %s is not a work tree of the clone", f.PR, dir)
	}
	if !fullSHA.MatchString(f.Head) || !branchRE.MatchString(f.Branch) || strings.Contains(f.Branch, "..") {
		return "", fmt.Errorf("clone: push the fix of #%d: head %q or branch %q is not one to push to", f.PR, f.Head, f.Branch)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.check(); err != nil {
		return "", err
	}
	fix, err := c.storeFix(dir, f)
	if err != nil || fix.head == f.Head {
		return "", err
	}
	ref := "refs/heads/" + f.Branch
	_, err = runGitEnv(ctx, "", []string{"-C", c.repoDir(), "push", "--porcelain", "--no-verify",
		"--force-with-lease=" + ref + ":" + f.Head, f.URL, fix.head + ":" + ref}, tokenEnv(f.Token))
	if err != nil {
		return "", fmt.Errorf("clone: push the fix of #%d to %s: %w", f.PR, f.Branch, err)
	}
	return fix.head, nil
}

// storeFix reads the commits the session in dir added on top of f.Head
// and stores their objects in repo, under net (a fetch may run).
func (c *Clone) storeFix(dir string, f Fix) (fix, error) {
	c.net.Lock()
	defer c.net.Unlock()
	read, err := readFix(filepath.Join(dir, ".git"), c.repo.Storer, f)
	if err != nil || read.head == f.Head {
		return read, err
	}
	for _, o := range read.objects {
		if _, err := c.repo.Storer.SetEncodedObject(o); err != nil {
			return read, fmt.Errorf("clone: push the fix of #%d: store its objects: %w", f.PR, err)
		}
	}
	return read, c.shareObjects()
}

// tokenEnv hands git the token as an HTTP header through its environment,
// which only the pool's user can read: never a URL, a config file or the
// command line.
func tokenEnv(token string) []string {
	return []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=Authorization: token " + token}
}

// MarkReviewer records whether the session given work tree dir reviews
// (its shell, fixer-sh, runs commands as they are) or not (a fixer: its
// shell runs every command in the sandbox, package bwrap). The marks live
// in <clone>/reviewers, which the tree group may pass through and nothing
// more; a tree without a mark is sandboxed.
func (c *Clone) MarkReviewer(dir string, reviewer bool) error {
	if !c.Owns(dir) {
		return fmt.Errorf("clone: mark %s: not a work tree of the clone", dir)
	}
	mark := bwrap.ReviewerMark(dir)
	if !reviewer {
		if err := os.Remove(mark); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("clone: mark %s a fixer's: %w", dir, err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(mark), 0o700); err != nil {
		return fmt.Errorf("clone: mark %s a reviewer's: %w", dir, err)
	}
	if err := AllowTraverse(c.group, filepath.Dir(mark)); err != nil {
		return err
	}
	if err := os.WriteFile(mark, nil, 0o600); err != nil {
		return fmt.Errorf("clone: mark %s a reviewer's: %w", dir, err)
	}
	return nil
}

// fix is what readFix found: the new head and the objects it adds.
type fix struct {
	head    string
	objects []plumbing.EncodedObject
}

// readFix reads the commits the work tree's git directory gitDir has on
// top of f.Head, and checks them. known is the clone's store: an object
// found there is not new.
func readFix(gitDir string, known storer.EncodedObjectStorer, f Fix) (out fix, err error) {
	defer func() {
		if r := recover(); r != nil { // a crafted pack or index
			out, err = fix{}, refuse("reading the work tree's git objects failed")
		}
	}()
	if fi, err := os.Lstat(gitDir); err != nil || !fi.IsDir() {
		return fix{}, refuse("the work tree has no .git directory")
	}
	// Bound to the directory: a link in it resolves inside it. The
	// alternates (the clone's objects) are not followed: known is read
	// directly, from the pool's own store.
	tree := filesystem.NewStorageWithOptions(osfs.New(gitDir, osfs.WithBoundOS()), cache.NewObjectLRUDefault(),
		filesystem.Options{AlternatesFS: memfs.New()})
	head, err := treeHead(tree)
	if err != nil {
		return fix{}, err
	}
	if head == f.Head {
		return fix{head: head}, nil
	}
	r := &fixReader{tree: tree, known: known, secrets: f.Secrets, seen: map[plumbing.Hash]plumbing.EncodedObject{}}
	chain, err := r.chain(plumbing.NewHash(head), plumbing.NewHash(f.Head))
	if err != nil {
		return fix{}, err
	}
	for _, c := range chain {
		if err := r.commit(c); err != nil {
			return fix{}, err
		}
	}
	return fix{head: head, objects: r.objects}, nil
}

// treeHead reads the commit the tree's HEAD names, directly or through one
// branch.
func treeHead(tree *filesystem.Storage) (string, error) {
	ref, err := tree.Reference(plumbing.HEAD)
	if err == nil && ref.Type() == plumbing.SymbolicReference {
		ref, err = tree.Reference(ref.Target())
	}
	if err != nil || ref.Type() != plumbing.HashReference {
		return "", refuse("the work tree's HEAD names no commit")
	}
	return ref.Hash().String(), nil
}

// fixReader reads and checks a fix's objects.
type fixReader struct {
	tree    storer.EncodedObjectStorer
	known   storer.EncodedObjectStorer
	secrets []string
	seen    map[plumbing.Hash]plumbing.EncodedObject
	objects []plumbing.EncodedObject // new, checked, in the order read
	bytes   int64
}

// chain walks from head to base through single parents, and returns the
// new commits, oldest first.
func (r *fixReader) chain(head, base plumbing.Hash) ([]*object.Commit, error) {
	var out []*object.Commit
	for h := head; h != base; {
		if len(out) == maxFixCommits {
			return nil, refuse("more than %d commits on top of the PR's head, or not on top of it", maxFixCommits)
		}
		if r.isKnown(h) {
			return nil, refuse("the work tree's HEAD is not on top of the PR's head %s", base)
		}
		c, err := r.readCommit(h)
		if err != nil {
			return nil, err
		}
		if len(c.ParentHashes) != 1 {
			return nil, refuse("commit %s has %d parents: a fix adds commits with one parent each", h, len(c.ParentHashes))
		}
		out = append(out, c)
		h = c.ParentHashes[0]
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

func (r *fixReader) isKnown(h plumbing.Hash) bool {
	return r.known.HasEncodedObject(h) == nil
}

func (r *fixReader) readCommit(h plumbing.Hash) (*object.Commit, error) {
	o, err := r.read(h, plumbing.CommitObject)
	if err != nil {
		return nil, err
	}
	c, err := object.DecodeCommit(r.tree, o)
	if err != nil {
		return nil, refuse("commit %s does not decode", h)
	}
	return c, nil
}

// commit reads what c adds: its tree's objects the parent's does not have.
func (r *fixReader) commit(c *object.Commit) error {
	parent, err := r.treeOf(c.ParentHashes[0])
	if err != nil {
		return err
	}
	return r.newTree(c.TreeHash, parent)
}

// treeOf is the tree hash of a commit, known or new.
func (r *fixReader) treeOf(h plumbing.Hash) (plumbing.Hash, error) {
	if c, err := object.GetCommit(r.known, h); err == nil {
		return c.TreeHash, nil
	}
	c, err := r.readCommit(h)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return c.TreeHash, nil
}

// newTree reads tree h and the entries of it that old (a tree hash, or
// zero) does not have, recursively.
func (r *fixReader) newTree(h, old plumbing.Hash) error {
	if h == old || r.isKnown(h) {
		return nil
	}
	o, err := r.read(h, plumbing.TreeObject)
	if err != nil {
		return err
	}
	t, err := object.DecodeTree(r.tree, o)
	if err != nil {
		return refuse("tree %s does not decode", h)
	}
	before := map[string]plumbing.Hash{}
	for _, e := range r.entries(old) {
		before[e.Name] = e.Hash
	}
	for _, e := range t.Entries {
		switch {
		case before[e.Name] == e.Hash, e.Mode == filemode.Submodule:
		case e.Mode == filemode.Dir:
			if err := r.newTree(e.Hash, before[e.Name]); err != nil {
				return err
			}
		default:
			if !r.isKnown(e.Hash) {
				if _, err := r.read(e.Hash, plumbing.BlobObject); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// entries are the entries of tree h, known or new; none for a zero hash
// or a blob (a file the fix made a directory).
func (r *fixReader) entries(h plumbing.Hash) []object.TreeEntry {
	if h.IsZero() {
		return nil
	}
	if t, err := object.GetTree(r.known, h); err == nil {
		return t.Entries
	}
	if o, ok := r.seen[h]; ok && o.Type() == plumbing.TreeObject {
		if t, err := object.DecodeTree(r.tree, o); err == nil {
			return t.Entries
		}
	}
	return nil
}

// read reads object h of type want from the tree's store, checks its size,
// its name and that it holds no secret, and keeps it.
func (r *fixReader) read(h plumbing.Hash, want plumbing.ObjectType) (plumbing.EncodedObject, error) {
	if o, ok := r.seen[h]; ok {
		if o.Type() != want {
			return nil, refuse("object %s is not a %s", h, want)
		}
		return o, nil
	}
	if len(r.objects) == maxFixObjects {
		return nil, refuse("more than %d new objects", maxFixObjects)
	}
	o, err := r.tree.EncodedObject(want, h)
	if err != nil {
		return nil, refuse("%s %s is missing from the work tree", want, h)
	}
	if o.Size() < 0 || r.bytes+o.Size() > maxFixBytes {
		return nil, refuse("the new objects exceed %d bytes", maxFixBytes)
	}
	rd, err := o.Reader()
	if err != nil {
		return nil, refuse("%s %s cannot be read", want, h)
	}
	defer rd.Close()
	content, err := io.ReadAll(io.LimitReader(rd, o.Size()+1))
	if err != nil || int64(len(content)) != o.Size() {
		return nil, refuse("%s %s cannot be read", want, h)
	}
	if plumbing.ComputeHash(want, content) != h {
		return nil, refuse("%s %s does not hold what its name says", want, h)
	}
	for _, s := range r.secrets {
		if s != "" && bytes.Contains(content, []byte(s)) {
			return nil, refuse("%s %s holds a credential", want, h)
		}
	}
	r.bytes += o.Size()
	m := &plumbing.MemoryObject{}
	m.SetType(want)
	if _, err := m.Write(content); err != nil {
		return nil, err
	}
	r.seen[h] = m
	r.objects = append(r.objects, m)
	return m, nil
}

// IsRefused reports whether err says a fix was refused.
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}
