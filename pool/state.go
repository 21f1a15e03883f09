package pool

import (
	"sort"

	"pool/lifecycle"
)

// track returns the pool's memory of a PR.
func (p *Pool) track(n int) lifecycle.Track {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tracks[n]
}

// setTrack updates a PR's memory and saves it when it changed.
func (p *Pool) setTrack(n int, t lifecycle.Track) {
	p.mu.Lock()
	old, had := p.tracks[n]
	p.tracks[n] = t
	p.mu.Unlock()
	if had && old == t {
		return
	}
	if t.HeadSHA == old.HeadSHA && t.Attempts > old.Attempts {
		p.metrics.RetryAttempted()
	}
	if p.store != nil {
		if err := p.store.Save(n, t); err != nil {
			p.log.Error("saving state failed", "pr", n, "err", err)
		}
	}
}

func (p *Pool) hasTrack(n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.tracks[n]
	return ok
}

func (p *Pool) dropTrack(n int) {
	p.mu.Lock()
	delete(p.tracks, n)
	p.mu.Unlock()
	if p.store != nil {
		if err := p.store.Delete(n); err != nil {
			p.log.Error("saving state failed", "pr", n, "err", err)
		}
	}
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

func (p *Pool) isBusy(n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.busy[n]
}

// takeSlot holds a slot for PR n if one is free and, with several
// repositories, it is this one's turn (see Slots). Only the discovery loop
// takes slots, so the check and the take cannot race each other.
func (p *Pool) takeSlot(n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.busy[n] || !p.slots.take(p.cfg.Repo()) {
		return false
	}
	p.busy[n] = true
	p.stats.notePeak(len(p.busy))
	return true
}

// freeSlots is how many more sessions may start now, in all repositories.
func (p *Pool) freeSlots() int { return p.slots.free() }

// holdSlot marks an adopted session's PR busy, even past the limit: the
// session already runs.
func (p *Pool) holdSlot(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.busy[n] {
		p.slots.hold(p.cfg.Repo())
	}
	p.busy[n] = true
	p.stats.notePeak(len(p.busy))
}

// releaseSlot frees PR n's slot and wakes the discovery loop.
func (p *Pool) releaseSlot(n int) {
	p.mu.Lock()
	if p.busy[n] {
		p.slots.release(p.cfg.Repo())
	}
	delete(p.busy, n)
	p.mu.Unlock()
	select {
	case p.freed <- struct{}{}:
	default:
	}
}

// count adds PR n to one of the report's sets.
func (p *Pool) count(n int, set *map[int]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if *set == nil {
		*set = map[int]bool{}
	}
	(*set)[n] = true
}

func (p *Pool) countCycle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.cycles++
}
