package sessions

import (
	"context"
	"time"
)

// orphan is a session to delete: by id, or, when the agent server may have
// made it without the pool learning its id, every session working in dir.
// dir is also the work tree to remove once the session is gone.
type orphan struct {
	id, dir string
}

// release ends a session's life: it deletes the session and gives its
// work tree back, to be reset for the next session with the agent
// server's instance for it kept warm. A tree whose session may still be
// alive (the server did not let the pool delete it, or never said it made
// it) is never given to another session: it is removed and its instance
// freed, which stops whatever still runs there, and the session is kept
// for Sweep.
func (s *Set) release(ctx context.Context, o orphan) {
	if o.id != "" {
		err := s.agent.Delete(ctx, o.id)
		if err == nil {
			s.GiveTree(ctx, o.dir)
			return
		}
		s.log.Warn("deleting a session failed; will retry", "session", o.id, "err", err)
		s.keepOrphan(o)
	} else if s.ownsTree(o.dir) {
		s.keepOrphan(o) // only Sweep can find it
	}
	s.removeTree(ctx, o.dir)
}

func (s *Set) keepOrphan(o orphan) {
	s.mu.Lock()
	s.orphans[o] = true
	s.mu.Unlock()
}

func (s *Set) ownsTree(dir string) bool { return s.trees != nil && s.trees.Owns(dir) }

// GiveTree gives a tree no session works in back to the clone, which keeps
// it warm, or removes it if enough are kept: then the agent server's
// instance for it is freed.
func (s *Set) GiveTree(ctx context.Context, dir string) {
	if !s.ownsTree(dir) {
		return
	}
	kept, err := s.trees.GiveTree(ctx, dir, s.cfg.Keep())
	if err != nil {
		s.log.Warn("giving back a work tree failed", "dir", dir, "err", err)
	}
	if !kept {
		s.dispose(ctx, dir)
	}
}

// removeTree removes a work tree of ours and disposes of the agent server's
// instance for it. Failures cost only disk and memory: logged.
func (s *Set) removeTree(ctx context.Context, dir string) {
	if !s.ownsTree(dir) {
		return
	}
	if err := s.trees.RemoveTree(ctx, dir); err != nil {
		s.log.Warn("removing a work tree failed", "dir", dir, "err", err)
	}
	s.dispose(ctx, dir)
}

func (s *Set) dispose(ctx context.Context, dir string) {
	if err := s.agent.Dispose(ctx, dir); err != nil {
		s.log.Debug("disposing of the agent server's instance for a work tree failed", "dir", dir, "err", err)
	}
}

// warmFor is how long a free work tree is kept for the next session; then
// it is removed and the agent server's instance for it freed.
const warmFor = 10 * time.Minute

// RetireTrees removes the free trees unused since idleSince and frees the
// agent server's instances for them, and for trees removed since it last
// ran. No session works in them.
func (s *Set) RetireTrees(ctx context.Context, idleSince time.Time) {
	if s.trees == nil {
		return
	}
	for _, dir := range s.trees.RetireTrees(ctx, idleSince) {
		s.dispose(ctx, dir)
	}
}

// PruneTrees removes the work trees a killed pool left, but for keep: those
// of the sessions this start adopted.
func (s *Set) PruneTrees(ctx context.Context, keep []string) {
	if s.trees == nil {
		return
	}
	if err := s.trees.PruneTrees(ctx, keep); err != nil {
		s.log.Warn("removing work trees left behind failed", "err", err)
	}
}

// Sweep deletes the sessions release could not, now that the agent server
// may answer again. Watch calls it, and the pool once more at exit.
func (s *Set) Sweep(ctx context.Context) {
	s.mu.Lock()
	pending := make([]orphan, 0, len(s.orphans))
	for o := range s.orphans {
		pending = append(pending, o)
	}
	s.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	byDir, listed := s.sessionsByDir(ctx, pending)
	for _, o := range pending {
		ids := []string{o.id}
		if o.id == "" {
			if !listed {
				continue
			}
			ids = byDir[o.dir]
		}
		if s.deleteAll(ctx, ids) {
			if len(ids) > 0 {
				s.log.Info("deleted a session left by a failed start or end", "sessions", ids, "dir", o.dir)
			}
			s.mu.Lock()
			delete(s.orphans, o)
			s.mu.Unlock()
		}
	}
}

// sessionsByDir lists the agent server's sessions by directory, if an
// orphan needs it.
func (s *Set) sessionsByDir(ctx context.Context, pending []orphan) (map[string][]string, bool) {
	need := false
	for _, o := range pending {
		need = need || o.id == ""
	}
	if !need {
		return nil, false
	}
	sessions, err := s.agent.Sessions(ctx)
	if err != nil {
		return nil, false
	}
	out := map[string][]string{}
	for _, ss := range sessions {
		out[ss.Directory] = append(out[ss.Directory], ss.ID)
	}
	return out, true
}

func (s *Set) deleteAll(ctx context.Context, ids []string) bool {
	for _, id := range ids {
		if err := s.agent.Delete(ctx, id); err != nil {
			return false
		}
	}
	return true
}
