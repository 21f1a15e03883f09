package pool

import (
	"slices"
	"sync"
	"time"

	"pool/forge"
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

// A queued PR the forge keeps reading not mergeable is told to the operator
// (merger.unready): at Warn once it has read so for unreadyWarnAfter since
// it entered the queue, last read mergeable or the queue's last merge (which
// has the forge test it again), whichever is latest, then again after
// twice as long, doubling up to unreadyWarnMax, and once at Info when it
// reads mergeable. The forge re-tests a PR in seconds, a minute or two
// behind a backlog; ten minutes is far past that, while a conflict with the
// base, or a re-test the forge lost (a Gitea queue race left a PR not
// mergeable for ever), is never over, and every read of it is logged at
// Debug only. The queue's merges of other PRs hide the wait for
// unreadyWarnBusy at most: a forge that lost the re-test refuses every later
// one, however many merges follow.
const (
	unreadyWarnAfter = 10 * time.Minute
	unreadyWarnMax   = 6 * time.Hour
	unreadyWarnBusy  = time.Hour
)

// unreadyWarnGap is the wait from the n-th warning of a PR to the next:
// twice unreadyWarnAfter, doubling, capped at unreadyWarnMax.
var unreadyWarnGap = forge.Backoff{Base: 2 * unreadyWarnAfter, Max: unreadyWarnMax}

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
	merge   time.Time       // guarded by mu: the same, kept after the pacing ends (moved does not)
	alone   int             // guarded by mu: the entry read alone since then, 0 if none yet
	cars    []int           // guarded by mu: the PRs of the base's merge train, front car first, as last shown
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
	asked     time.Time // when the queue last asked the forge for the PR (merger.read)
	// stale: the queue's merge (moved) whose first "try again later" of
	// this entry was read again at the pace (tryLater); zero if none.
	stale time.Time
	// slow: read alone after a merge for a whole queuePaceFor, never
	// mergeable; not read alone again until it is, so it holds the others once.
	slow bool
	// ruled: the forge refused a merge of this head for a rule
	// (wasRefused); never read alone after a merge.
	ruled bool
	// fresh: when it entered or last read mergeable. warned: when the
	// operator was last told it reads not mergeable (zero: not told);
	// warns: how often since fresh (unreadyWarnGap).
	fresh  time.Time
	warned time.Time
	warns  int
}

func newMergeQueue(poll time.Duration) *mergeQueue {
	return &mergeQueue{entries: map[int]*queued{}, wake: make(chan struct{}, 1), base: min(queueWaitBase, poll),
		pace: min(queuePace, poll)}
}

// add queues PR n at head, unless it is queued already, and wakes the worker.
func (q *mergeQueue) add(n int, head string, now time.Time) {
	q.mu.Lock()
	if e, ok := q.entries[n]; !ok || e.head != head {
		q.entries[n] = &queued{n: n, head: head, since: now, fresh: now}
	}
	q.mu.Unlock()
	q.kick()
}

// wasRefused marks entry n as a head whose merge the forge refused for a
// rule (lifecycle.Track.RefusedForARule). After a merge it is read at the
// queue's own waits, not alone at the pace: such a PR re-enters the queue
// after each refusal's hold, so it is often the oldest entry, and read
// alone it would be read every pace for queuePaceFor after every merge
// (the simulation saw 84 reads of one in an hour).
func (q *mergeQueue) wasRefused(n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.entries[n]; ok {
		e.ruled = true
	}
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
// within queuePaceFor of each merge is the forge's flag from before that
// merge (read before the forge marked the PR for testing again): the PR is
// read again at the pace, still ahead of the others. Any other waits as a
// PR not ready, and at every onBaseCheckEvery-th, tryLater reports that the
// caller should look whether the head is on the base already
// (checkOnBase). Counting only an entry's first refusal ever, the oldest
// PR of a backlog, read first after each merge, met the flag from before
// each merge after its first, waited a second each time while a younger
// PR merged, and was asked six times (TestBacklogMergesAboutOneCallPerPR).
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
	case !moved.IsZero() && !moved.Equal(e.stale) && now.Before(moved.Add(queuePaceFor)):
		q.moved, q.alone, e.notBefore, e.stale = moved, n, now.Add(q.pace), moved
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
	q.moved, q.alone, q.merge = now, 0, now
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
		if e.slow || e.ruled {
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

// unready records that entry n read not mergeable at now. It returns how
// long the entry has waited since it entered or last read mergeable, and
// whether to warn the operator of it now (unreadyWarnAfter).
func (q *mergeQueue) unready(n int, now time.Time) (waited time.Duration, warn bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.entries[n]
	if !ok || !q.warnDue(e, now) {
		return 0, false
	}
	e.warned, e.warns = now, e.warns+1
	return now.Sub(e.fresh), true
}

// warnDue: the operator is to be told now that e reads not mergeable.
func (q *mergeQueue) warnDue(e *queued, now time.Time) bool {
	if !e.warned.IsZero() {
		return now.Sub(e.warned) >= unreadyWarnGap.Delay(e.warns, 0)
	}
	quiet := now.Sub(e.fresh)
	if q.merge.After(e.fresh) {
		quiet = now.Sub(q.merge)
	}
	return quiet >= unreadyWarnAfter || now.Sub(e.fresh) >= unreadyWarnBusy
}

// mergeable records that entry n read mergeable at now, which ends its
// wait for the forge. It returns how long that wait was if the operator
// was warned of it, else zero.
func (q *mergeQueue) mergeable(n int, now time.Time) (warnedWait time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.entries[n]
	if !ok {
		return 0
	}
	if !e.warned.IsZero() {
		warnedWait = now.Sub(e.fresh)
	}
	e.fresh, e.warned, e.warns = now, time.Time{}, 0
	return warnedWait
}

// forgeWait is how long entry n has read not mergeable, for the status
// page, once the operator was warned of it; zero before, or if not queued.
func (q *mergeQueue) forgeWait(n int, now time.Time) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.entries[n]
	if !ok || e.warned.IsZero() {
		return 0
	}
	return now.Sub(e.fresh)
}

func (q *mergeQueue) kick() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}
