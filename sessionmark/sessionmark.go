// Package sessionmark binds what a session may do to the PR and head it
// was started for, and lets the pool tell the reviews its sessions filed
// from any other review of the same account.
//
// When the pool starts a session it writes a Record beside the session's
// work tree (Path), in a directory the agent server's user may pass
// through but not write: the repository, the PR, the full head id, the
// session's id and the session's Mark. `pool-review` reads it from its
// working directory and acts on that PR only, files a verdict on that
// head only, and ends every review body with the Mark (Tag).
//
// Why a signed mark rather than a list of review ids the pool keeps: the
// Mark is an HMAC, under a key derived from the pool's own forge token, of
// the repository, PR, head and session id. The pool checks a review's mark
// with nothing but the review (Key.Verify): it holds across restarts and
// adopted sessions, needs no store, and the agent's user, which never sees
// the pool's token, cannot make a mark for another PR or head. Pools that
// share the pool's token share the key, so one counts another's sessions'
// reviews; a pool with another token counts none of them.
package sessionmark

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Record is what one session may act on.
type Record struct {
	Repo    string `json:"repo"` // owner/name
	PR      int    `json:"pr"`
	Head    string `json:"head"`           // the full commit id the session was started for
	Base    string `json:"base,omitempty"` // the PR's base branch, as the tree has it (refs/remotes/origin/<base>)
	Session string `json:"session"`
	Mark    string `json:"mark"` // what its reviews carry (Key.Mark)
	// Fixer says the session is a fixer's: when it ends the pool pushes its
	// commits, also after a restart that adopted it.
	Fixer bool `json:"fixer,omitempty"`
}

// Path is where the record of the session working in tree is: beside the
// tree, never in it, so that nothing the session may write can change it.
func Path(tree string) string { return filepath.Clean(tree) + ".session" }

// maxRecord bounds what Read reads.
const maxRecord = 4 << 10

// HeadRE is a full commit id: SHA-1 or SHA-256.
var HeadRE = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

var sessionRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)

// baseRE is a branch name the record may hold: no option, no way up.
var baseRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._/-]{0,199}$`)

// Write records r for the session working in tree, readable by every user
// that may reach it and writable by none but the pool's (0644 in a
// directory the agent's user may only pass through). It replaces the
// record at once (a new file renamed into place).
func Write(tree string, r Record) error {
	if err := r.check(); err != nil {
		return fmt.Errorf("sessionmark: record for %s: %w", tree, err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("sessionmark: record for %s: %w", tree, err)
	}
	f, err := os.CreateTemp(filepath.Dir(filepath.Clean(tree)), ".record-")
	if err != nil {
		return fmt.Errorf("sessionmark: record for %s: %w", tree, err)
	}
	defer os.Remove(f.Name())
	_, err = f.Write(append(b, '\n'))
	err = errors.Join(err, f.Chmod(0o644), f.Close())
	if err == nil {
		err = os.Rename(f.Name(), Path(tree))
	}
	if err != nil {
		return fmt.Errorf("sessionmark: record for %s: %w", tree, err)
	}
	return nil
}

// Remove deletes the record of tree, if any.
func Remove(tree string) error {
	if err := os.Remove(Path(tree)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("sessionmark: remove the record for %s: %w", tree, err)
	}
	return nil
}

// ErrNoRecord: the directory is not the work tree of a session the pool
// started.
var ErrNoRecord = errors.New("no session record")

// Read reads the record of the session working in tree. The record must
// be a regular file (not a link).
func Read(tree string) (Record, error) {
	path := Path(tree)
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return Record{}, ErrNoRecord
	}
	if err != nil {
		return Record{}, fmt.Errorf("read the session record: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return Record{}, fmt.Errorf("the session record %s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return Record{}, fmt.Errorf("read the session record: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecord))
	if err != nil {
		return Record{}, fmt.Errorf("read the session record: %w", err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("read the session record %s: %w", path, err)
	}
	if err := r.check(); err != nil {
		return Record{}, fmt.Errorf("the session record %s: %w", path, err)
	}
	return r, nil
}

func (r Record) check() error {
	owner, name, ok := strings.Cut(r.Repo, "/")
	switch {
	case !ok || owner == "" || name == "" || strings.Contains(name, "/"):
		return fmt.Errorf("repository %q is not OWNER/NAME", r.Repo)
	case r.PR <= 0:
		return fmt.Errorf("PR number %d", r.PR)
	case !HeadRE.MatchString(r.Head):
		return fmt.Errorf("head %q is not a full commit id", r.Head)
	case r.Base != "" && (!baseRE.MatchString(r.Base) || strings.Contains(r.Base, "..")):
		return fmt.Errorf("base branch %q", r.Base)
	case !sessionRE.MatchString(r.Session):
		return fmt.Errorf("session id %q", r.Session)
	case !markRE.MatchString(r.Mark):
		return errors.New("the mark is not one")
	}
	return nil
}

// Key makes and checks marks. The zero Key makes none and checks none.
type Key struct{ k []byte }

// NewKey derives the marks' key from secret (the pool's forge token): one
// way, so neither the key nor a mark tells the secret.
func NewKey(secret string) Key {
	if secret == "" {
		return Key{}
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("pool session mark v1"))
	return Key{k: m.Sum(nil)}
}

// Mark is the mark of a session's reviews: its id and a MAC of the
// repository, PR, head and id.
func (k Key) Mark(repo string, pr int, head, session string) string {
	return session + "." + k.mac(repo, pr, head, session)
}

func (k Key) mac(repo string, pr int, head, session string) string {
	m := hmac.New(sha256.New, k.k)
	m.Write([]byte(strings.ToLower(repo) + "#" + strconv.Itoa(pr) + "@" + head + "/" + session))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// Verify reports whether mark is the mark of a session started for PR pr
// of repo at head.
func (k Key) Verify(repo string, pr int, head, mark string) bool {
	if len(k.k) == 0 || !markRE.MatchString(mark) {
		return false
	}
	session, mac, _ := strings.Cut(mark, ".")
	return hmac.Equal([]byte(mac), []byte(k.mac(repo, pr, head, session)))
}

// Valid: the key can make and check marks.
func (k Key) Valid() bool { return len(k.k) > 0 }

var (
	markRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}\.[0-9a-f]{32}$`)
	tagRE  = regexp.MustCompile(`(?:^|\n)<!-- session-mark: ([A-Za-z0-9_-]{1,100}\.[0-9a-f]{32}) -->\s*$`)
)

// TagPrefix starts the tag; pool-review refuses a text that holds it. It
// is not one of the pool's comment markers (forge.Marker, "<!-- pool-"):
// a review that carries it is still the reviewer's feedback.
const TagPrefix = "<!-- session-mark:"

// Tag is the line that ends a review body with mark.
func Tag(mark string) string { return "\n\n" + TagPrefix + " " + mark + " -->" }

// Find is the mark at the very end of a review body, or "".
func Find(body string) string {
	if m := tagRE.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	return ""
}
