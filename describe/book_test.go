package describe

import (
	"testing"
	"time"

	"pool/forge"
	"pool/lifecycle"
	"pool/statuspage"
)

// TestACommitStatusSaysNothingOfAQueuePlace: a PR's commit status is written
// again whenever its text changes, so a text that counts the PRs ahead of it
// in a queue is written again at every step of that queue: over a backlog
// of n PRs, about n²/2 writes. The page says the place; the commit status
// says the same thing at every step.
func TestACommitStatusSaysNothingOfAQueuePlace(t *testing.T) {
	now := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	const prs = 8
	for _, tc := range []struct {
		name  string
		track lifecycle.Track
		act   lifecycle.Action
	}{
		{"review queue", lifecycle.Track{State: lifecycle.Unreviewed}, lifecycle.Action{Kind: lifecycle.Review}},
		{"fixer queue", lifecycle.Track{State: lifecycle.CIFailing}, lifecycle.Action{Kind: lifecycle.Fix}},
		{"update queue", lifecycle.Track{State: lifecycle.OutOfDate}, lifecycle.Action{Kind: lifecycle.Update}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBook(now)
			tracks := map[int]lifecycle.Track{}
			var todo []int
			for n := 1; n <= prs; n++ {
				tr := tc.track
				tr.HeadSHA = "head"
				tracks[n] = tr
				b.Decided(forge.PR{Number: n, HeadSHA: "head"}, tr, tc.act, now)
				todo = append(todo, n)
			}
			live := Live{Tracks: tracks, Busy: map[int]Session{}, Base: "main",
				MergeAhead: func(int) (int, bool) { return 0, false }}
			commits := map[int]map[string]bool{}
			pages := map[int]map[string]bool{}
			for step := 0; step < prs; step++ { // one PR leaves the queue a step
				if tc.act.Kind == lifecycle.Update { // the merge queue, not a slot's
					done := step
					live.MergeAhead = func(n int) (int, bool) { return n - 1 - done, n > done }
				} else {
					b.Queued(todo[step:], 0, now)
				}
				var st statuspage.Status
				b.Show(&st, live)
				for _, row := range st.PRs {
					if row.Number <= step {
						continue
					}
					if commits[row.Number] == nil {
						commits[row.Number], pages[row.Number] = map[string]bool{}, map[string]bool{}
					}
					commits[row.Number][row.Commit] = true
					pages[row.Number][row.Next] = true
				}
			}
			for n := 1; n <= prs; n++ {
				if len(commits[n]) != 1 {
					t.Errorf("PR %d: %d commit status texts while it waited in the queue, want 1: %v", n, len(commits[n]), commits[n])
				}
			}
			if len(pages[prs]) != prs {
				t.Errorf("PR %d: %d page texts, want one a place (%d): %v", prs, len(pages[prs]), prs, pages[prs])
			}
		})
	}
}
