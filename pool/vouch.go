package pool

import (
	"sort"

	"pool/forge"
)

// vouch marks the reviews of PR n that a session of the pool filed: the
// review's session mark is the one the pool made for that session, this PR
// and the review's commit (sessionmark). Of the verdicts that carry one
// mark only the first is vouched for: the mark is on the forge for anyone
// to read, and one session files one verdict, so a later verdict with a
// copied mark (a stolen token turning a request for changes into an
// approval) is not the session's. The marks are checked, not remembered:
// a signed mark holds across restarts and for adopted sessions, with no
// list of review ids to keep.
func (p *Pool) vouch(n int, reviews []forge.Review) []forge.Review {
	order := make([]int, len(reviews))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return reviews[order[a]].ID < reviews[order[b]].ID })
	used := map[string]bool{}
	for _, i := range order {
		r := &reviews[i]
		r.Vouched = false
		if r.Mark == "" || used[r.Mark] || !p.marks.Verify(p.cfg.Repo(), n, r.CommitID, r.Mark) {
			continue
		}
		r.Vouched = true
		if r.State == forge.ReviewApproved || r.State == forge.ReviewRequestChanges {
			used[r.Mark] = true
		}
	}
	return reviews
}
