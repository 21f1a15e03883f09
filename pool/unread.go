package pool

import (
	"time"

	"pool/forgejo"
)

// A PR whose read fails (the forge answers 500 for a PR it cannot show) is
// skipped, read again after a back-off, and logged at each failure: the
// rest of the repository is decided meanwhile. Before, one such PR failed
// every cycle, and no other PR was decided.

// unreadMax is the longest wait before a PR whose reads keep failing is
// read again.
const unreadMax = 10 * time.Minute

// unreadPR is a PR whose last read failed.
type unreadPR struct {
	fails  int
	next   time.Time         // not read again before this
	change *forgejo.PRChange // a change of it not read yet: read again when due
}

// readDue reports whether PR n may be read now: it is not backing off.
func (ix *index) readDue(n int, now time.Time) bool {
	e, ok := ix.unread[n]
	return !ok || !now.Before(e.next)
}

// readFailed records that PR n (changed as ch, if not nil) could not be
// read, and logs it.
func (p *Pool) readFailed(n int, ch *forgejo.PRChange, err error) {
	ix := &p.index
	if ix.unread == nil {
		ix.unread = map[int]*unreadPR{}
	}
	e := ix.unread[n]
	if e == nil {
		e = &unreadPR{}
		ix.unread[n] = e
	}
	e.fails++
	wait := retryWait(e.fails, p.cfg.PollInterval, unreadMax, err)
	e.next = p.now().Add(wait)
	if ch != nil {
		e.change = ch
	}
	p.log.Warn("reading the PR failed; skipping it, the others are decided", "pr", n, "failures", e.fails,
		"again_in", wait.Round(time.Millisecond), "err", err)
}

// readOK forgets that PR n could not be read.
func (p *Pool) readOK(n int) { delete(p.index.unread, n) }

// unreadChanges are the changes not read yet whose back-off has ended.
func (ix *index) unreadChanges(now time.Time) []forgejo.PRChange {
	var out []forgejo.PRChange
	for n, e := range ix.unread {
		if e.change != nil && ix.readDue(n, now) {
			out = append(out, *e.change)
		}
	}
	return out
}
