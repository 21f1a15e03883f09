package pool

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"pool/lifecycle"
)

// Stats is what the pool counted during a run. Guarded by Pool.mu.
type Stats struct {
	reviewed         map[int]bool // PRs a session of ours finished on
	merged           map[int]bool
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
	Scheduled        int
	ChangesRequested int
	Conflicts        int
	Skipped          int
	Retrying         int
	PendingMerge     []int
	CIFixes          int
	Cycles           int
	PeakSlots        int
}

func (p *Pool) report() Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Report{InstanceID: p.instance, Reviewed: len(p.stats.reviewed), Merged: len(p.stats.merged),
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

// Write prints the report in the reference design's format.
func (r Report) Write(w io.Writer) error {
	pending := make([]string, len(r.PendingMerge))
	for i, n := range r.PendingMerge {
		pending[i] = fmt.Sprintf("#%d", n)
	}
	_, err := fmt.Fprintf(w, `INSTANCE_ID: %s
TOTAL_PRS_REVIEWED: %d
  - Approved and merged: %d
  - Merge scheduled (pending CI): %d
  - Changes requested: %d
  - Conflicts detected: %d
  - Skipped (human-only): %d
  - Merge retries ongoing at exit: %d
PENDING_MERGE_PRS: [%s]
CI_FIXES_ATTEMPTED: %d
REVIEW_CYCLES_COMPLETED: %d
`, r.InstanceID, r.Reviewed, r.Merged, r.Scheduled, r.ChangesRequested, r.Conflicts, r.Skipped,
		r.Retrying, strings.Join(pending, ", "), r.CIFixes, r.Cycles)
	return err
}
