package pool

import (
	"sort"
	"sync"
	"time"

	"pool/forge"
	"pool/forgejo"
	"pool/lifecycle"
)

// A PR's track changes in this file only, through writeTrack: under the
// PR's lock it reads the track as it is now, applies one change of package
// lifecycle to it and saves the result. The loop, the merge queue and the
// session followers each record what they saw through the functions below;
// none reads a track, changes it and writes it back on its own. The marks
// of an action (a note posted, an auto-merge cancelled) are recorded by
// marked, after the action succeeded.

// writeTrack is the one writer of the tracks. change gets the track as it
// is now (had: the pool tracks the PR) and returns the new one, or keep
// false to forget the PR.
func (p *Pool) writeTrack(n int, change func(t lifecycle.Track, had bool) (next lifecycle.Track, keep bool)) lifecycle.Track {
	lock := p.prLock(n)
	lock.Lock()
	defer lock.Unlock()
	p.mu.Lock()
	old, had := p.tracks[n]
	p.mu.Unlock()
	t, keep := change(old, had)
	p.mu.Lock()
	if keep {
		p.tracks[n] = t
	} else {
		delete(p.tracks, n)
	}
	p.mu.Unlock()
	p.save(n, old, had, t, keep)
	return t
}

// actLock is PR n's lock, held while an action of its is carried out and
// its marks recorded, so that two goroutines never carry out one action.
func (p *Pool) actLock(n int) *sync.Mutex { return p.lockIn(p.acting, n) }

// prLock is PR n's lock, held while its track changes.
func (p *Pool) prLock(n int) *sync.Mutex { return p.lockIn(p.locks, n) }

// lockIn returns PR n's lock in locks, made on first use.
func (p *Pool) lockIn(locks map[int]*sync.Mutex, n int) *sync.Mutex {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := locks[n]
	if l == nil {
		l = &sync.Mutex{}
		locks[n] = l
	}
	return l
}

// save writes a changed track to the store, or deletes a forgotten one.
func (p *Pool) save(n int, old lifecycle.Track, had bool, t lifecycle.Track, keep bool) {
	var err error
	switch {
	case !keep && had:
		err = p.store.Delete(n)
	case !keep, had && old == t:
		return
	default:
		if t.HeadSHA == old.HeadSHA && t.Attempts > old.Attempts {
			p.metrics.RetryAttempted()
		}
		err = p.store.Save(n, t)
	}
	if err != nil {
		p.log.Error("saving state failed", "pr", n, "err", err)
	}
}

// set returns a change to t whatever the track was.
func set(t lifecycle.Track) func(lifecycle.Track, bool) (lifecycle.Track, bool) {
	return func(lifecycle.Track, bool) (lifecycle.Track, bool) { return t, true }
}

// apply returns the change a lifecycle function makes to the track.
func apply(f func(lifecycle.Track) lifecycle.Track) func(lifecycle.Track, bool) (lifecycle.Track, bool) {
	return func(t lifecycle.Track, _ bool) (lifecycle.Track, bool) { return f(t), true }
}

// decided records a decision on an observation of the PR.
func (p *Pool) decided(n int, obs lifecycle.Observation) (lifecycle.Track, lifecycle.Action) {
	var act lifecycle.Action
	failures := 0
	t := p.writeTrack(n, apply(func(t lifecycle.Track) lifecycle.Track {
		failures = t.Failures
		t, act = lifecycle.Decide(p.policy, t, obs)
		return t
	}))
	if t.Failures > failures {
		p.log.Warn("the session left no counted review on the head; backing off", "pr", n, "failures", t.Failures)
	}
	return t, act
}

// marked records the marks of an action that succeeded.
func (p *Pool) marked(n int, m lifecycle.Marks) {
	if m != (lifecycle.Marks{}) {
		p.writeTrack(n, apply(func(t lifecycle.Track) lifecycle.Track { return t.Mark(m) }))
	}
}

// mergeAnswered records the forge's answer to the merge of head.
func (p *Pool) mergeAnswered(n int, head string, res forge.MergeResult) (lifecycle.Track, lifecycle.Action) {
	var act lifecycle.Action
	t := p.writeTrack(n, apply(func(t lifecycle.Track) lifecycle.Track {
		t, act = lifecycle.AfterMerge(p.policy, t, head, res, p.now())
		return t
	}))
	return t, act
}

// landed records a head found on the base that the forge refused to mark
// merged (res) in commit.
func (p *Pool) landed(n int, commit string, res forge.MergeResult) (lifecycle.Track, lifecycle.Action) {
	var act lifecycle.Action
	t := p.writeTrack(n, apply(func(t lifecycle.Track) lifecycle.Track {
		t, act = lifecycle.HeadOnBase(t, commit, res)
		return t
	}))
	return t, act
}

// updateAnswered records the forge's answer to the update of pr's head in
// style (diff: the hash of its diff before, for rebase; produced: the head
// read right after). ok false: nothing
// follows (an update made, or a PR closed meanwhile).
func (p *Pool) updateAnswered(pr forge.PR, res forgejo.UpdateResult, style, diff, produced string) (lifecycle.Track, lifecycle.Action, bool) {
	var act lifecycle.Action
	switch res.Outcome {
	case forgejo.UpdateClosed:
		return lifecycle.Track{}, act, false // the discovery loop decides again
	case forgejo.UpdateDone:
		p.writeTrack(pr.Number, apply(func(t lifecycle.Track) lifecycle.Track {
			return lifecycle.Updated(t, lifecycle.HeadUpdate{From: pr.HeadSHA, Base: pr.BaseSHA, Produced: produced,
				OldMergeBase: pr.MergeBase, Style: style, Diff: diff, At: p.now()})
		}))
		return lifecycle.Track{}, act, false
	}
	t := p.writeTrack(pr.Number, apply(func(t lifecycle.Track) lifecycle.Track {
		if res.Outcome == forgejo.UpdateConflict {
			t, act = lifecycle.UpdateConflicted(t, pr.HeadSHA)
		} else { // refused, or an answer the pool does not know: backs off, never a call every cycle
			t, act = lifecycle.UpdateRefused(p.policy, t, pr.HeadSHA, res.Status, p.now())
		}
		return t
	}))
	return t, act, true
}

// sessionEnded records that the PR's session ended, its reviewer
// reporting hint, at the head the pool last decided on: the session was
// started for that head, and the loop decides nothing on a PR while its
// session runs.
func (p *Pool) sessionEnded(n int, hint string, ran bool) {
	p.writeTrack(n, func(t lifecycle.Track, had bool) (lifecycle.Track, bool) {
		if !had {
			return t, false // forgotten meanwhile (merged or closed): nothing to judge
		}
		if !ran {
			return lifecycle.SessionCut(t, t.HeadSHA, hint), true
		}
		return lifecycle.SessionEnded(t, t.HeadSHA, hint), true
	})
}

// sessionNotStarted records a session that could not start: the PR backs
// off (lifecycle.SessionUnfinished), never toward the no-review hold.
func (p *Pool) sessionNotStarted(n int) {
	p.writeTrack(n, apply(func(t lifecycle.Track) lifecycle.Track {
		return lifecycle.SessionUnfinished(p.policy, t, p.now())
	}))
}

// fixerStarted records a fixer session started for head.
func (p *Pool) fixerStarted(n int, head string) {
	p.writeTrack(n, apply(func(t lifecycle.Track) lifecycle.Track { return lifecycle.FixerStarted(t, head) }))
}

// lostClaim holds the PR off until then: another pool won its claim.
func (p *Pool) lostClaim(n int, until time.Time) {
	p.writeTrack(n, apply(func(t lifecycle.Track) lifecycle.Track { return lifecycle.LostClaim(t, until) }))
}

// recovered records the memory of an approved PR rebuilt from the forge.
func (p *Pool) recovered(n int, head string, attempts int) {
	p.writeTrack(n, set(lifecycle.Recovered(head, attempts)))
}

// forget stops tracking a PR: merged, closed, gone or retargeted.
func (p *Pool) forget(n int) {
	p.writeTrack(n, func(lifecycle.Track, bool) (lifecycle.Track, bool) { return lifecycle.Track{}, false })
}

// track returns the pool's memory of a PR.
func (p *Pool) track(n int) lifecycle.Track {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tracks[n]
}

func (p *Pool) hasTrack(n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.tracks[n]
	return ok
}

func (p *Pool) trackedNumbers() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]int, 0, len(p.tracks))
	for n := range p.tracks {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// knows reports whether the pool reviewed or tracked the PR's review.
func (p *Pool) knows(n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats.reviewed[n] || p.tracks[n].ReviewedSHA != ""
}
