package pool

import (
	"maps"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"pool/describe"
	"pool/forgejo"
	"pool/lifecycle"
	"pool/ops"
)

// Metrics is what the pool counts as it works; package metrics has it.
type Metrics interface {
	SessionStarted(kind string)
	SessionFinished(outcome string)
	MergeCalled(outcome string)
	RetryAttempted()
	CycleDone(d time.Duration)
	ClaimRace(won bool)
}

type noMetrics struct{}

func (noMetrics) SessionStarted(string)   {}
func (noMetrics) SessionFinished(string)  {}
func (noMetrics) MergeCalled(string)      {}
func (noMetrics) RetryAttempted()         {}
func (noMetrics) CycleDone(time.Duration) {}
func (noMetrics) ClaimRace(bool)          {}

// keepDone is how long a merged or closed PR stays on the status page.
const keepDone = time.Hour

// maxTitle bounds a PR title shown on the page: the forge lets anyone write it.
const maxTitle = 200

// book is what the pool shows of each PR, noted as it decides: the status
// page, /api/status and the PR's commit status all read it. It has its own
// lock, so noting never waits on the pool's.
type book struct {
	started time.Time
	changed chan struct{} // something shown changed; buffered 1

	mu         sync.Mutex // guards the fields below
	prs        map[int]*entry
	ahead      map[int]int       // PRs waiting for a slot: how many wait before each
	dispatched map[int]time.Time // when a slot took the PR
	lastCycle  time.Time
}

// entry is one PR as last decided.
type entry struct {
	title, url, head string
	track            lifecycle.Track
	act              lifecycle.Action
	waitingFor       []string // checks that run, or required contexts not passed yet, at the head
	failing          []string // checks that failed at the head
	merge            forgejo.MergeResult
	seen             time.Time
}

func newBook(now time.Time) *book {
	return &book{started: now, changed: make(chan struct{}, 1), prs: map[int]*entry{},
		ahead: map[int]int{}, dispatched: map[int]time.Time{}}
}

func (b *book) entry(n int) *entry {
	e := b.prs[n]
	if e == nil {
		e = &entry{}
		b.prs[n] = e
	}
	return e
}

func (b *book) signal() {
	select {
	case b.changed <- struct{}{}:
	default:
	}
}

// decided notes a decision on a PR.
func (b *book) decided(pr forgejo.PR, t lifecycle.Track, act lifecycle.Action, now time.Time) {
	b.mu.Lock()
	e := b.entry(pr.Number)
	e.title, e.url, e.head = clip(pr.Title, maxTitle), pr.URL, pr.HeadSHA
	e.track, e.act, e.seen = t, act, now
	for n, x := range b.prs { // forget what has been done long enough
		if x.done() && now.Sub(x.seen) > keepDone {
			delete(b.prs, n)
			delete(b.dispatched, n)
		}
	}
	b.mu.Unlock()
	if act.Kind != lifecycle.Review && act.Kind != lifecycle.Fix {
		b.signal() // a PR that needs a session shows once the cycle has queued it
	}
}

// checks notes, for a PR's head, the checks that run or that the
// protection requires and no check has passed yet, and those that failed.
func (b *book) checks(n int, checks []lifecycle.Check, required []string) {
	var waiting, failing []string
	for _, c := range checks {
		switch {
		case c.Failed():
			failing = append(failing, c.Context)
		case c.Pending():
			waiting = append(waiting, c.Context)
		}
	}
	waiting = append(waiting, lifecycle.MissingRequired(checks, required)...)
	b.mu.Lock()
	e := b.entry(n)
	e.waitingFor, e.failing = waiting, failing
	b.mu.Unlock()
}

// merged notes the forge's answer to a merge call.
func (b *book) mergeAnswered(n int, res forgejo.MergeResult) {
	b.mu.Lock()
	b.entry(n).merge = res
	b.mu.Unlock()
}

// queued notes the cycle's work list: the first started PRs took slots, the
// rest wait in order.
func (b *book) queued(todo []candidate, started int, now time.Time) {
	b.mu.Lock()
	clear(b.ahead)
	for i, c := range todo {
		if i < started {
			b.dispatched[c.pr.Number] = now
			continue
		}
		b.ahead[c.pr.Number] = i - started
	}
	b.mu.Unlock()
	b.signal()
}

func (b *book) cycled(now time.Time) {
	b.mu.Lock()
	b.lastCycle = now
	b.mu.Unlock()
}

func (e *entry) done() bool {
	return e.track.State == lifecycle.Merged || e.track.State == lifecycle.Closed
}

// Status is what the pool shows of itself now: slots, tracked and recently
// finished PRs, and identity. Warnings are added by the caller that keeps
// the log.
func (p *Pool) Status() ops.Status {
	now := p.now()
	p.mu.Lock()
	busy := make(map[int]*session, len(p.busy))
	for n := range p.busy {
		busy[n] = p.sessions[n]
	}
	tracks := maps.Clone(p.tracks) // the track as it is now, not as last decided
	p.mu.Unlock()

	b := p.book
	b.mu.Lock()
	defer b.mu.Unlock()
	st := ops.Status{Instance: p.instance, Version: Version(), Repo: p.cfg.Repo(), ForgeURL: p.cfg.ForgejoURL,
		AgentURL: p.cfg.AgentURL, Started: b.started, Now: now, LastCycle: b.lastCycle, Workers: p.cfg.Workers}
	for n, s := range busy {
		slot := ops.Slot{PR: n, Since: b.dispatched[n]}
		if e := b.prs[n]; e != nil {
			slot.Title = e.title
		}
		if s != nil {
			slot.Kind, slot.Session, slot.Since = string(s.kind), s.id, s.started
		}
		st.Slots = append(st.Slots, slot)
	}
	sort.Slice(st.Slots, func(i, j int) bool { return st.Slots[i].PR < st.Slots[j].PR })
	for n, e := range b.prs {
		t, tracked := tracks[n]
		if !tracked && !e.done() {
			continue // forgotten without a decision (gone, retargeted)
		}
		if !tracked {
			t = e.track // merged or closed: its last decision
		}
		ahead, queued := b.ahead[n]
		mergeAhead, merging := p.queue.ahead(n)
		in := describe.Standing{Merging: merging, MergeAhead: mergeAhead, Track: t, Act: e.act, Queued: queued, Ahead: ahead,
			WaitingFor: e.waitingFor, Failing: e.failing, Merge: e.merge, Base: p.base, SkipLabel: p.cfg.SkipLabel}
		if s, ok := busy[n]; ok {
			in.Busy = true
			if s != nil {
				in.Session, in.Kind = s.started, s.kind
			}
		}
		commit := in
		commit.NoPlace = true
		st.PRs = append(st.PRs, ops.PR{Number: n, Title: e.title, URL: e.url, Head: e.head, State: string(t.State),
			Attempts: t.Attempts, LastAnswer: t.LastStatus, Next: describe.Next(in), Commit: describe.Next(commit), Done: e.done(),
			Merged: t.State == lifecycle.Merged, Seen: e.seen})
	}
	sort.Slice(st.PRs, func(i, j int) bool { return st.PRs[i].Number < st.PRs[j].Number })
	return st
}

// ahead says how many PRs the merge queue holds before PR n, oldest first,
// and whether it holds n at all.
func (q *mergeQueue) ahead(n int) (int, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.entries[n]
	if !ok {
		return 0, false
	}
	before := 0
	for _, o := range q.entries {
		if o.since.Before(e.since) || (o.since.Equal(e.since) && o.n < e.n) {
			before++
		}
	}
	return before, true
}

// OwnStatusRequired reports whether the base branch's protection waits for
// a status context that the pool's own matches (status checks on with no
// context named, or a pattern such as "*"): a pending pool status would then
// hold the forge's merge.
func (p *Pool) OwnStatusRequired() bool {
	if p.cfg.StatusContext == "" {
		return false
	}
	required := lifecycle.RequiredContexts(p.currentProtection())
	own := []lifecycle.Check{{Context: p.cfg.StatusContext, State: "success"}}
	return len(lifecycle.MissingRequired(own, required)) < len(required)
}

// Changed is signalled whenever something the status shows may have changed.
func (p *Pool) Changed() <-chan struct{} { return p.book.changed }

// Version is the build's version and commit, for the status page.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}

func clip(s string, n int) string {
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "") + "..."
	}
	return s
}
