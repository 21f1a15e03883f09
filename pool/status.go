package pool

import (
	"maps"
	"runtime/debug"
	"sync"
	"time"

	"pool/describe"
	"pool/lifecycle"
	"pool/statuspage"
)

// Metrics is what the pool counts as it works; package metrics has it.
type Metrics interface {
	SessionStarted(kind string)
	SessionFinished(outcome string)
	MergeCalled(outcome string)
	Merged(by string) // a tracked PR merged, by "pool" or "human"
	RetryAttempted()
	CycleDone(d time.Duration)
	ClaimRace(won bool)
	// HeadUpdated: the forge updated a PR's branch at the pool's call (a
	// new head: one CI run). TrainFormed: a merge train formed (its first
	// car). CarFormed: a car pushed to its train branch (one CI run).
	// CarEjected: a car's checks failed and its PR left the train.
	HeadUpdated()
	TrainFormed()
	CarFormed()
	CarEjected()
}

type noMetrics struct{}

func (noMetrics) SessionStarted(string)   {}
func (noMetrics) SessionFinished(string)  {}
func (noMetrics) MergeCalled(string)      {}
func (noMetrics) Merged(string)           {}
func (noMetrics) RetryAttempted()         {}
func (noMetrics) CycleDone(time.Duration) {}
func (noMetrics) ClaimRace(bool)          {}
func (noMetrics) HeadUpdated()            {}
func (noMetrics) TrainFormed()            {}
func (noMetrics) CarFormed()              {}
func (noMetrics) CarEjected()             {}

// Status is what the pool shows of itself now: slots, tracked and recently
// finished PRs, and identity. Warnings are added by the caller that keeps
// the log.
func (p *Pool) Status() statuspage.Status {
	now := p.now()
	live := describe.Live{Busy: map[int]describe.Session{}, MergeAhead: p.queue.ahead, Car: p.queue.car, Base: p.Base(), SkipLabel: p.cfg.SkipLabel,
		ForgeWait: func(n int) time.Duration { return p.queue.forgeWait(n, now) }}
	p.mu.Lock()
	for n := range p.busy {
		var s describe.Session
		if ss := p.sessions.Of(n); ss != nil {
			s = describe.Session{ID: ss.ID, Kind: ss.Kind, Started: ss.Started}
		}
		live.Busy[n] = s
	}
	live.Tracks = maps.Clone(p.tracks) // the track as it is now, not as last decided
	p.mu.Unlock()
	st := statuspage.Status{Instance: p.instance, Version: Version(), Repo: p.cfg.Repo(), ForgeURL: p.cfg.ForgejoURL,
		AgentURL: p.cfg.AgentURLs(), Now: now, Workers: p.cfg.Workers}
	p.book.Show(&st, live)
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
func (p *Pool) Changed() <-chan struct{} { return p.book.Changed() }

// Version is the build's version and commit, for the status page; read
// once (each status sync asks for it).
var Version = sync.OnceValue(version)

func version() string {
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
