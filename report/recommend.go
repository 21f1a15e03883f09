package report

// The recommendation menu: every sentence `pool report` can recommend,
// written here and nowhere else.
const (
	RecommendMerged      = "PR is already merged; nothing to do."
	RecommendClosed      = "PR was closed without merging; escalate to its author."
	RecommendFetchFailed = "PR state fetch failed or a value is unknown; retry the report."
	RecommendConflict    = "PR has merge conflicts; assign conflict resolution."
	RecommendCIFailed    = "CI failed; assign log triage and a fix."
	RecommendChanges     = "Changes were requested; assign a fixer to address the review."
	RecommendTimedOut    = "Polling timed out with items still pending; decide whether to poll again."
	RecommendPending     = "Checks or reviews are still pending; keep polling."
	RecommendThreads     = "All checks green; triage the unresolved review threads."
	RecommendHeld        = "All checks green and no unresolved threads, but the pool would not merge it now: it is labelled for humans, no review that counts approves it, the branch protection refuses it, the branch needs an update first, or it depends on an issue still open."
	RecommendGreen       = "All checks green and no unresolved threads; the PR may merge."
)

// menu is the order of precedence: the first entry that applies wins. A PR
// that is no longer open needs none of the rest, so those two come first.
var menu = []struct {
	sentence string
	applies  func(Report) bool
}{
	{RecommendMerged, func(r Report) bool { return r.State == stateMerged }},
	{RecommendClosed, func(r Report) bool { return r.State == stateClosed }},
	{RecommendFetchFailed, Report.incomplete},
	{RecommendConflict, func(r Report) bool { return !*r.Mergeable }},
	{RecommendCIFailed, func(r Report) bool { return len(r.Failed) > 0 }},
	// Only a request for changes that counts (lifecycle's verdict on the
	// head) asks for a fixer: one that does not is shown, never obeyed.
	{RecommendChanges, func(r Report) bool { return r.ChangesRequested }},
	{RecommendTimedOut, func(r Report) bool {
		return r.TimedOut && (len(r.Pending) > 0 || r.reviewersWaiting(reviewerTimeout))
	}},
	{RecommendPending, func(r Report) bool {
		return len(r.Pending) > 0 || r.reviewersWaiting(reviewerPending)
	}},
	{RecommendThreads, func(r Report) bool { return r.Threads.N > 0 }},
	{RecommendHeld, func(r Report) bool { return r.MergeHold != "" }},
	{RecommendGreen, func(Report) bool { return true }},
}

// Recommend picks the first sentence of the menu that applies to r.
func Recommend(r Report) string {
	for _, m := range menu {
		if m.applies(r) {
			return m.sentence
		}
	}
	return RecommendFetchFailed // unreachable: the last entry always applies
}
