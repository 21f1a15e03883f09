package ops

import (
	"slices"
	"strings"

	"pool/statuspage"
)

// Combine is the status of a process that serves several repositories:
// st (the process's identity, addresses, workers, warnings) with every
// repository's slots and PRs, named by repository, and its figures, in
// order of name; the earliest start and the oldest last cycle, so that a
// stuck repository shows (and fails readiness). Each of repos is one
// repository's status, its Repo set.
func Combine(st statuspage.Status, repos []statuspage.Status) statuspage.Status {
	repos = slices.Clone(repos)
	slices.SortFunc(repos, func(a, b statuspage.Status) int {
		return strings.Compare(strings.ToLower(a.Repo), strings.ToLower(b.Repo))
	})
	for i, rs := range repos {
		if i == 0 || rs.Started.Before(st.Started) {
			st.Started = rs.Started
		}
		if i == 0 || rs.LastCycle.Before(st.LastCycle) {
			st.LastCycle = rs.LastCycle
		}
		if st.Instance == "" {
			st.Instance = rs.Instance
		}
		fig := statuspage.RepoFigures{Repo: rs.Repo, Busy: len(rs.Slots), LastCycle: rs.LastCycle}
		for _, slot := range rs.Slots {
			slot.Repo = rs.Repo
			st.Slots = append(st.Slots, slot)
		}
		for _, pr := range rs.PRs {
			pr.Repo = rs.Repo
			st.PRs = append(st.PRs, pr)
			switch {
			case pr.Merged:
				fig.Merged++
			case !pr.Done:
				fig.Open++
			}
		}
		st.Repos = append(st.Repos, fig)
	}
	return st
}
