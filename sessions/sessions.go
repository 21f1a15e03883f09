// Package sessions owns the agent-session side of one repository's pool:
// starting a reviewer session in its work tree (Start), watching the
// running ones and judging each idle, failed, gone, timed out or stuck
// (Watch), and ending them (Release): deleting the session and giving its
// work tree back to be kept warm, or removing it and freeing the agent
// server's instance for it. Sessions the agent server would not delete are
// kept and deleted once it answers again (Sweep). What a session is for,
// and what its end means for the PR, is the pool's business.
package sessions

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"pool/agent"
	"pool/fleet"
	"pool/internal/retry"
	"pool/lifecycle"
)

// Agent is what the sessions need of the agent server.
type Agent interface {
	CreateSession(ctx context.Context, title, dir string) (agent.Session, error)
	PromptAsync(ctx context.Context, sessionID, agentName, text string) error
	Statuses(ctx context.Context, dir string) (map[string]agent.Status, error)
	Messages(ctx context.Context, sessionID string) ([]agent.Message, error)
	Sessions(ctx context.Context) ([]agent.Session, error)
	Delete(ctx context.Context, sessionID string) error
	Abort(ctx context.Context, sessionID string) error
	Permissions(ctx context.Context, dir string) ([]agent.Permission, error)
	Dispose(ctx context.Context, dir string) error
}

// Trees takes back the work trees of ended sessions; the clone implements it.
type Trees interface {
	// GiveTree takes back a tree no session works in any more; false: it
	// was removed instead of kept (keep free trees are kept already).
	GiveTree(ctx context.Context, dir string, keep int) (kept bool, err error)
	// RetireTrees removes the free trees freed before idleSince and
	// returns every tree removed since it last did.
	RetireTrees(ctx context.Context, idleSince time.Time) []string
	Owns(dir string) bool
	RemoveTree(ctx context.Context, dir string) error
	PruneTrees(ctx context.Context, keep []string) error
}

// Config is how the sessions are watched and their trees kept.
type Config struct {
	StatusInterval time.Duration // how often the running sessions are checked
	SessionTimeout time.Duration // a session running longer is aborted
	Keep           func() int    // how many free work trees to keep warm
	Now            func() time.Time
	Log            *slog.Logger
}

// Session is one session the pool follows. ID, Dir, PR, Kind and Started
// are set when it is registered and not changed; the watcher goroutine
// alone writes seenBusy, outcome and closes done; others read outcome only
// after done is closed.
type Session struct {
	ID      string
	Dir     string // the work tree it works in; "" for the server's own directory
	PR      int
	Kind    lifecycle.Kind
	Started time.Time

	seenBusy bool
	outcome  string // idle, error, gone, timeout, stuck
	done     chan struct{}
}

// Done is closed once the session has ended.
func (s *Session) Done() <-chan struct{} { return s.done }

// Outcome is how the session ended: idle, error, gone, timeout or stuck.
// Read it after Done is closed.
func (s *Session) Outcome() string { return s.outcome }

// Set is the sessions of one pool: those running, by PR, and those to
// delete once the agent server answers.
type Set struct {
	agent Agent
	trees Trees
	cfg   Config
	log   *slog.Logger
	// reconnected is when the agent server's event stream last came back
	// after a break; the watcher goroutine alone reads and writes it.
	reconnected time.Time

	mu      sync.Mutex // guards the fields below
	byPR    map[int]*Session
	orphans map[orphan]bool
	left    int // sessions left running for the next start
}

// New makes the set of sessions of one pool; trees may be nil (sessions
// then work in the agent server's own directory).
func New(a Agent, trees Trees, cfg Config) *Set {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Set{agent: a, trees: trees, cfg: cfg, log: cfg.Log, byPR: map[int]*Session{}, orphans: map[orphan]bool{}}
}

// UseTrees gives the set its work trees, before the pool runs.
func (s *Set) UseTrees(t Trees) { s.trees = t }

// Start makes a session for PR pr in dir, prompts it and registers it.
// before, if set, runs with the session's id between the two: a session
// it fails for is never prompted. A session it made but could not prompt
// is deleted, now or, if the agent server does not answer, later.
func (s *Set) Start(ctx context.Context, pr int, kind lifecycle.Kind, title, dir, agentName, prompt string, before func(id string) error) (*Session, error) {
	created, err := s.create(ctx, kind, title, dir)
	if errors.Is(err, fleet.ErrNoSlot) {
		s.GiveTree(ctx, dir) // nothing was made
		return nil, err
	}
	if err != nil {
		// The server may have made it and lost the answer: delete whatever
		// works in this directory.
		s.release(ctx, orphan{dir: dir})
		return nil, err
	}
	if before != nil {
		if err := before(created.ID); err != nil {
			s.release(ctx, orphan{id: created.ID, dir: dir})
			return nil, err
		}
	}
	if err := s.agent.PromptAsync(ctx, created.ID, agentName, prompt); err != nil {
		if agent.NotSent(err) || !s.promptLanded(ctx, created.ID) {
			s.release(ctx, orphan{id: created.ID, dir: dir})
			return nil, err
		}
		s.log.Warn("the prompt's answer was lost, but the session holds the prompt; following it",
			"pr", pr, "session", created.ID, "err", err)
	}
	return s.Register(created.ID, pr, kind, dir), nil
}

// placer is an agent of several servers (package fleet): it places each
// session on a server that runs sessions of its kind.
type placer interface {
	Place(ctx context.Context, fixer bool, title, dir string) (agent.Session, error)
}

func (s *Set) create(ctx context.Context, kind lifecycle.Kind, title, dir string) (agent.Session, error) {
	if p, ok := s.agent.(placer); ok {
		return p.Place(ctx, kind == lifecycle.Fix, title, dir)
	}
	return s.agent.CreateSession(ctx, title, dir)
}

// Register follows a session that runs already (one Start made, or one a
// previous run left).
func (s *Set) Register(id string, pr int, kind lifecycle.Kind, dir string) *Session {
	ss := &Session{ID: id, Dir: dir, PR: pr, Kind: kind, Started: s.cfg.Now(), done: make(chan struct{})}
	s.mu.Lock()
	s.byPR[pr] = ss
	s.mu.Unlock()
	return ss
}

// Of is PR n's running session, or nil.
func (s *Set) Of(n int) *Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byPR[n]
}

// Drop stops following ss.
func (s *Set) Drop(ss *Session) {
	s.mu.Lock()
	if s.byPR[ss.PR] == ss {
		delete(s.byPR, ss.PR)
	}
	s.mu.Unlock()
}

// Release deletes a session that ended, or one a previous run made but
// never prompted, and gives its work tree back. Following it is left to
// Drop.
func (s *Set) Release(ctx context.Context, id, dir string) { s.release(ctx, orphan{id: id, dir: dir}) }

// Leave stops following ss at shutdown: it is aborted and deleted with
// abort, or else left running, in its work tree, for the next start to
// adopt.
func (s *Set) Leave(ctx context.Context, ss *Session, abort bool) {
	s.Drop(ss)
	if abort {
		s.stop(ctx, ss)
		s.release(ctx, orphan{id: ss.ID, dir: ss.Dir})
		return
	}
	s.mu.Lock()
	s.left++
	s.mu.Unlock()
}

// Left counts the sessions left running at exit; their work trees must
// stay.
func (s *Set) Left() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.left
}

// WasPrompted reports whether a session holds a prompt. When it cannot
// tell, it says yes: adopting an empty session costs a timeout, deleting a
// working one costs a review.
func (s *Set) WasPrompted(ctx context.Context, id string) bool {
	msgs, err := s.agent.Messages(ctx, id)
	if err != nil {
		return !errors.Is(err, agent.ErrNotFound)
	}
	return hasPrompt(msgs)
}

// promptLanded reports whether a session holds a user prompt after a
// prompt call failed: the server may have taken the prompt and lost only
// its answer (a 502 from a proxy, a connection cut), and deleting that
// session would start a second reviewer on the same head. The server
// stores the prompt after it answered, later still when it is loaded, so
// it reads the messages up to len(promptWaits) times, the pauses growing
// (a call that never reached the server is not looked for: agent.NotSent).
// When no read answers it cannot tell, and says yes, as WasPrompted does:
// following an empty session costs a timeout, deleting a working one a
// second session on the head.
func (s *Set) promptLanded(ctx context.Context, id string) bool {
	answered := false
	for _, wait := range promptWaits {
		if wait > 0 && !retry.Wait(ctx, wait) {
			return false
		}
		msgs, err := s.agent.Messages(ctx, id)
		switch {
		case errors.Is(err, agent.ErrNotFound):
			return false
		case err != nil:
			continue
		}
		answered = true
		if hasPrompt(msgs) {
			return true
		}
	}
	return !answered
}

// promptWaits are the pauses before promptLanded's reads: 3.5 s in all.
var promptWaits = []time.Duration{0, 500 * time.Millisecond, time.Second, 2 * time.Second}

func hasPrompt(msgs []agent.Message) bool {
	for _, m := range msgs {
		if m.Role == "user" {
			return true
		}
	}
	return false
}
