package sessions

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"pool/agent"
)

// Watch checks the running sessions every StatusInterval, and at once when
// the agent server's event stream says one went idle, failed, vanished or
// asks for a permission. After a gap in the stream (it has no replay) it
// checks them all. A session is done when it has gone idle after being
// busy, errored, disappeared, overrun the session timeout, or is stuck on
// a permission ask. Every StatusInterval it also retries deleting the
// sessions the agent server did not let it delete, and retires the work
// trees kept warm too long. It returns when ctx ends and the event stream
// has closed.
func (s *Set) Watch(ctx context.Context) {
	t := time.NewTicker(s.cfg.StatusInterval)
	defer t.Stop()
	var events <-chan agent.Event
	if src, ok := s.agent.(eventSource); ok {
		events = src.Events(ctx)
	}
	defer func() {
		if events == nil {
			return // none, or already closed
		}
		for range events { // the stream closes once it has stopped
		}
	}()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Sweep(ctx)
			s.RetireTrees(ctx, time.Now().Add(-warmFor))
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if !s.noteEvent(ev) {
				continue
			}
		}
		if err := s.check(ctx); err != nil {
			failures++
			if failures == 1 || failures%10 == 0 {
				s.log.Warn("checking sessions failed; will retry", "err", err, "consecutive", failures)
			}
			continue
		}
		failures = 0
	}
}

// eventSource is an agent server that streams its events.
type eventSource interface {
	Events(ctx context.Context) <-chan agent.Event
}

// noteEvent records what an event says and reports whether the running
// sessions need a check now.
func (s *Set) noteEvent(ev agent.Event) bool {
	if ev.Type == agent.EventReconnected {
		s.reconnected = s.cfg.Now() // only the watcher goroutine writes it
		return true
	}
	ss := s.byID(ev.SessionID)
	if ss == nil {
		return false
	}
	if ev.Type == agent.EventSessionStatus && ev.Status != "idle" {
		ss.seenBusy = true // only the watcher goroutine writes it
		return false
	}
	return true
}

func (s *Set) byID(id string) *Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.byPR {
		if ss.ID == id && ss.outcome == "" {
			return ss
		}
	}
	return nil
}

func (s *Set) running() []*Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Session, 0, len(s.byPR))
	for _, ss := range s.byPR {
		if ss.outcome == "" {
			out = append(out, ss)
		}
	}
	return out
}

// check judges every running session. The agent server answers statuses
// and permission asks per directory: it asks once for each directory a
// running session works in. The sessions of a directory whose statuses
// could not be read are judged at the next check; the others now (with
// several agent servers, one that does not answer holds up no other's).
func (s *Set) check(ctx context.Context) error {
	live := s.running()
	if len(live) == 0 {
		return nil
	}
	statuses := map[string]agent.Status{}
	asking := map[string]string{}
	unread := map[string]bool{}
	var errs []error
	for _, dir := range dirs(live) {
		st, err := s.agent.Statuses(ctx, dir)
		if err != nil {
			unread[dir] = true
			errs = append(errs, err)
			continue
		}
		maps.Copy(statuses, st)
		s.permissionAsks(ctx, dir, asking)
	}
	for _, ss := range live {
		if unread[ss.Dir] {
			continue
		}
		if outcome := s.judge(ctx, ss, statuses, asking); outcome != "" {
			s.finish(ss, outcome)
		}
	}
	return errors.Join(errs...)
}

func dirs(sessions []*Session) []string {
	var out []string
	for _, s := range sessions {
		if !slices.Contains(out, s.Dir) {
			out = append(out, s.Dir)
		}
	}
	return out
}

// permissionAsks adds dir's pending permission asks to asking, by session
// id. A failure to read them is not fatal: the session timeout still
// applies.
func (s *Set) permissionAsks(ctx context.Context, dir string, asking map[string]string) {
	perms, err := s.agent.Permissions(ctx, dir)
	if err != nil {
		return
	}
	for _, pm := range perms {
		asking[pm.SessionID] = pm.Type + " " + strings.Join(pm.Patterns, " ")
	}
}

// judge returns the session's outcome, or "" while it still runs. A
// session absent from the status map may not have started yet (the first
// busy comes about a second after the prompt), so absence counts as done
// only after a busy was seen or when its messages show a finished reply.
func (s *Set) judge(ctx context.Context, ss *Session, statuses map[string]agent.Status, asking map[string]string) string {
	if ask, ok := asking[ss.ID]; ok {
		s.log.Warn("session is waiting on a permission ask; treating it as stuck", "pr", ss.PR, "session", ss.ID, "ask", ask)
		s.stop(ctx, ss)
		return "stuck"
	}
	if _, busy := statuses[ss.ID]; busy {
		ss.seenBusy = true
		if s.cfg.Now().Sub(ss.Started) > s.cfg.SessionTimeout {
			s.log.Warn("session overran its timeout; aborting", "pr", ss.PR, "session", ss.ID)
			s.stop(ctx, ss)
			return "timeout"
		}
		return ""
	}
	msgs, err := s.agent.Messages(ctx, ss.ID)
	if errors.Is(err, agent.ErrNotFound) {
		return "gone"
	}
	if err != nil {
		return ""
	}
	done, _, errMsg := agent.Finished(msgs)
	switch {
	case errMsg != "":
		return "error"
	case done || ss.seenBusy:
		return OutcomeIdle
	case !hasPrompt(msgs) && s.cfg.Now().Sub(ss.Started) >= lostPromptAfter:
		// A prompt call whose answer was lost, and no read of the messages
		// after it answered (promptLanded): the prompt never landed.
		s.log.Warn("the session holds no prompt; ending it", "pr", ss.PR, "session", ss.ID)
		s.stop(ctx, ss)
		return "gone"
	case s.promptLost(ss):
		s.log.Warn("the agent server's event stream broke after the session was prompted, and the server has not run it since; ending the session",
			"pr", ss.PR, "session", ss.ID, "stream_back_since", s.cfg.Now().Sub(s.reconnected).Round(time.Second))
		s.stop(ctx, ss)
		return "gone"
	case s.cfg.Now().Sub(ss.Started) > s.cfg.SessionTimeout:
		return "timeout"
	}
	return ""
}

// lostPromptAfter is how long after the event stream came back a session
// prompted before the break, never seen busy, may still be neither running
// nor finished before it counts as lost: a restarted agent server keeps the
// session, its prompt and any reply it had begun, but never runs it again.
// The first busy comes about a second after a prompt on a working server.
const lostPromptAfter = 30 * time.Second

// promptLost reports whether ss, never seen busy, was prompted before the
// agent server's event stream last broke, and lostPromptAfter after it came
// back the server is not running it (the caller has found it absent from
// the statuses and its reply unfinished).
func (s *Set) promptLost(ss *Session) bool {
	if ss.seenBusy || s.reconnected.IsZero() || !s.reconnected.After(ss.Started) {
		return false
	}
	return s.cfg.Now().Sub(s.reconnected) >= lostPromptAfter
}

func (s *Set) stop(ctx context.Context, ss *Session) {
	if err := s.agent.Abort(ctx, ss.ID); err != nil && !errors.Is(err, agent.ErrNotFound) {
		s.log.Warn("aborting a session failed", "session", ss.ID, "err", err)
	}
}

// OutcomeIdle is the outcome of a session that ran to its end: the agent
// server finished its reply. The others (stuck, timeout, gone, error) cut
// it short.
const OutcomeIdle = "idle"

func (s *Set) finish(ss *Session, outcome string) {
	s.mu.Lock()
	ss.outcome = outcome
	s.mu.Unlock()
	close(ss.done)
}
