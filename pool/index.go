package pool

import (
	"context"
	"errors"
	"sort"
	"time"

	"pool/forge"
	"pool/forgejo"
	"pool/lifecycle"
)

// FullListEvery is how often a cycle lists every open PR instead of asking
// for the delta since the last cycle: the safety net for a missed change.
// The pools of several repositories in one process take turns (Deps.FullList).
const FullListEvery = 20

// index is the discovery loop's view of the open PRs, kept between cycles so
// a quiet cycle costs one forge request whatever the number of open PRs. It
// is owned by the discovery loop goroutine alone.
//
// The forge stamps update times in whole seconds, so a PR read in the same
// second as a later update carries the same stamp as that update. A PR's copy
// is therefore trusted only for updates stamped in a second before the forge
// clock at which the copy was read (final); any other change is read again.
type index struct {
	open   map[int]forge.PR
	final  map[int]time.Time // per PR: updates stamped before this are in our copy
	readAt map[int]time.Time // per PR: when our copy was asked for, by this process's clock
	mark   time.Time         // the next delta asks from here
	cycles int
	owed   bool // a full listing was due and its turn's gate refused it
	seen   map[int]seenPR
	unread map[int]*unreadPR // PRs whose read failed (unread.go)
}

// seenPR is what the last step of a PR decided, to skip the next step while
// the PR has not changed. Whether the forge can merge it and whether its
// author lets maintainers edit it change no update time: a copy from a
// full listing that shows either changed is decided again.
type seenPR struct {
	updated    time.Time
	head       string
	mergeable  bool
	mayEdit    bool
	track      lifecycle.Track // a slot may change the track without the PR changing
	rules      int             // the protection reading decided under
	act        lifecycle.Action
	quietUntil time.Time // no new step before this unless the PR changes
}

// listPRs returns the open PRs, listing them all now and then and otherwise
// reading only what changed since the last cycle.
func (p *Pool) listPRs(ctx context.Context) ([]forge.PR, error) {
	p.takeFresher()
	ix := &p.index
	ix.cycles++
	due := ix.owed || ix.cycles%p.turn.Every == p.turn.Phase%p.turn.Every
	if ix.open == nil || due && (p.turn.Gate == nil || p.turn.Gate()) {
		ix.owed = false
		return p.listAll(ctx)
	}
	ix.owed = due // refused by the gate: at a later cycle
	changes, served, err := p.forge.ChangedPRs(ctx, p.cfg.Owner, p.cfg.Name, ix.mark.Add(-time.Second))
	if err != nil {
		return nil, err
	}
	for _, ch := range append(changes, ix.unreadChanges(p.now())...) {
		if err := p.applyChange(ctx, ch, served); err != nil {
			return nil, err
		}
	}
	if !served.IsZero() {
		ix.mark = served // everything stamped before it is in hand
	}
	return ix.sorted(), nil
}

// listAll lists every open PR. It first reads the forge's clock (an empty
// delta from the future), so the listing, made after, holds every update
// stamped before that moment.
func (p *Pool) listAll(ctx context.Context) ([]forge.PR, error) {
	if p.index.open != nil { // New read it for the first
		p.followBase(ctx)
	}
	p.refreshProtection(ctx) // a rule change is noticed at the latest with the next full listing
	_, served, err := p.forge.ChangedPRs(ctx, p.cfg.Owner, p.cfg.Name, p.now().Add(24*time.Hour))
	if err != nil {
		return nil, err
	}
	asked := p.askStamp()
	prs, err := p.forge.OpenPRs(ctx, p.cfg.Owner, p.cfg.Name)
	if err != nil {
		return nil, err
	}
	ix := &p.index
	for _, e := range ix.unread {
		e.change = nil // the listing holds every open PR as it is now
	}
	ix.open = make(map[int]forge.PR, len(prs))
	ix.final = make(map[int]time.Time, len(prs))
	ix.readAt = make(map[int]time.Time, len(prs))
	for _, pr := range prs {
		ix.open[pr.Number] = pr
		ix.final[pr.Number] = served
		ix.readAt[pr.Number] = asked
		ix.advance(pr.Updated)
	}
	if !served.IsZero() {
		ix.mark = served
	}
	return ix.sorted(), nil
}

// applyChange reads one changed PR again, unless our copy is known to hold
// that update already.
func (p *Pool) applyChange(ctx context.Context, ch forgejo.PRChange, served time.Time) error {
	ix := &p.index
	if ch.State != "open" {
		delete(ix.open, ch.Number)
		if e := ix.unread[ch.Number]; e != nil {
			e.change = nil
		}
		return nil
	}
	if known, ok := ix.open[ch.Number]; ok && known.Updated.Equal(ch.Updated) && ch.Updated.Before(ix.final[ch.Number]) {
		return nil
	}
	if !ix.readDue(ch.Number, p.now()) {
		ix.unread[ch.Number].change = &ch // read once its back-off ends
		return nil
	}
	asked := p.askStamp()
	pr, err := p.forge.PR(ctx, p.cfg.Owner, p.cfg.Name, ch.Number)
	if errors.Is(err, forgejo.ErrUnauthorized) || ctx.Err() != nil {
		return err
	}
	if err != nil && !errors.Is(err, forgejo.ErrNotFound) {
		p.readFailed(ch.Number, &ch, err)
		return nil
	}
	p.readOK(ch.Number)
	if err != nil { // gone
		delete(ix.open, ch.Number)
		return nil
	}
	if pr.State != "open" {
		delete(ix.open, pr.Number)
		return nil
	}
	ix.open[pr.Number] = pr
	ix.final[pr.Number] = served // read after the delta: at least as new as served
	ix.readAt[pr.Number] = asked
	return nil
}

func (ix *index) advance(t time.Time) {
	if t.After(ix.mark) {
		ix.mark = t
	}
}

func (ix *index) sorted() []forge.PR {
	out := make([]forge.PR, 0, len(ix.open))
	for _, pr := range ix.open {
		out = append(out, pr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}

// unchanged returns the last decision for a PR that has not changed since
// and whose quiet period has not ended.
func (ix *index) unchanged(pr forge.PR, t lifecycle.Track, rules int, now time.Time) (lifecycle.Action, bool) {
	s, ok := ix.seen[pr.Number]
	if !ok || !s.updated.Equal(pr.Updated) || s.head != pr.HeadSHA || s.mergeable != pr.Mergeable || s.mayEdit != pr.MaintainerCanEdit ||
		s.track != t || s.rules != rules || !now.Before(s.quietUntil) {
		return lifecycle.Action{}, false
	}
	return s.act, true
}

// forget drops the last decision on PR n: the next cycle decides it.
func (ix *index) forget(n int) { delete(ix.seen, n) }

func (ix *index) remember(pr forge.PR, t lifecycle.Track, rules int, act lifecycle.Action, quietUntil time.Time) {
	if ix.seen == nil {
		ix.seen = map[int]seenPR{}
	}
	ix.seen[pr.Number] = seenPR{updated: pr.Updated, head: pr.HeadSHA, mergeable: pr.Mergeable, mayEdit: pr.MaintainerCanEdit,
		track: t, rules: rules, act: act, quietUntil: quietUntil}
}

// quietUntil says how long a decision holds while the PR does not change:
// states that wait for a push or a human hold until the PR changes (or a
// full listing shows what changes no update time: seenPR); a conflict a
// reviewer reported holds until ConflictSettle has passed; a PR
// backing off (after a session, or a merge refused for the quota) holds
// until its back-off ends; one whose merge the forge refused for another
// rule until its back-off ends or a sixth of the claim TTL has passed
// (its checks and base change no update time); a PR waiting for a slot or held
// by another pool's claim is looked at again after a sixth of the claim TTL
// (any comment or review changes the PR before that); approved PRs waiting
// to merge are looked at every cycle, because commit statuses do not change
// a PR's update time.
func (p *Pool) quietUntil(t lifecycle.Track, act lifecycle.Action, now time.Time) time.Time {
	if act.Diagnostic {
		return time.Time{}
	}
	forever := now.Add(100 * 365 * 24 * time.Hour)
	switch act.Kind {
	case lifecycle.Skip:
		return forever
	case lifecycle.Review:
		return now.Add(p.cfg.ClaimTTL / 6)
	case lifecycle.Wait:
	default:
		return time.Time{}
	}
	switch t.State {
	case lifecycle.Conflict:
		if t.ConflictSHA != t.HeadSHA && t.ConflictHint == t.HeadSHA {
			return t.HintedAt.Add(lifecycle.ConflictSettle) // only the forge confirms a reviewer's conflict
		}
		return forever
	case lifecycle.ChangesRequested, lifecycle.Commented, lifecycle.AwaitingHuman, lifecycle.WorkInProgress:
		return forever
	case lifecycle.Unreviewed:
		if now.Before(t.NotBefore) {
			return t.NotBefore
		}
		return now.Add(p.cfg.ClaimTTL / 6)
	case lifecycle.QuotaExceeded:
		return t.RefusedUntil
	case lifecycle.MergeRefused:
		// What the refusal depends on and moves no update time (the
		// checks, the base) is read again every sixth of the claim TTL,
		// not every cycle: a PR whose merge a hook refuses for 8 hours
		// cost about 390 requests an hour (the simulation).
		if look := now.Add(p.cfg.ClaimTTL / 6); t.RefusedUntil.After(look) {
			return look
		}
		return t.RefusedUntil
	}
	return time.Time{}
}

// fresherRead hands the discovery loop a read of a PR asked for at asked:
// the merge queue read another head than the one the loop decided on, or
// gives the PR back. A push need not change the PR's update time at once
// (the forge stamps it when it has processed the push), so without it the
// loop could decide the old head again, and the queue leave it again,
// until the next full listing.
func (p *Pool) fresherRead(pr forge.PR, asked time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fresher == nil {
		p.fresher = map[int]freshRead{}
	}
	p.fresher[pr.Number] = freshRead{pr: pr, asked: asked}
}

// askStamp is when the pool asks the forge for a PR or the list of them,
// by its clock, and later than every stamp it gave before: reads asked at
// one instant of a coarse clock (or the simulation's) stay in the order
// they were asked, so that the queue's read of a PR the loop had listed
// and queued at that instant replaces the listing's copy (takeFresher).
func (p *Pool) askStamp() time.Time {
	p.askMu.Lock()
	defer p.askMu.Unlock()
	now := p.now()
	if !now.After(p.lastAsk) {
		now = p.lastAsk.Add(time.Nanosecond)
	}
	p.lastAsk = now
	return now
}

// freshRead is a read of a PR the merge queue made, and when it asked.
type freshRead struct {
	pr    forge.PR
	asked time.Time
}

// takeFresher puts the queue's reads of open PRs in the index where they
// were asked for after the index's copy (an older read must never replace
// a newer one: the loop would decide a head the PR has left), before the
// listing applies what the forge says changed since. Whether a PR is open
// is the listing's to say.
func (p *Pool) takeFresher() {
	p.mu.Lock()
	fresh := p.fresher
	p.fresher = nil
	p.mu.Unlock()
	ix := &p.index
	for n, r := range fresh {
		_, listed := ix.open[n]
		if listed && r.pr.State == "open" && !r.pr.Merged && r.asked.After(ix.readAt[n]) {
			ix.open[n] = r.pr
			ix.readAt[n] = r.asked
		}
	}
}
