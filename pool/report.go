package pool

import (
	"sort"

	"pool/lifecycle"
)

// Stats is what the pool counted during a run. Guarded by Pool.mu.
type Stats struct {
	reviewed         map[int]bool // PRs a session of ours finished on
	merged           map[int]bool
	mergedByHumans   map[int]bool // tracked PRs another account than the pool's merged
	changesRequested map[int]bool
	conflicts        map[int]bool
	skipped          map[int]bool
	ciFixes          int
	cycles           int
	peak             int // most slots busy at once
}

func (s *Stats) notePeak(n int) {
	if n > s.peak {
		s.peak = n
	}
}

// Report is the summary printed when the pool exits.
type Report struct {
	InstanceID       string
	Reviewed         int
	Merged           int
	MergedByHumans   int // PRs the pool tracked that a human merged
	Scheduled        int
	ChangesRequested int
	Conflicts        int
	Skipped          int
	Retrying         int
	PendingMerge     []int
	CIFixes          int
	Cycles           int
	PeakSlots        int
	// Repo is the repository a pool of several reported on; Repos, in a
	// total, the reports of each (see package serve). Both are empty for a pool
	// that serves one repository alone.
	Repo  string
	Repos []Report
	// AgentServers are the sessions each agent server ran, when the
	// process drove several (package serve fills it in).
	AgentServers []ServerCount
}

// ServerCount is the sessions placed on one agent server, and those of
// them counted lost while it was down.
type ServerCount struct {
	URL           string
	Started, Lost int
}

func (p *Pool) report() Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Report{InstanceID: p.instance, Reviewed: len(p.stats.reviewed), Merged: len(p.stats.merged),
		MergedByHumans:   len(p.stats.mergedByHumans),
		ChangesRequested: len(p.stats.changesRequested), Conflicts: len(p.stats.conflicts),
		Skipped: len(p.stats.skipped), CIFixes: p.stats.ciFixes, Cycles: p.stats.cycles,
		PeakSlots: p.stats.peak}
	for n, t := range p.tracks {
		if !t.State.Retrying() {
			continue
		}
		r.Retrying++
		r.PendingMerge = append(r.PendingMerge, n)
		if t.State == lifecycle.MergeScheduled {
			r.Scheduled++
		}
	}
	sort.Ints(r.PendingMerge)
	return r
}
