package serve

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"pool/pool"
)

// WriteReport prints a run's report in the reference design's format. A total of
// several repositories' reports names the repository of each pending PR,
// and ends with one line of figures per repository.
func WriteReport(w io.Writer, r pool.Report) error {
	pending := pendingNames(r)
	_, err := fmt.Fprintf(w, `INSTANCE_ID: %s
TOTAL_PRS_REVIEWED: %d
  - Approved and merged: %d
  - Merged by a human: %d
  - Merge scheduled (pending CI): %d
  - Changes requested: %d
  - Conflicts detected: %d
  - Skipped (human-only): %d
  - Merge retries ongoing at exit: %d
PENDING_MERGE_PRS: [%s]
CI_FIXES_ATTEMPTED: %d
REVIEW_CYCLES_COMPLETED: %d
`, r.InstanceID, r.Reviewed, r.Merged, r.MergedByHumans, r.Scheduled, r.ChangesRequested, r.Conflicts, r.Skipped,
		r.Retrying, strings.Join(pending, ", "), r.CIFixes, r.Cycles)
	if err == nil && len(r.AgentServers) > 0 {
		err = writeServers(w, r.AgentServers)
	}
	if err != nil || len(r.Repos) == 0 {
		return err
	}
	if _, err := fmt.Fprintln(w, "BY_REPOSITORY:"); err != nil {
		return err
	}
	for _, o := range r.Repos {
		if _, err := fmt.Fprintf(w, "  - %s: reviewed %d, merged %d, merge scheduled %d, changes requested %d, conflicts %d, skipped %d, retrying %d, CI fixes %d, cycles %d\n",
			o.Repo, o.Reviewed, o.Merged, o.Scheduled, o.ChangesRequested, o.Conflicts, o.Skipped, o.Retrying, o.CIFixes, o.Cycles); err != nil {
			return err
		}
	}
	return nil
}

// writeServers prints the sessions each agent server ran.
func writeServers(w io.Writer, servers []pool.ServerCount) error {
	if _, err := fmt.Fprintln(w, "SESSIONS_BY_AGENT_SERVER:"); err != nil {
		return err
	}
	for _, a := range servers {
		if _, err := fmt.Fprintf(w, "  - %s: %d started, %d lost\n", a.URL, a.Started, a.Lost); err != nil {
			return err
		}
	}
	return nil
}

// pendingNames are the PRs waiting to merge: "#N", or "owner/name#N" in a
// total of several repositories.
func pendingNames(r pool.Report) []string {
	if len(r.Repos) == 0 {
		out := make([]string, len(r.PendingMerge))
		for i, n := range r.PendingMerge {
			out[i] = fmt.Sprintf("#%d", n)
		}
		return out
	}
	var out []string
	for _, o := range r.Repos {
		for _, n := range o.PendingMerge {
			out = append(out, fmt.Sprintf("%s#%d", o.Repo, n))
		}
	}
	return out
}

// add adds a repository's report (o, whose Repo is set) to a total: the
// figures summed, and o kept in Repos, sorted by name.
func add(r, o pool.Report) pool.Report {
	r.Repos = append(slices.Clone(r.Repos), o)
	slices.SortFunc(r.Repos, func(a, b pool.Report) int { return strings.Compare(a.Repo, b.Repo) })
	if r.InstanceID == "" {
		r.InstanceID = o.InstanceID
	}
	r.Reviewed += o.Reviewed
	r.Merged += o.Merged
	r.MergedByHumans += o.MergedByHumans
	r.Scheduled += o.Scheduled
	r.ChangesRequested += o.ChangesRequested
	r.Conflicts += o.Conflicts
	r.Skipped += o.Skipped
	r.Retrying += o.Retrying
	r.PendingMerge = append(r.PendingMerge, o.PendingMerge...)
	r.CIFixes += o.CIFixes
	r.Cycles += o.Cycles
	r.PeakSlots = max(r.PeakSlots, o.PeakSlots) // the busiest repository's
	return r
}
