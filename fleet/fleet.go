// Package fleet drives several agent servers as one: it places each
// session on an up server of the role its kind needs (review, fix or both)
// with a free slot, the least busy first, and sends every later call on a
// session to the server that holds it. Each server is checked with a cheap
// read every CheckEvery; one that fails DownAfter checks in a row is down:
// no session starts on it, and LostAfter after it went down its sessions
// count as lost (their messages read as gone, so their pools end them and
// start their PRs again elsewhere). A server that answers again is used
// again once the sessions counted lost on it are deleted; those not lost
// are followed on as before: a session is followed or ended, never run
// twice. With one server nothing is lost: its sessions wait for it.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"pool/agent"
)

// Health checks: a server is checked every CheckEvery, each check allowed
// CheckTimeout; DownAfter failed checks in a row mark it down, and its
// sessions count lost LostAfter later. A session whose server stops
// answering is so counted lost at most DownAfter×(CheckEvery+CheckTimeout)
// + LostAfter (150 s) after the server's last answer (60 s when its
// connection is refused at once, as a dead server's is); a slow server on
// a loaded machine took over 10 s to answer a check; its pool removes its
// work tree before the PR is started again, so a session still running on
// a server cut off from the pool finds no tree and no session record to
// file a review with.
const (
	CheckEvery   = 5 * time.Second
	CheckTimeout = 30 * time.Second
	DownAfter    = 3
	LostAfter    = 45 * time.Second
)

// Agent is what the fleet asks of one agent server (agent.Client).
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
	Warm(ctx context.Context, dir string) error
	Agents(ctx context.Context, dir string) ([]string, error)
	OpenToAnyone(ctx context.Context) (bool, error)
	Events(ctx context.Context) <-chan agent.Event
}

// Server is one agent server of the fleet.
type Server struct {
	Name        string // its URL, for logs and the status page
	Agent       Agent
	Workers     int
	Review, Fix bool // the sessions it runs
	Labels      map[string]string
}

// Options tune a fleet; the zero value is the defaults.
type Options struct {
	Log *slog.Logger
	Now func() time.Time
}

// Fleet is several agent servers as one agent.
type Fleet struct {
	servers []*server
	log     *slog.Logger
	now     func() time.Time

	mu    sync.Mutex                      // guards the fields below and each server's state
	where map[string]*server              // session id → the server holding it
	dirs  map[string]*server              // work tree → the server of its latest session, or where it was warmed
	used  map[string]map[*server]struct{} // work tree → the servers that had a session in it, or warmed it
	// reserved are the servers kept for sessions about to start, by
	// session title (Reserve).
	reserved map[string]reservation
	// warm are the work trees whose instance a server started (Warm, or a
	// session placed there), and in which of its lives.
	warm map[string]warmth
	// revived is closed, and replaced, when a server that was down
	// answers again (Revived).
	revived chan struct{}
}

// warmth is a work tree's instance started on s in its life-th life.
type warmth struct {
	s    *server
	life int
}

// reservation is a slot kept on s for a session of a kind (fixer).
type reservation struct {
	s     *server
	fixer bool
}

// server is a Server and its state, under Fleet.mu.
type server struct {
	Server
	held      map[string]bool // sessions in its slots: placed or adopted, not ended or lost
	lostIDs   map[string]bool // sessions counted lost, to delete before it is used again
	placing   int             // sessions being created on it
	failures  int             // checks failed in a row
	down      bool            // no session starts on it
	downSince time.Time
	lostDone  bool // its sessions were counted lost in this outage
	started   int
	lost      int
	// life counts the times it answered again after it was down: a
	// restart lost the instances it had started before.
	life int
}

// New makes a fleet of servers.
func New(servers []Server, opt Options) *Fleet {
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	f := &Fleet{log: opt.Log, now: opt.Now, where: map[string]*server{}, dirs: map[string]*server{},
		used: map[string]map[*server]struct{}{}, reserved: map[string]reservation{}, warm: map[string]warmth{},
		revived: make(chan struct{})}
	for _, s := range servers {
		f.servers = append(f.servers, &server{Server: s, held: map[string]bool{}, lostIDs: map[string]bool{}})
	}
	return f
}

// ErrNoSlot: no up server of the role asked for has a free slot.
var ErrNoSlot = errors.New("fleet: no agent server of that role has a free slot")

// Free reports whether an up server running fixers (fixer) or reviewers
// has a free slot.
func (f *Fleet) Free(fixer bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pick(fixer, "") != nil
}

// pick is the server a session of the kind goes to: among the up servers
// of its role with a free slot, the one whose warm instance for dir it
// had last, else the least busy (in order among equals). The caller holds
// mu.
func (f *Fleet) pick(fixer bool, dir string) *server {
	var best *server
	for _, s := range f.servers {
		if s.down || (fixer && !s.Fix) || (!fixer && !s.Review) || s.busy() >= s.Workers {
			continue
		}
		if dir != "" && f.dirs[dir] == s {
			return s
		}
		if best == nil || s.busy()*best.Workers < best.busy()*s.Workers {
			best = s
		}
	}
	return best
}

func (s *server) busy() int { return len(s.held) + s.placing }

// Reserve keeps a slot of a server of the role a fixer (fixer) or a
// reviewer needs for the session titled title, which Place then takes;
// false when none is free. A reservation Place did not take is given up
// with Unreserve. A pool reserves before it claims a PR, so that two slots
// never count on one free server slot.
func (f *Fleet) Reserve(fixer bool, title string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reserved[title].s != nil {
		return true
	}
	s := f.pick(fixer, "")
	if s == nil {
		return false
	}
	s.placing++
	f.reserved[title] = reservation{s: s, fixer: fixer}
	return true
}

// Unreserve gives up the reservation for title, if Place did not take it.
func (f *Fleet) Unreserve(title string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.reserved[title]; r.s != nil {
		r.s.placing--
		delete(f.reserved, title)
	}
}

// Place creates a session on a server of the role a fixer (fixer) or a
// reviewer needs, with a free slot: the one reserved for title if it is
// still up, unless the server that last had a session in dir (whose
// instance for it is warm) can take it instead (warmer).
func (f *Fleet) Place(ctx context.Context, fixer bool, title, dir string) (agent.Session, error) {
	f.mu.Lock()
	s := f.reserved[title].s
	delete(f.reserved, title)
	if s != nil && s.down {
		s.placing--
		s = nil
	}
	if s != nil {
		s = f.warmer(s, fixer, dir)
	}
	if s == nil {
		if s = f.pick(fixer, dir); s == nil {
			f.mu.Unlock()
			return agent.Session{}, ErrNoSlot
		}
		s.placing++
	}
	if dir != "" { // the servers' own directories are not one
		f.startsIn(dir, s)
	}
	f.mu.Unlock()
	created, err := s.Agent.CreateSession(ctx, title, dir)
	if err != nil && agent.IsRetryable(err) && ctx.Err() == nil {
		f.failed(s, err) // counts as a failed check: a dead server is left out sooner
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s.placing--
	if err != nil {
		return created, fmt.Errorf("on %s: %w", s.Name, err)
	}
	s.held[created.ID], f.where[created.ID] = true, s
	s.started++
	f.log.Debug("session placed", "session", created.ID, "server", s.Name, "fixer", fixer)
	return created, nil
}

// startsIn records that s starts its instance for work tree dir: its
// sessions in dir go there, and Dispose frees it there. The caller holds
// mu.
func (f *Fleet) startsIn(dir string, s *server) {
	f.dirs[dir] = s
	if f.used[dir] == nil {
		f.used[dir] = map[*server]struct{}{}
	}
	f.used[dir][s] = struct{}{}
	f.warm[dir] = warmth{s: s, life: s.life}
}

// warmer is the server a session reserved on s goes to: the server w
// that last had a session in dir, when it is up, runs the session's kind,
// and has a slot free or one kept for a session of a kind s runs (the two
// reservations are then swapped); else s. Which free tree a slot gets is
// not known when its server is reserved: without this, a tree warmed on
// one server got its next session on the other, which started a new
// instance for it (25-45 s under load in the fleet benchmark, against a
// few for a warm one). Callers hold mu; s.placing counts the session.
func (f *Fleet) warmer(s *server, fixer bool, dir string) *server {
	w := f.dirs[dir]
	if dir == "" || w == nil || w == s || w.down || (fixer && !w.Fix) || (!fixer && !w.Review) {
		return s
	}
	if w.busy() < w.Workers {
		s.placing--
		w.placing++
		return w
	}
	for title, r := range f.reserved {
		if r.s == w && ((r.fixer && s.Fix) || (!r.fixer && s.Review)) {
			f.reserved[title] = reservation{s: s, fixer: r.fixer}
			return w // the placing counts stay: one on each
		}
	}
	return s
}

// CreateSession places a reviewer's session.
func (f *Fleet) CreateSession(ctx context.Context, title, dir string) (agent.Session, error) {
	return f.Place(ctx, false, title, dir)
}

// Hold counts a session a pool adopted in its server's slots.
func (f *Fleet) Hold(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.where[id]; s != nil && !s.down {
		s.held[id] = true
	}
}

// holder is the server of session id; errLost when it counts lost, and
// agent.ErrNotFound when no server is known to hold it. A fleet of one
// asks its server whatever the id.
func (f *Fleet) holder(id string) (*server, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.where[id]
	switch {
	case s == nil && len(f.servers) == 1:
		return f.servers[0], nil
	case s == nil:
		return nil, agent.ErrNotFound
	case s.down && s.lostDone:
		return s, errLost
	}
	return s, nil
}

// lost reports whether s is down with its sessions counted lost.
func (f *Fleet) lost(s *server) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return s.down && s.lostDone
}

var errLost = fmt.Errorf("fleet: the agent server holding the session is down: %w", agent.ErrNotFound)

// unreachable is the error of a call to a server that is down.
func unreachable(s *server) error {
	return &agent.Error{Op: "fleet", Retryable: true, Err: fmt.Errorf("agent server %s is down", s.Name)}
}

func (f *Fleet) PromptAsync(ctx context.Context, id, agentName, text string) error {
	s, err := f.holder(id)
	if err != nil {
		return err
	}
	return s.Agent.PromptAsync(ctx, id, agentName, text)
}

// Messages of a session whose server is down and whose sessions count
// lost are not found: its pool ends it.
func (f *Fleet) Messages(ctx context.Context, id string) ([]agent.Message, error) {
	s, err := f.holder(id)
	if err != nil {
		return nil, err
	}
	return s.Agent.Messages(ctx, id)
}

// Delete deletes a session on its server. One on a server that is down
// stays for its pool to delete again (sessions.Sweep) once it answers.
func (f *Fleet) Delete(ctx context.Context, id string) error {
	s, err := f.holder(id)
	if errors.Is(err, errLost) {
		return unreachable(s)
	}
	if err != nil {
		return nil // no server holds it
	}
	if err := s.Agent.Delete(ctx, id); err != nil {
		return err
	}
	f.mu.Lock()
	delete(s.held, id)
	delete(f.where, id)
	f.mu.Unlock()
	return nil
}

func (f *Fleet) Abort(ctx context.Context, id string) error {
	s, err := f.holder(id)
	if errors.Is(err, errLost) {
		return unreachable(s)
	}
	if err != nil {
		return err
	}
	return s.Agent.Abort(ctx, id)
}

// inDir is the server of the latest session in dir, and whether it is up.
func (f *Fleet) inDir(dir string) (*server, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.dirs[dir]
	return s, s != nil && !s.down
}

// Statuses asks the server of dir's session. A server that is down has
// statuses unknown, an error: a session seen running and then absent
// counts as ended, and a server marked down after a few failed checks may
// well still be running it. Once its sessions count lost it answers none,
// and they are judged by their messages (gone). A directory no session
// was placed in ("" included: each server's own) is asked of every up
// server.
func (f *Fleet) Statuses(ctx context.Context, dir string) (map[string]agent.Status, error) {
	if s, up := f.inDir(dir); s != nil {
		if up {
			return s.Agent.Statuses(ctx, dir)
		}
		if !f.lost(s) {
			return nil, unreachable(s)
		}
		return map[string]agent.Status{}, nil
	}
	out := map[string]agent.Status{}
	for _, s := range f.up() {
		st, err := s.Agent.Statuses(ctx, dir)
		if err != nil {
			return nil, fmt.Errorf("on %s: %w", s.Name, err)
		}
		maps.Copy(out, st)
	}
	return out, nil
}

// Permissions asks as Statuses does; a server that is down has none.
func (f *Fleet) Permissions(ctx context.Context, dir string) ([]agent.Permission, error) {
	if s, up := f.inDir(dir); s != nil {
		if !up {
			return nil, nil
		}
		return s.Agent.Permissions(ctx, dir)
	}
	var out []agent.Permission
	for _, s := range f.up() {
		p, err := s.Agent.Permissions(ctx, dir)
		if err != nil {
			return nil, fmt.Errorf("on %s: %w", s.Name, err)
		}
		out = append(out, p...)
	}
	return out, nil
}

// Dispose frees the instance for dir on every server that had a session
// in it.
func (f *Fleet) Dispose(ctx context.Context, dir string) error {
	f.mu.Lock()
	var on []*server
	for s := range f.used[dir] {
		on = append(on, s)
	}
	delete(f.used, dir)
	delete(f.dirs, dir)
	delete(f.warm, dir)
	f.mu.Unlock()
	var errs []error
	for _, s := range on {
		if err := s.Agent.Dispose(ctx, dir); err != nil {
			errs = append(errs, fmt.Errorf("on %s: %w", s.Name, err))
			f.mu.Lock()
			if f.used[dir] == nil {
				f.used[dir] = map[*server]struct{}{}
			}
			f.used[dir][s] = struct{}{} // tried again with the next dispose
			f.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// Sessions lists the sessions of every up server and remembers which
// holds each. A server that does not answer is left out (logged); only
// when none answers is it an error.
func (f *Fleet) Sessions(ctx context.Context) ([]agent.Session, error) {
	var out []agent.Session
	var errs []error
	up := f.up()
	for _, s := range up {
		list, err := s.Agent.Sessions(ctx)
		if err != nil {
			f.log.Warn("listing an agent server's sessions failed; leaving it out", "server", s.Name, "err", err)
			errs = append(errs, fmt.Errorf("on %s: %w", s.Name, err))
			continue
		}
		f.mu.Lock()
		for _, ss := range list {
			if f.where[ss.ID] == nil {
				f.where[ss.ID] = s
			}
			if f.dirs[ss.Directory] == nil && ss.Directory != "" {
				f.dirs[ss.Directory] = s
			}
		}
		f.mu.Unlock()
		out = append(out, list...)
	}
	if len(errs) > 0 && len(errs) == len(up) {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// Agents are the agents every answering server has.
func (f *Fleet) Agents(ctx context.Context, dir string) ([]string, error) {
	var common []string
	answered := false
	var errs []error
	for _, s := range f.servers {
		names, err := s.Agent.Agents(ctx, dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("on %s: %w", s.Name, err))
			continue
		}
		if !answered {
			common, answered = names, true
			continue
		}
		common = slices.DeleteFunc(common, func(n string) bool { return !slices.Contains(names, n) })
	}
	if !answered {
		return nil, errors.Join(errs...)
	}
	return common, nil
}

// OpenToAnyone reports whether an answering server asks for no password.
func (f *Fleet) OpenToAnyone(ctx context.Context) (bool, error) {
	var errs []error
	for _, s := range f.servers {
		open, err := s.Agent.OpenToAnyone(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("on %s: %w", s.Name, err))
			continue
		}
		if open {
			return true, nil
		}
	}
	if len(errs) == len(f.servers) {
		return false, errors.Join(errs...)
	}
	return false, nil
}

func (f *Fleet) up() []*server {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*server
	for _, s := range f.servers {
		if !s.down {
			out = append(out, s)
		}
	}
	return out
}
