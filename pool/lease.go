package pool

import (
	"context"
	"errors"
	"time"

	"pool/clone"
	"pool/train"
)

// Leases hold the train of a base for one pool at a time (README, "Merge
// trains"; clone/lease.go). The clone implements it.
type Leases interface {
	Lease(ctx context.Context, base string) (commit, holder string, err error)
	TakeLease(ctx context.Context, base, holder, expect string, now time.Time) (string, error)
	DropLease(ctx context.Context, base, held string) error
}

var _ Leases = (*clone.Clone)(nil)

// trainLease is the merge queue worker's hold on the train lease of its
// base. Only the worker's goroutine uses it.
type trainLease struct {
	base    string
	commit  string      // the lease commit this pool wrote; "" when it holds none
	written time.Time   // when it wrote commit
	seen    train.Lease // the lease as this pool last read it
	said    string      // the holder this pool last said it waits for
	next    time.Time   // a waiting pool reads the lease again no sooner
}

// leaseTTL is how long a lease that does not move holds the train: the
// claim TTL, after which a silent pool's work is taken over.
func (p *Pool) leaseTTL() time.Duration { return p.cfg.ClaimTTL }

// holdLease reports whether this pool may run the train of the base now:
// it holds the lease, renewed every third of the TTL, or takes it when no
// pool holds it or its holder let it go stale. A pool that may not waits:
// until holdLease says otherwise, wait is when to ask again. Its riders
// are left to the holder, which merges them: a pool that merged them one
// by one meanwhile would update their branches under the holder's cars,
// which then could not land, and spend a CI run per PR twice.
func (m *merger) holdLease(ctx context.Context, want bool) (ok bool, wait time.Duration) {
	p := m.p
	leases, _ := p.cars.(Leases)
	if leases == nil {
		return true, 0 // no clone that can hold one: the pool is alone
	}
	l := m.lease
	if l == nil || l.base != p.Base() {
		l = &trainLease{base: p.Base()}
		m.lease = l
	}
	now, ttl := p.now(), p.leaseTTL()
	if l.commit != "" {
		if now.Sub(l.written) < ttl/3 {
			return true, 0
		}
		commit, err := leases.TakeLease(ctx, l.base, p.instance, l.commit, now)
		switch {
		case err == nil:
			l.commit, l.written = commit, now
			return true, 0
		case errors.Is(err, clone.ErrLeaseLost):
			p.log.Warn("merge train: another pool took the train lease over; this pool's train stops", "branch", l.base)
			m.lostLease()
		default:
			p.log.Warn("merge train: renewing the train lease failed", "branch", l.base, "err", err)
			// Until half the TTL, no other pool can have taken it over.
			return now.Sub(l.written) < ttl/2, min(trainPoll, p.cfg.PollInterval)
		}
	}
	if !want || now.Before(l.next) {
		return false, max(l.next.Sub(now), 0)
	}
	l.next = now.Add(min(p.cfg.PollInterval, ttl/6))
	commit, holder, err := leases.Lease(ctx, l.base)
	if err != nil {
		p.log.Warn("merge train: reading the train lease failed; waiting", "branch", l.base, "err", err)
		return false, l.next.Sub(now)
	}
	l.seen = l.seen.Seen(commit, holder, now)
	verdict := train.JudgeLease(l.seen, p.instance, now, ttl)
	if verdict == train.LeaseHeld {
		if l.said != commit {
			l.said = commit
			p.log.Info("merge train: another pool runs the train of the base; this pool waits", "branch", l.base, "holder", holder)
		}
		return false, l.next.Sub(now)
	}
	taken, err := leases.TakeLease(ctx, l.base, p.instance, commit, now)
	if err != nil {
		if !errors.Is(err, clone.ErrLeaseLost) {
			p.log.Warn("merge train: taking the train lease failed; waiting", "branch", l.base, "err", err)
		}
		return false, l.next.Sub(now)
	}
	l.commit, l.written, l.said = taken, now, ""
	args := []any{"branch", l.base, "lease", taken}
	if verdict == train.LeaseStale {
		args = append(args, "took_over", holder)
	}
	p.log.Info("merge train: the train lease is this pool's", args...)
	return true, 0
}

// lostLease forgets the train: another pool runs it now, and replaces the
// cars on the train branches with its own.
func (m *merger) lostLease() {
	m.lease.commit = ""
	if m.rides != nil {
		m.rides.t.Cars = nil
	}
}

// dropLease gives the lease back once the train has no car and no rider:
// another pool's riders may ride then.
func (m *merger) dropLease(ctx context.Context) {
	l := m.lease
	leases, _ := m.p.cars.(Leases)
	if l == nil || l.commit == "" || leases == nil || len(m.rides.t.Cars) > 0 || len(m.rides.riding) > 0 {
		return
	}
	m.release(ctx, leases, "the train is empty")
}

// release gives the held lease back, saying why; a lease another pool took
// over meanwhile is left to it, and one that cannot be given back goes
// stale.
func (m *merger) release(ctx context.Context, leases Leases, why string) {
	l := m.lease
	if err := leases.DropLease(ctx, l.base, l.commit); err != nil && !errors.Is(err, clone.ErrLeaseLost) {
		m.p.log.Warn("merge train: giving the train lease back failed; it goes stale", "branch", l.base, "why", why, "err", err)
	} else {
		m.p.log.Info("merge train: the train lease is given back", "branch", l.base, "why", why)
	}
	l.commit = ""
}

// giveBack gives the train lease back as the pool stops (its idle limit,
// a signal): the pools that wait for it take it at their next read instead
// of waiting for it to go stale (TestTwoPoolsRunOneTrainOnTheForge in CI:
// the holder exited at its idle limit still holding it, and the other pool
// waited silently for the lease TTL, 30 minutes, its merged riders
// unread). A killed pool's lease still goes stale.
func (m *merger) giveBack(ctx context.Context) {
	l := m.lease
	leases, _ := m.p.cars.(Leases)
	if l == nil || l.commit == "" || leases == nil {
		return
	}
	m.release(ctx, leases, "the pool stops")
}
