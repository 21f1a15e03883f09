package describe

import (
	"slices"
	"sort"
	"sync"
	"time"

	"pool/forge"
	"pool/lifecycle"
	"pool/statuspage"
)

// keepDone is how long a merged or closed PR stays on the status page.
const keepDone = time.Hour

// maxTitle bounds a PR title shown on the page: the forge lets anyone write it.
const maxTitle = 200

// Book is what the pool shows of each PR, noted as it decides: the status
// page, /api/status and the PR's commit status all read it. It has its own
// lock, so noting never waits on the pool's.
type Book struct {
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
	merge            forge.MergeResult
	seen             time.Time
}

func NewBook(now time.Time) *Book {
	return &Book{started: now, changed: make(chan struct{}, 1), prs: map[int]*entry{},
		ahead: map[int]int{}, dispatched: map[int]time.Time{}}
}

func (b *Book) entry(n int) *entry {
	e := b.prs[n]
	if e == nil {
		e = &entry{}
		b.prs[n] = e
	}
	return e
}

// Signal says something shown changed.
func (b *Book) Signal() {
	select {
	case b.changed <- struct{}{}:
	default:
	}
}

// Decided notes a decision on a PR.
func (b *Book) Decided(pr forge.PR, t lifecycle.Track, act lifecycle.Action, now time.Time) {
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
		b.Signal() // a PR that needs a session shows once the cycle has queued it
	}
}

// Checks notes, for a PR's head, the checks that run or that the
// protection requires and no check has passed yet, and those that failed.
func (b *Book) Checks(n int, checks []lifecycle.Check, required []string) {
	var waiting, failing []string
	for _, c := range checks {
		switch {
		case c.Failed():
			failing = append(failing, c.Context)
		case c.Pending():
			waiting = append(waiting, c.Context)
		}
	}
	for _, pattern := range lifecycle.MissingRequired(checks, required) {
		if !slices.Contains(waiting, pattern) { // a required check that runs is named once
			waiting = append(waiting, pattern)
		}
	}
	b.mu.Lock()
	e := b.entry(n)
	e.waitingFor, e.failing = waiting, failing
	b.mu.Unlock()
}

// MergeAnswered notes the forge's answer to a merge call.
func (b *Book) MergeAnswered(n int, res forge.MergeResult) {
	b.mu.Lock()
	b.entry(n).merge = res
	b.mu.Unlock()
}

// Queued notes the cycle's work list, in turn: the first started PRs took
// slots, the rest wait in order.
func (b *Book) Queued(todo []int, started int, now time.Time) {
	b.mu.Lock()
	clear(b.ahead)
	for i, n := range todo {
		if i < started {
			b.dispatched[n] = now
			continue
		}
		b.ahead[n] = i - started
	}
	b.mu.Unlock()
	b.Signal()
}

// Cycled notes the end of a discovery cycle.
func (b *Book) Cycled(now time.Time) {
	b.mu.Lock()
	b.lastCycle = now
	b.mu.Unlock()
}

func (e *entry) done() bool {
	return e.track.State == lifecycle.Merged || e.track.State == lifecycle.Closed
}

// Changed is signalled whenever something shown may have changed.
func (b *Book) Changed() <-chan struct{} { return b.changed }

// Live is what the pool knows now of the PRs the book shows.
type Live struct {
	Tracks map[int]lifecycle.Track // the tracked PRs' tracks as they are now
	// Busy are the PRs a slot holds, with their session (zero while it
	// claims).
	Busy map[int]Session
	// MergeAhead says how many PRs the merge queue holds before PR n, and
	// whether it holds n.
	MergeAhead func(n int) (int, bool)
	// Car says which car of its base's merge train PR n is, of how many,
	// and whether it rides one. May be nil: no train.
	Car func(n int) (car, cars int, ok bool)
	// ForgeWait says how long the merge queue's PR n has read not
	// mergeable, once the pool warned of it (zero before). May be nil.
	ForgeWait       func(n int) time.Duration
	Base, SkipLabel string
}

// Session is the session a slot runs for a PR.
type Session struct {
	ID      string
	Kind    lifecycle.Kind
	Started time.Time
}

// Show fills st with the book's start and last cycle, the slots, and one
// row for each PR tracked or recently done, in order of number.
func (b *Book) Show(st *statuspage.Status, live Live) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st.Started, st.LastCycle = b.started, b.lastCycle
	for n, s := range live.Busy {
		slot := statuspage.Slot{PR: n, Since: b.dispatched[n]}
		if e := b.prs[n]; e != nil {
			slot.Title = e.title
		}
		if s.ID != "" {
			slot.Kind, slot.Session, slot.Since = string(s.Kind), s.ID, s.Started
		}
		st.Slots = append(st.Slots, slot)
	}
	sort.Slice(st.Slots, func(i, j int) bool { return st.Slots[i].PR < st.Slots[j].PR })
	for n, e := range b.prs {
		t, tracked := live.Tracks[n]
		if !tracked && !e.done() {
			continue // forgotten without a decision (gone, retargeted)
		}
		if !tracked {
			t = e.track // merged or closed: its last decision
		}
		st.PRs = append(st.PRs, b.row(n, e, t, live))
	}
	sort.Slice(st.PRs, func(i, j int) bool { return st.PRs[i].Number < st.PRs[j].Number })
}

// row is PR n's line on the page, with its words for the page and for its
// commit status (which says nothing of its place in the merge queue).
func (b *Book) row(n int, e *entry, t lifecycle.Track, live Live) statuspage.PR {
	ahead, queued := b.ahead[n]
	mergeAhead, merging := live.MergeAhead(n)
	in := Standing{Merging: merging, MergeAhead: mergeAhead, Track: t, Act: e.act, Queued: queued, Ahead: ahead,
		WaitingFor: e.waitingFor, Failing: e.failing, Merge: e.merge, Base: live.Base, SkipLabel: live.SkipLabel}
	if live.Car != nil {
		if car, cars, ok := live.Car(n); ok {
			in.Car, in.Cars = car, cars
		}
	}
	if live.ForgeWait != nil && merging {
		in.ForgeWait = live.ForgeWait(n)
	}
	if s, ok := live.Busy[n]; ok {
		in.Busy = true
		in.Session, in.Kind = s.Started, s.Kind
	}
	commit := in
	commit.NoPlace = true
	row := statuspage.PR{Number: n, Title: e.title, URL: e.url, Head: e.head, State: string(t.State),
		Attempts: t.Attempts, LastAnswer: t.LastStatus, Next: Next(in), Commit: Next(commit), Done: e.done(),
		Merged: t.State == lifecycle.Merged, Seen: e.seen, Car: in.Car, Cars: in.Cars}
	if in.Car > 0 {
		row.Train = live.Base
	}
	return row
}
