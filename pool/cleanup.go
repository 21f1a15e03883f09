package pool

import (
	"context"
)

// orphan is a session to delete: by id, or, when the agent server may have
// made it without the pool learning its id, every session working in dir.
// dir is also the work tree to remove once the session is gone.
type orphan struct {
	id, dir string
}

// release ends a session's life: it deletes the session, removes its work
// tree and frees the agent server's instance for it. A session the server
// does not let it delete now is kept for sweep.
func (p *Pool) release(ctx context.Context, o orphan) {
	if o.id != "" {
		if err := p.agent.Delete(ctx, o.id); err != nil {
			p.log.Warn("deleting a session failed; will retry", "session", o.id, "err", err)
			p.keepOrphan(o)
		}
	} else if p.ownsTree(o.dir) {
		p.keepOrphan(o) // only sweep can find it
	}
	p.removeTree(ctx, o.dir)
}

func (p *Pool) keepOrphan(o orphan) {
	p.mu.Lock()
	p.orphans[o] = true
	p.mu.Unlock()
}

func (p *Pool) ownsTree(dir string) bool { return p.trees != nil && p.trees.Owns(dir) }

// removeTree removes a work tree of ours and disposes of the agent server's
// instance for it. Failures cost only disk and memory: logged.
func (p *Pool) removeTree(ctx context.Context, dir string) {
	if !p.ownsTree(dir) {
		return
	}
	if err := p.trees.RemoveTree(ctx, dir); err != nil {
		p.log.Warn("removing a work tree failed", "dir", dir, "err", err)
	}
	if err := p.agent.Dispose(ctx, dir); err != nil {
		p.log.Debug("disposing of the agent server's instance for a work tree failed", "dir", dir, "err", err)
	}
}

// pruneTrees removes the work trees a killed pool left, but for keep: those
// of the sessions this start adopted.
func (p *Pool) pruneTrees(ctx context.Context, keep []string) {
	if p.trees == nil {
		return
	}
	if err := p.trees.PruneTrees(ctx, keep); err != nil {
		p.log.Warn("removing work trees left behind failed", "err", err)
	}
}

// sweep deletes the sessions release could not, now that the agent server
// may answer again. The watcher calls it, and Run once more at exit.
func (p *Pool) sweep(ctx context.Context) {
	p.mu.Lock()
	pending := make([]orphan, 0, len(p.orphans))
	for o := range p.orphans {
		pending = append(pending, o)
	}
	p.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	byDir, listed := p.sessionsByDir(ctx, pending)
	for _, o := range pending {
		ids := []string{o.id}
		if o.id == "" {
			if !listed {
				continue
			}
			ids = byDir[o.dir]
		}
		if p.deleteAll(ctx, ids) {
			if len(ids) > 0 {
				p.log.Info("deleted a session left by a failed start or end", "sessions", ids, "dir", o.dir)
			}
			p.mu.Lock()
			delete(p.orphans, o)
			p.mu.Unlock()
		}
	}
}

// sessionsByDir lists the agent server's sessions by directory, if an
// orphan needs it.
func (p *Pool) sessionsByDir(ctx context.Context, pending []orphan) (map[string][]string, bool) {
	need := false
	for _, o := range pending {
		need = need || o.id == ""
	}
	if !need {
		return nil, false
	}
	sessions, err := p.agent.Sessions(ctx)
	if err != nil {
		return nil, false
	}
	out := map[string][]string{}
	for _, s := range sessions {
		out[s.Directory] = append(out[s.Directory], s.ID)
	}
	return out, true
}

func (p *Pool) deleteAll(ctx context.Context, ids []string) bool {
	for _, id := range ids {
		if err := p.agent.Delete(ctx, id); err != nil {
			return false
		}
	}
	return true
}
