package pool

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
// for sweep.
func (p *Pool) release(ctx context.Context, o orphan) {
	if o.id != "" {
		err := p.agent.Delete(ctx, o.id)
		if err == nil {
			p.giveTree(ctx, o.dir)
			return
		}
		p.log.Warn("deleting a session failed; will retry", "session", o.id, "err", err)
		p.keepOrphan(o)
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

// giveTree gives a tree no session works in back to the clone, which keeps
// it warm, or removes it if enough are kept: then the agent server's
// instance for it is freed.
func (p *Pool) giveTree(ctx context.Context, dir string) {
	if !p.ownsTree(dir) {
		return
	}
	kept, err := p.trees.GiveTree(ctx, dir, p.slots.perRepo())
	if err != nil {
		p.log.Warn("giving back a work tree failed", "dir", dir, "err", err)
	}
	if !kept {
		p.dispose(ctx, dir)
	}
}

// removeTree removes a work tree of ours and disposes of the agent server's
// instance for it. Failures cost only disk and memory: logged.
func (p *Pool) removeTree(ctx context.Context, dir string) {
	if !p.ownsTree(dir) {
		return
	}
	if err := p.trees.RemoveTree(ctx, dir); err != nil {
		p.log.Warn("removing a work tree failed", "dir", dir, "err", err)
	}
	p.dispose(ctx, dir)
}

func (p *Pool) dispose(ctx context.Context, dir string) {
	if err := p.agent.Dispose(ctx, dir); err != nil {
		p.log.Debug("disposing of the agent server's instance for a work tree failed", "dir", dir, "err", err)
	}
}

// warmFor is how long a free work tree is kept for the next session; then
// it is removed and the agent server's instance for it freed.
const warmFor = 10 * time.Minute

// retireTrees removes the free trees unused since idleSince and frees the
// agent server's instances for them, and for trees removed since it last
// ran. No session works in them.
func (p *Pool) retireTrees(ctx context.Context, idleSince time.Time) {
	if p.trees == nil {
		return
	}
	for _, dir := range p.trees.RetireTrees(ctx, idleSince) {
		p.dispose(ctx, dir)
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

// RetireTrees, once the pool has run, removes every free work tree and
// frees the agent server's instances for them; the trees of sessions left
// running stay.
func (p *Pool) RetireTrees() {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.ShutdownTimeout)
	defer cancel()
	p.retireTrees(ctx, time.Now())
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
