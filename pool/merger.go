package pool

import (
	"context"
	"errors"
	"slices"
	"time"

	"pool/forge"
	"pool/forgejo"
	"pool/lifecycle"
)

// merger is the merge queue's worker: one goroutine that reads the queued
// PRs, asks lifecycle to decide each once more on fresh reads, and makes the
// merge (or update) call itself. It records what it decided and what the
// forge answered, and posts the notes those ask for; any other decision it
// hands back to the discovery loop. It never carries out a decision of the
// loop's (act), so it never queues a PR again.
type merger struct {
	p     *Pool
	q     *mergeQueue
	rides *rides      // the base's merge train (train.go); nil while trains are off
	lease *trainLease // its hold on the train lease of the base (lease.go)
}

// run works the merge queue until ctx ends (no merge starts after that);
// a merge in flight runs on work, which outlives ctx by the shutdown
// timeout.
func (m *merger) run(ctx, work context.Context) {
	defer m.giveBack(work)
	defer m.sweep(work) // the landed cars' branches, while the lease is held
	for ctx.Err() == nil {
		wait := m.turn(work)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-m.q.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// turn reads the due entries, oldest first, until one reads mergeable, and
// merges that one. It returns how long to wait for the next turn.
func (m *merger) turn(ctx context.Context) (wait time.Duration) {
	p := m.p
	if p.trainsOn() { // the train's riders are its own; the others merge one by one below
		next := m.trainStep(ctx)
		m.q.showTrain(m.rides.t.Cars)
		defer func() { wait = min(wait, next) }()
	} else {
		m.q.showTrain(nil)
	}
	entries, _ := m.q.due(p.now())
	entries = holderFirst(m.notRiding(entries), p.updateHolder())
	head, paced := m.q.next(p.now())
	if paced && !m.riding(head.n) {
		if wait := head.notBefore.Sub(p.now()); wait > 0 {
			return wait
		}
		entries = []queued{head}
	}
	for _, e := range entries {
		pr, err := m.read(ctx, e.n)
		switch {
		case errors.Is(err, forgejo.ErrUnauthorized) || ctx.Err() != nil:
			return time.Minute
		case err != nil:
			p.log.Warn("merge queue: reading the PR failed; waiting", "pr", e.n, "err", err)
			m.q.backOff(e.n, p.now(), err)
			continue
		case pr.State != "open" || pr.Merged || pr.HeadSHA != e.head || pr.BaseRef != p.Base():
			m.leave(ctx, pr)
			continue
		case !pr.Mergeable && paced:
			p.log.Debug("merge queue: the forge has not tested the next PR against the base yet; reading it again soon", "pr", e.n)
			m.unready(e)
			m.q.paced(e.n, p.now())
			return 0
		case !pr.Mergeable:
			p.log.Debug("merge queue: the forge reads the PR not mergeable; waiting", "pr", e.n)
			m.unready(e)
			m.q.notReady(e.n, p.now())
			continue
		}
		m.readMergeable(e)
		moved := m.q.unpace(e.n) // the forge has tested it: a merge paces the queue again, anything else does not
		m.mergeOne(ctx, pr, moved)
		return 0
	}
	dueNow, next := m.q.due(p.now())
	switch {
	case len(m.notRiding(dueNow)) > 0:
		return 0
	case next.IsZero():
		return time.Hour // nothing queued: an add wakes the worker
	}
	return max(next.Sub(p.now()), 0)
}

// unready warns the operator, on the queue's back-off (unreadyWarnAfter),
// of a queued PR the forge keeps reading not mergeable: each read is
// logged at Debug only, and nothing else would say why the PR waits.
func (m *merger) unready(e queued) {
	waited, warn := m.q.unready(e.n, m.p.now())
	if !warn {
		return
	}
	m.p.log.Warn("merge queue: the forge has read the PR not mergeable for long; waiting",
		"pr", e.n, "head", forge.Short(e.head), "base", m.p.Base(), "waited", waited.Round(time.Second), "check", unreadyCheck)
}

// unreadyCheck is what the operator can look at when warned of a PR the
// forge keeps reading not mergeable.
const unreadyCheck = "a conflict with the base, or the forge's queue of PR tests (it has not tested the PR against the base again); " +
	"a push to the PR, or a merge into the base by hand, has the forge test it again"

// readMergeable ends a queued PR's wait for the forge; a wait the operator
// was warned of is said to be over.
func (m *merger) readMergeable(e queued) {
	if waited := m.q.mergeable(e.n, m.p.now()); waited > 0 {
		m.p.log.Info("merge queue: the forge reads the PR mergeable after a long wait", "pr", e.n,
			"head", forge.Short(e.head), "waited", waited.Round(time.Second))
	}
}

// read reads PR n for the merge queue, noting when it asked.
func (m *merger) read(ctx context.Context, n int) (forge.PR, error) {
	asked := m.p.askStamp()
	pr, err := m.p.forge.PR(ctx, m.p.cfg.Owner, m.p.cfg.Name, n)
	m.q.asked(n, asked)
	return pr, err
}

// mergeOne decides once more on fresh reads and, if the decision still is
// to merge (or update), makes the call. Any other decision is recorded,
// its note or diagnostic posted, and the PR handed back to the discovery
// loop, which decides it again. A PR whose merge the forge refused for good
// leaves the queue too. moved is when the queue's last merge was answered,
// if this is the first PR read mergeable after it.
func (m *merger) mergeOne(ctx context.Context, pr forge.PR, moved time.Time) {
	p := m.p
	d, t, err := p.decideReading(ctx, pr, mergeFacts) // the merge's reads at once: the call waits for them
	if err != nil {
		p.log.Warn("merge queue: deciding failed; waiting", "pr", pr.Number, "err", err)
		m.q.notReady(pr.Number, p.now())
		return
	}
	switch d.Kind {
	case lifecycle.Update:
		m.update(ctx, pr)
		return
	case lifecycle.Merge:
	default:
		m.say(ctx, pr, t, d.Action)
		m.handBack(pr)
		return
	}
	if held, err := m.reviewsHeld(ctx, pr, d); err != nil || !held {
		if err != nil {
			p.log.Warn("merge queue: reading the reviews again before the merge failed; waiting", "pr", pr.Number, "err", err)
		}
		m.q.notReady(pr.Number, p.now()) // the next turn decides again, on fresh reads
		return
	}
	res, err := m.merge(ctx, pr)
	switch {
	case err != nil:
		p.log.Warn("merge queue: the merge call failed; waiting", "pr", pr.Number, "err", err)
		m.q.backOff(pr.Number, p.now(), err)
	case res.Outcome == forge.MergeNotReady:
		if m.q.tryLater(pr.Number, moved, p.now()) {
			m.checkOnBase(ctx, pr)
		}
	case res.Outcome == forge.MergeDone || res.Outcome == forge.MergeAlready:
		m.q.remove(pr.Number)
		m.settle(ctx, pr.Number)
		m.q.merged(p.now()) // the base moved: the forge tests the next PR against it again
	default:
		m.q.remove(pr.Number)
	}
}

// reviewsFreshFor is how long the reviews a merge decision read are taken
// as the forge's: a decision whose reads began longer ago than that (a slow
// forge) reads the reviews again just before its merge call
// (merger.reviewsHeld).
const reviewsFreshFor = time.Second

// reviewsHeld reports whether the reviews decision d read still stand
// before the merge call: a decision whose reads began reviewsFreshFor ago
// or more reads them again. A review filed meanwhile (a human's request
// for changes while the checks were read slowly) fails it: the queue
// decides again. The window left is the time from the last read of the
// reviews to the forge's handling of the merge call: at most
// reviewsFreshFor and one request, where it was the whole decision's
// reads and the call (seed 34 of the simulation: 26 s). A train's landing
// asks it too, before the push of the car to the PR's branch and before
// each merge call of the car (merger.reviewsStand).
func (m *merger) reviewsHeld(ctx context.Context, pr forge.PR, d decision) (bool, error) {
	p := m.p
	if !d.reviewsRead || p.now().Sub(d.at) < reviewsFreshFor {
		return true, nil
	}
	fresh, err := p.forge.Reviews(ctx, p.cfg.Owner, p.cfg.Name, pr.Number)
	if err != nil {
		return false, err
	}
	if slices.EqualFunc(d.reviews, p.vouch(pr.Number, fresh), sameReview) {
		return true, nil
	}
	p.log.Info("merge queue: the reviews changed since the merge decision read them; deciding again", "pr", pr.Number,
		"read", p.now().Sub(d.at))
	return false, nil
}

// sameReview: a and b are one review in one state.
func sameReview(a, b forge.Review) bool {
	return a.ID == b.ID && a.State == b.State && a.CommitID == b.CommitID && a.Stale == b.Stale &&
		a.Dismissed == b.Dismissed && a.Official == b.Official && a.Vouched == b.Vouched && a.Author == b.Author
}

// say posts what an action of the queue's asks to say on the PR (its note,
// its diagnostic) and records its marks; the rest of it is the loop's.
func (m *merger) say(ctx context.Context, pr forge.PR, t lifecycle.Track, a lifecycle.Action) {
	if err := m.p.carryOut(ctx, pr, t, a, m.p.post); err != nil {
		m.p.log.Warn("merge queue: posting the note failed; the next decision asks again", "pr", pr.Number, "err", err)
	}
}

// merge asks the forge to merge at the head the decision saw and folds the
// answer into the track. Only the forge's word that it merged counts: the
// caller reads the PR again.
func (m *merger) merge(ctx context.Context, pr forge.PR) (forge.MergeResult, error) {
	return m.mergeAs(ctx, pr, m.p.cfg.MergeStyle)
}

// mergeAs is merge in style (a train lands its cars fast-forward only).
func (m *merger) mergeAs(ctx context.Context, pr forge.PR, style string) (forge.MergeResult, error) {
	res, err := m.p.forge.Merge(ctx, m.p.cfg.Owner, m.p.cfg.Name, pr.Number, forgejo.MergeOptions{
		Style: style, HeadSHA: pr.HeadSHA})
	return m.mergeAnswer(ctx, pr, res, err)
}

// mergeAnswer folds the forge's answer res (or err) to the merge of pr
// into the track, as merge does.
func (m *merger) mergeAnswer(ctx context.Context, pr forge.PR, res forge.MergeResult, err error) (forge.MergeResult, error) {
	p := m.p
	if err != nil && res.Status == 0 {
		return res, err
	}
	p.log.Info("merge answered", "pr", pr.Number, "outcome", res.Outcome, "status", res.Status, "message", res.Message)
	p.metrics.MergeCalled(string(res.Outcome))
	p.book.MergeAnswered(pr.Number, res)
	if res.Outcome == forge.MergeConflict || (res.Outcome == forge.MergeBlocked && res.Rule == forge.RuleUnknown) {
		if outcome, err := m.recheck(ctx, pr, res.Outcome); err != nil || outcome != res.Outcome {
			res.Outcome = outcome
			return res, err
		}
	}
	if res.Rule != "" {
		p.learn(res.Rule)
	}
	next, act := p.mergeAnswered(pr.Number, pr.HeadSHA, res)
	return res, p.carryOut(ctx, pr, next, act, p.post)
}

// recheck re-reads a PR whose merge answered outcome, a conflict (409) or
// a refusal for no rule the pool knows, before it is taken for one:
// Forgejo also answers 409 (its error struct as the body) when another
// merge of the PR won the race, and 405 with an empty message when the PR
// is merged already (a merge sent twice: TestACarMergedTwiceOnForgejoLands);
// a head pushed meanwhile is a new head to review, not a conflict to note. It returns MergeAlready for a merged PR,
// MergeHeadMoved for one closed or moved, else outcome.
func (m *merger) recheck(ctx context.Context, pr forge.PR, outcome forge.MergeOutcome) (forge.MergeOutcome, error) {
	fresh, err := m.p.forge.PR(ctx, m.p.cfg.Owner, m.p.cfg.Name, pr.Number)
	if err != nil {
		return forge.MergeFailed, err
	}
	switch {
	case fresh.Merged:
		m.p.log.Info("the merge was refused, but the PR is merged: another merge won the race, or this one was sent twice", "pr", pr.Number, "outcome", outcome)
		return forge.MergeAlready, nil
	case fresh.State != "open" || fresh.HeadSHA != pr.HeadSHA:
		m.p.log.Info("the merge was refused, but the PR is closed or its head moved: no conflict",
			"pr", pr.Number, "state", fresh.State, "head", fresh.HeadSHA, "outcome", outcome)
		return forge.MergeHeadMoved, nil
	}
	return outcome, nil
}

// checkOnBase looks in the clone at a PR the forge reads mergeable but
// keeps answering "try again later". A merge cut off mid-call (the pool
// killed while the forge merged) can push the head to the base and leave
// the PR open: the forge then never merges it. Such a PR is marked merged
// at the base's commit that holds its head; if the forge refuses that, the
// PR waits for a person, with one note. Any other PR keeps waiting.
func (m *merger) checkOnBase(ctx context.Context, pr forge.PR) {
	p := m.p
	if p.history == nil {
		m.q.notReady(pr.Number, p.now())
		return
	}
	commit, ok, err := p.history.OnBase(ctx, pr.Number, pr.HeadSHA)
	if err != nil || !ok {
		if err != nil {
			p.log.Warn("merge queue: looking for the head on the base failed; waiting", "pr", pr.Number, "err", err)
		}
		m.q.notReady(pr.Number, p.now())
		return
	}
	p.log.Warn("merge queue: the head is on the base already, yet the forge lists the PR open and will not merge it; marking it merged",
		"pr", pr.Number, "head", pr.HeadSHA, "commit", commit)
	res, err := p.forge.MarkMerged(ctx, p.cfg.Owner, p.cfg.Name, pr.Number, commit)
	if err != nil {
		p.log.Warn("merge queue: marking the PR merged failed; waiting", "pr", pr.Number, "err", err)
		m.q.notReady(pr.Number, p.now())
		return
	}
	p.log.Info("marking merged answered", "pr", pr.Number, "outcome", res.Outcome, "status", res.Status, "message", res.Message)
	m.q.remove(pr.Number)
	switch res.Outcome {
	case forge.MergeDone, forge.MergeAlready, forge.MergeClosed:
		m.settle(ctx, pr.Number) // only the forge's word that it merged counts
		return
	}
	next, act := p.landed(pr.Number, commit, res)
	p.logDecision(pr.Number, next, act)
	m.say(ctx, pr, next, act)
	p.wakeLoop()
}

// leave takes a PR out of the queue because it changed under it; a merged
// or closed one is settled now.
func (m *merger) leave(ctx context.Context, pr forge.PR) {
	if pr.Merged || pr.State != "open" {
		m.q.remove(pr.Number)
		m.settle(ctx, pr.Number)
	}
	m.handBack(pr)
}

// handBack takes a PR out of the queue and hands it to the discovery loop
// with the queue's read of it, if newer than the loop's copy (fresherRead).
func (m *merger) handBack(pr forge.PR) {
	m.p.fresherRead(pr, m.q.remove(pr.Number))
	m.p.wakeLoop()
}

// settle reads a PR the forge says is merged (or closed) and has lifecycle
// decide on it: only the forge's word counts. A PR dropped is forgotten
// here; one that reads open goes back to the discovery loop.
func (m *merger) settle(ctx context.Context, n int) {
	p := m.p
	fresh, err := p.forge.PR(ctx, p.cfg.Owner, p.cfg.Name, n)
	if err != nil {
		p.log.Warn("re-reading a merged PR failed; the next cycle will", "pr", n, "err", err)
		return
	}
	d, t, err := p.decide(ctx, fresh)
	if err != nil {
		p.log.Warn("settling a merged PR failed; the next cycle will", "pr", n, "err", err)
		return
	}
	if d.Kind != lifecycle.Drop {
		m.say(ctx, fresh, t, d.Action)
		m.handBack(fresh)
		return
	}
	p.drop(ctx, fresh, t, d.Action)
}

// holderFirst moves the base's update holder (lifecycle.UpdateHolder) to
// the front of the due entries. Every other behind PR only waits for it,
// and a turn ends with the first entry read mergeable: on a loaded machine
// reading and deciding the waiting ones took as long as their back-off, so
// they were always due before the holder, which the queue never reached
// (two update tests stalled in CI with the updated PR queued, never merged).
func holderFirst(entries []queued, holder int) []queued {
	for i, e := range entries {
		if e.n == holder && i > 0 {
			out := append([]queued{e}, entries[:i]...)
			return append(out, entries[i+1:]...)
		}
	}
	return entries
}
