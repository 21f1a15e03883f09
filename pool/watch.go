package pool

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"pool/agent"
)

// watch checks running sessions every StatusInterval, and at once when the
// agent server's event stream says one went idle, failed, vanished or asks
// for a permission. After a gap in the stream (it has no replay) it checks
// them all. A session is done when it has gone idle after being busy,
// errored, disappeared, overrun the session timeout, or is stuck on a
// permission ask. Every StatusInterval it also retries deleting the
// sessions the agent server did not let the pool delete. It returns when
// ctx ends and the event stream has closed.
func (p *Pool) watch(ctx context.Context) {
	t := time.NewTicker(p.cfg.StatusInterval)
	defer t.Stop()
	var events <-chan agent.Event
	if src, ok := p.agent.(eventSource); ok {
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
			p.sweep(ctx)
			p.retireTrees(ctx, time.Now().Add(-warmFor))
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if !p.noteEvent(ev) {
				continue
			}
		}
		if err := p.checkSessions(ctx); err != nil {
			failures++
			if failures == 1 || failures%10 == 0 {
				p.log.Warn("checking sessions failed; will retry", "err", err, "consecutive", failures)
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
func (p *Pool) noteEvent(ev agent.Event) bool {
	if ev.Type == agent.EventReconnected {
		return true
	}
	s := p.sessionByID(ev.SessionID)
	if s == nil {
		return false
	}
	if ev.Type == agent.EventSessionStatus && ev.Status != "idle" {
		s.seenBusy = true // only the watcher goroutine writes it
		return false
	}
	return true
}

func (p *Pool) sessionByID(id string) *session {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.sessions {
		if s.id == id && s.outcome == "" {
			return s
		}
	}
	return nil
}

func (p *Pool) running() []*session {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*session, 0, len(p.sessions))
	for _, s := range p.sessions {
		if s.outcome == "" {
			out = append(out, s)
		}
	}
	return out
}

// checkSessions judges every running session. The agent server answers
// statuses and permission asks per directory: it asks once for each
// directory a running session works in.
func (p *Pool) checkSessions(ctx context.Context) error {
	live := p.running()
	if len(live) == 0 {
		return nil
	}
	statuses := map[string]agent.Status{}
	asking := map[string]string{}
	for _, dir := range dirs(live) {
		st, err := p.agent.Statuses(ctx, dir)
		if err != nil {
			return err
		}
		maps.Copy(statuses, st)
		p.permissionAsks(ctx, dir, asking)
	}
	for _, s := range live {
		if outcome := p.judgeSession(ctx, s, statuses, asking); outcome != "" {
			p.finish(s, outcome)
		}
	}
	return nil
}

func dirs(sessions []*session) []string {
	var out []string
	for _, s := range sessions {
		if !slices.Contains(out, s.dir) {
			out = append(out, s.dir)
		}
	}
	return out
}

// permissionAsks adds dir's pending permission asks to asking, by session
// id. A failure to read them is not fatal: the session timeout still
// applies.
func (p *Pool) permissionAsks(ctx context.Context, dir string, asking map[string]string) {
	perms, err := p.agent.Permissions(ctx, dir)
	if err != nil {
		return
	}
	for _, pm := range perms {
		asking[pm.SessionID] = pm.Type + " " + strings.Join(pm.Patterns, " ")
	}
}

// judgeSession returns the session's outcome, or "" while it still runs.
// A session absent from the status map may not have started yet (the first
// busy comes about a second after the prompt), so absence counts as done
// only after a busy was seen or when its messages show a finished reply.
func (p *Pool) judgeSession(ctx context.Context, s *session, statuses map[string]agent.Status, asking map[string]string) string {
	if ask, ok := asking[s.id]; ok {
		p.log.Warn("session is waiting on a permission ask; treating it as stuck", "pr", s.pr, "session", s.id, "ask", ask)
		p.stop(ctx, s)
		return "stuck"
	}
	if _, busy := statuses[s.id]; busy {
		s.seenBusy = true
		if p.now().Sub(s.started) > p.cfg.SessionTimeout {
			p.log.Warn("session overran its timeout; aborting", "pr", s.pr, "session", s.id)
			p.stop(ctx, s)
			return "timeout"
		}
		return ""
	}
	msgs, err := p.agent.Messages(ctx, s.id)
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
	case done || s.seenBusy:
		return "idle"
	case p.now().Sub(s.started) > p.cfg.SessionTimeout:
		return "timeout"
	}
	return ""
}

func (p *Pool) stop(ctx context.Context, s *session) {
	if err := p.agent.Abort(ctx, s.id); err != nil && !errors.Is(err, agent.ErrNotFound) {
		p.log.Warn("aborting a session failed", "session", s.id, "err", err)
	}
}

func (p *Pool) finish(s *session, outcome string) {
	p.mu.Lock()
	s.outcome = outcome
	p.mu.Unlock()
	close(s.done)
}
