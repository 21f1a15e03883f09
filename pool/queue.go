package pool

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"pool/forge"
	"pool/forgejo"
	"pool/lifecycle"
)

// Waits of the merge queue for the forge: a PR the forge is still checking
// against its base is read again after a second (or the poll interval, if
// shorter), doubling to queueWaitMax, jittered; a merge or a webhook starts
// the waits over. After a merge of the queue's own, only the next PR (the
// oldest) is read, every queuePace (or the poll interval, if shorter), as
// the forge re-tests it against the new base: for queuePaceFor at most,
// then every PR is read again on the doubling waits, and that PR is not
// read alone again until it reads mergeable (slow): a PR the forge never
// finds mergeable holds the others once.
const (
	queueWaitBase = time.Second
	queueWaitMax  = 30 * time.Second
	queuePace     = 200 * time.Millisecond
	queuePaceFor  = 30 * time.Second
)

// onBaseCheckEvery: every so many merge calls answered "try again later"
// while the PR read mergeable, the queue looks in the clone whether the
// head is on the base already (checkOnBase).
const onBaseCheckEvery = 3

// mergeQueue holds the PRs of the base branch that are approved, green and
// allowed to merge. One goroutine works it, so at most one merge call is in
// flight: each merge makes the forge test every other open PR against the
// new base again, refusing merges ("try again later") until it has, and a
// merge made meanwhile only adds to that work. The oldest entry that the
// forge reports mergeable goes first; an entry the forge is still checking
// holds no other, except for queuePaceFor after a merge, when the queue
// reads the next entry alone, at the pace the forge re-tests it.
type mergeQueue struct {
	mu      sync.Mutex
	entries map[int]*queued // guarded by mu
	moved   time.Time       // guarded by mu: the queue's last merge answered
	alone   int             // guarded by mu: the entry read alone since then, 0 if none yet
	wake    chan struct{}   // buffered 1
	base    time.Duration   // first wait for the forge
	pace    time.Duration   // the wait for the next PR after a merge
}

// queued is one PR in the merge queue.
type queued struct {
	n         int
	head      string    // the head the decision approved
	since     time.Time // when it entered: oldest first
	notBefore time.Time // not read again before this
	waits     int       // reads in a row that found it not mergeable
	refused   int       // merge calls answered "try again later" while it read mergeable
	tried     bool      // read at least once
	asked     time.Time // when the queue last asked the forge for the PR (queueRead)
	// slow: read alone after a merge for a whole queuePaceFor, never
	// mergeable; not read alone again until it is, so it holds the others once.
	slow bool
}

func newMergeQueue(poll time.Duration) *mergeQueue {
	return &mergeQueue{entries: map[int]*queued{}, wake: make(chan struct{}, 1), base: min(queueWaitBase, poll),
		pace: min(queuePace, poll)}
}

// add queues PR n at head, unless it is queued already, and wakes the worker.
func (q *mergeQueue) add(n int, head string, now time.Time) {
	q.mu.Lock()
	if e, ok := q.entries[n]; !ok || e.head != head {
		q.entries[n] = &queued{n: n, head: head, since: now}
	}
	q.mu.Unlock()
	q.kick()
}

func (q *mergeQueue) remove(n int) (asked time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.entries[n]; ok {
		asked = e.asked
	}
	delete(q.entries, n)
	return asked
}

func (q *mergeQueue) has(n int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.entries[n]
	return ok
}

func (q *mergeQueue) size() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.entries)
}

// untried counts the entries not read yet, for --once: one pass over the
// queue is its share of the one cycle.
func (q *mergeQueue) untried() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, e := range q.entries {
		if !e.tried {
			n++
		}
	}
	return n
}

// due returns the entries that may be read now, oldest first, and when the
// next one will be due otherwise.
func (q *mergeQueue) due(now time.Time) ([]queued, time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []queued
	next := time.Time{}
	for _, e := range q.entries {
		if !now.Before(e.notBefore) {
			out = append(out, *e)
		} else if next.IsZero() || e.notBefore.Before(next) {
			next = e.notBefore
		}
	}
	slices.SortFunc(out, func(a, b queued) int {
		if c := a.since.Compare(b.since); c != 0 {
			return c
		}
		return a.n - b.n
	})
	return out, next
}

// asked records when the queue last asked the forge for entry n.
func (q *mergeQueue) asked(n int, at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.entries[n]; ok {
		e.asked = at
	}
}

// notReady backs an entry off: the forge has not finished checking it.
func (q *mergeQueue) notReady(n int, now time.Time) { q.backOff(n, now, nil) }

// backOff backs an entry off after err, at least as long as the forge (or
// a proxy in front of it) asked with a Retry-After.
func (q *mergeQueue) backOff(n int, now time.Time, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.entries[n]; ok {
		e.waits++
		e.tried = true
		e.notBefore = now.Add(retryWait(e.waits, q.base, queueWaitMax, err))
	}
}

// tryLater records a merge call of PR n answered "try again later" while
// it read mergeable, moved being when the queue's last merge was answered
// (zero if the call was not the first after it). The first such answer
// within queuePaceFor of a merge is the forge's flag from before that merge
// (read before the forge marked the PR for testing again): the PR is read
// again at the pace. Any other waits as a PR not ready, and at every
// onBaseCheckEvery-th, tryLater reports that the caller should look whether
// the head is on the base already (checkOnBase).
func (q *mergeQueue) tryLater(n int, moved, now time.Time) (lookOnBase bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.entries[n]
	if !ok {
		return false
	}
	e.refused++
	e.tried = true
	switch {
	case e.refused == 1 && !moved.IsZero() && now.Before(moved.Add(queuePaceFor)):
		q.moved, q.alone, e.notBefore = moved, n, now.Add(q.pace)
		return false
	case e.refused%onBaseCheckEvery == 0:
		return true
	}
	e.waits++
	e.notBefore = now.Add(retryWait(e.waits, q.base, queueWaitMax, nil))
	return false
}

// restart makes every entry due now: the base moved, or the forge said
// something changed, so every PR is checked again.
func (q *mergeQueue) restart() {
	q.mu.Lock()
	for _, e := range q.entries {
		e.waits, e.notBefore = 0, time.Time{}
	}
	q.mu.Unlock()
	q.kick()
}

// merged starts the waits over after a merge of the queue's own: the base
// moved, and the forge tests every other PR against it again. For
// queuePaceFor the queue reads only the next entry, at once and then every
// pace until the forge reads it mergeable (a flag read before the forge
// marked it for testing may be the one from before: the merge call is then
// answered "try again later", and the PR waits as after any such answer).
func (q *mergeQueue) merged(now time.Time) {
	q.mu.Lock()
	q.moved, q.alone = now, 0
	for _, e := range q.entries {
		e.waits, e.notBefore = 0, time.Time{}
	}
	q.mu.Unlock()
	q.kick()
}

// next returns the oldest entry not slow, if the queue is within
// queuePaceFor of its last merge: then it alone is read. The entry read
// alone through a whole queuePaceFor turns slow.
func (q *mergeQueue) next(now time.Time) (queued, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.moved.IsZero() {
		return queued{}, false
	}
	if !now.Before(q.moved.Add(queuePaceFor)) {
		if e, ok := q.entries[q.alone]; ok {
			e.slow = true
		}
		q.moved, q.alone = time.Time{}, 0
		return queued{}, false
	}
	var head *queued
	for _, e := range q.entries {
		if e.slow {
			continue
		}
		if head == nil || e.since.Before(head.since) || (e.since.Equal(head.since) && e.n < head.n) {
			head = e
		}
	}
	if head == nil {
		return queued{}, false
	}
	return *head, true
}

// unpace ends the reading of the next entry alone, because entry n read
// mergeable (it is no longer slow), and returns when the queue's last merge
// was answered (zero if it was not pacing).
func (q *mergeQueue) unpace(n int) time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.entries[n]; ok {
		e.slow = false
	}
	moved := q.moved
	q.moved, q.alone = time.Time{}, 0
	return moved
}

// paced has the next entry read again one pace from now: the forge is
// re-testing it against the base the queue just moved.
func (q *mergeQueue) paced(n int, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.entries[n]; ok {
		e.tried = true
		e.notBefore = now.Add(q.pace)
		q.alone = n
	}
}

func (q *mergeQueue) kick() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// runQueue works the merge queue until ctx ends (no merge starts after
// that); a merge in flight runs on work, which outlives ctx by the shutdown
// timeout.
func (p *Pool) runQueue(ctx, work context.Context) {
	for ctx.Err() == nil {
		wait := p.workQueue(work)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-p.queue.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// workQueue reads the due entries, oldest first, until one reads
// mergeable, and merges that one. It returns how long to wait for the next
// turn.
func (p *Pool) workQueue(ctx context.Context) time.Duration {
	entries, _ := p.queue.due(p.now())
	entries = holderFirst(entries, p.updateHolder())
	head, paced := p.queue.next(p.now())
	if paced {
		if wait := head.notBefore.Sub(p.now()); wait > 0 {
			return wait
		}
		entries = []queued{head}
	}
	for _, e := range entries {
		pr, err := p.queueRead(ctx, e.n)
		switch {
		case errors.Is(err, forgejo.ErrUnauthorized) || ctx.Err() != nil:
			return time.Minute
		case err != nil:
			p.log.Warn("merge queue: reading the PR failed; waiting", "pr", e.n, "err", err)
			p.queue.backOff(e.n, p.now(), err)
			continue
		case pr.State != "open" || pr.Merged || pr.HeadSHA != e.head || pr.BaseRef != p.Base():
			p.leaveQueue(ctx, pr)
			continue
		case !pr.Mergeable && paced:
			p.log.Debug("merge queue: the forge has not tested the next PR against the base yet; reading it again soon", "pr", e.n)
			p.queue.paced(e.n, p.now())
			return 0
		case !pr.Mergeable:
			p.log.Debug("merge queue: the forge reads the PR not mergeable; waiting", "pr", e.n)
			p.queue.notReady(e.n, p.now())
			continue
		}
		moved := p.queue.unpace(e.n) // the forge has tested it: a merge paces the queue again, anything else does not
		p.mergeQueued(ctx, pr, moved)
		return 0
	}
	dueNow, next := p.queue.due(p.now())
	switch {
	case len(dueNow) > 0:
		return 0
	case next.IsZero():
		return time.Hour // nothing queued: an add wakes the worker
	}
	return max(next.Sub(p.now()), 0)
}

// mergeQueued decides once more on fresh reads and, if the decision still
// is to merge, makes the merge call. A PR the decision no longer merges, or
// whose merge the forge refused for good, leaves the queue; the discovery
// loop decides it again. moved is when the queue's last merge was answered,
// if this is the first PR read mergeable after it.
func (p *Pool) mergeQueued(ctx context.Context, pr forge.PR, moved time.Time) {
	act, err := p.decideAndAct(ctx, pr)
	if err != nil {
		p.log.Warn("merge queue: deciding failed; waiting", "pr", pr.Number, "err", err)
		p.queue.notReady(pr.Number, p.now())
		return
	}
	if act.Kind == lifecycle.Update {
		p.updateQueued(ctx, pr)
		return
	}
	if act.Kind != lifecycle.Merge {
		p.handBack(pr) // the discovery loop takes the PR back
		return
	}
	res, err := p.merge(ctx, pr)
	switch {
	case err != nil:
		p.log.Warn("merge queue: the merge call failed; waiting", "pr", pr.Number, "err", err)
		p.queue.backOff(pr.Number, p.now(), err)
	case res.Outcome == forge.MergeNotReady:
		if p.queue.tryLater(pr.Number, moved, p.now()) {
			p.checkOnBase(ctx, pr)
		}
	case res.Outcome == forge.MergeDone || res.Outcome == forge.MergeAlready:
		p.queue.remove(pr.Number)
		p.settleMerged(ctx, pr.Number)
		p.queue.merged(p.now()) // the base moved: the forge tests the next PR against it again
	default:
		p.queue.remove(pr.Number)
	}
}

// queueRead reads PR n for the merge queue, noting when it asked.
func (p *Pool) queueRead(ctx context.Context, n int) (forge.PR, error) {
	asked := p.now()
	pr, err := p.forge.PR(ctx, p.cfg.Owner, p.cfg.Name, n)
	p.queue.asked(n, asked)
	return pr, err
}

// checkOnBase looks in the clone at a PR the forge reads mergeable but
// keeps answering "try again later". A merge cut off mid-call (the pool
// killed while the forge merged) can push the head to the base and leave
// the PR open: the forge then never merges it. Such a PR is marked merged
// at the base's commit that holds its head; if the forge refuses that, the
// PR waits for a person, with one note. Any other PR keeps waiting.
func (p *Pool) checkOnBase(ctx context.Context, pr forge.PR) {
	if p.history == nil {
		p.queue.notReady(pr.Number, p.now())
		return
	}
	commit, ok, err := p.history.OnBase(ctx, pr.Number, pr.HeadSHA)
	if err != nil || !ok {
		if err != nil {
			p.log.Warn("merge queue: looking for the head on the base failed; waiting", "pr", pr.Number, "err", err)
		}
		p.queue.notReady(pr.Number, p.now())
		return
	}
	p.log.Warn("merge queue: the head is on the base already, yet the forge lists the PR open and will not merge it; marking it merged",
		"pr", pr.Number, "head", pr.HeadSHA, "commit", commit)
	res, err := p.forge.MarkMerged(ctx, p.cfg.Owner, p.cfg.Name, pr.Number, commit)
	if err != nil {
		p.log.Warn("merge queue: marking the PR merged failed; waiting", "pr", pr.Number, "err", err)
		p.queue.notReady(pr.Number, p.now())
		return
	}
	p.log.Info("marking merged answered", "pr", pr.Number, "outcome", res.Outcome, "status", res.Status, "message", res.Message)
	p.queue.remove(pr.Number)
	switch res.Outcome {
	case forge.MergeDone, forge.MergeAlready, forge.MergeClosed:
		p.settleMerged(ctx, pr.Number) // only the forge's word that it merged counts
		return
	}
	next, act := p.landed(pr.Number, commit, res)
	p.logDecision(pr.Number, next, act)
	if err := p.act(ctx, pr, next, act); err != nil {
		p.log.Warn("merge queue: posting the note failed; the next cycle will", "pr", pr.Number, "err", err)
	}
	p.wakeLoop()
}

// leaveQueue takes a PR out of the queue because it changed under it; a
// merged or closed one is settled now.
func (p *Pool) leaveQueue(ctx context.Context, pr forge.PR) {
	if pr.Merged || pr.State != "open" {
		p.queue.remove(pr.Number)
		p.settleMerged(ctx, pr.Number)
	}
	p.handBack(pr)
}

// handBack takes a PR out of the queue and hands it to the discovery loop
// with the queue's read of it, if newer than the loop's copy (fresherRead).
func (p *Pool) handBack(pr forge.PR) {
	p.fresherRead(pr, p.queue.remove(pr.Number))
	p.wakeLoop()
}

// settleMerged reads a PR the forge says is merged (or closed) and lets the
// lifecycle drop it: only the forge's word counts.
func (p *Pool) settleMerged(ctx context.Context, n int) {
	fresh, err := p.forge.PR(ctx, p.cfg.Owner, p.cfg.Name, n)
	if err != nil {
		p.log.Warn("re-reading a merged PR failed; the next cycle will", "pr", n, "err", err)
		return
	}
	if _, err := p.decideAndAct(ctx, fresh); err != nil {
		p.log.Warn("settling a merged PR failed; the next cycle will", "pr", n, "err", err)
	}
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
