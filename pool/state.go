package pool

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
	if p.busy[n] || !p.slots.Take(p.cfg.Repo()) {
		return false
	}
	p.busy[n] = true
	p.stats.notePeak(len(p.busy))
	return true
}

// freeSlots is how many more sessions may start now, in all repositories.
func (p *Pool) freeSlots() int { return p.slots.Free() }

// holdSlot marks an adopted session's PR busy, even past the limit: the
// session already runs.
func (p *Pool) holdSlot(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.busy[n] {
		p.slots.Hold(p.cfg.Repo())
	}
	p.busy[n] = true
	p.stats.notePeak(len(p.busy))
}

// releaseSlot frees PR n's slot and wakes the discovery loop.
func (p *Pool) releaseSlot(n int) {
	p.mu.Lock()
	if p.busy[n] {
		p.slots.Release(p.cfg.Repo())
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
