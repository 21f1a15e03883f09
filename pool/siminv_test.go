package pool

import (
	"fmt"
	"time"

	"pool/forge"
)

// check returns the first invariant broken, or "".
func (w *simWorld) check() string {
	w.sf.mu.Lock()
	defer w.sf.mu.Unlock()
	if len(w.sf.broken) > 0 {
		return w.sf.broken[0]
	}
	for _, c := range []func() string{w.checkNotes, w.checkDiagnostics, w.checkSessions, w.checkRequests, w.checkSilence} {
		if broken := c(); broken != "" {
			return broken
		}
	}
	return ""
}

// checkNotes: at most one pool note per PR, head and reason (claims and
// diagnostics have their own bounds). A note younger than simSettle may be
// the second of two pools that read before either posted, whose poster
// has not read the notes back yet (the forge answers late): it takes its
// note back then.
func (w *simWorld) checkNotes() string {
	seen := map[string]int{}
	now := time.Now()
	for _, nt := range w.sf.notes {
		kind := nt.kind
		if kind == forge.MarkClaim || kind == forge.MarkRetry || now.Sub(nt.at) < simSettle {
			continue
		}
		key := fmt.Sprintf("#%d at %s: %q", nt.n, short(nt.head), kind)
		if seen[key]++; seen[key] > 1 {
			return "two notes on " + key
		}
	}
	return ""
}

// checkDiagnostics: the k-th pause between diagnostics on one head is at
// least half of diagnostic_every poll intervals doubled k-1 times, up to
// 8 hours. A wait begins again when the PR is reopened or pushed. Notes
// younger than simSettle wait, as in checkNotes.
func (w *simWorld) checkDiagnostics() string {
	type wait struct {
		simHead
		epoch int
	}
	last := map[wait]time.Time{}
	count := map[wait]int{}
	first := 10 * 30 * time.Second
	now := time.Now()
	for _, nt := range w.sf.notes {
		if nt.kind != forge.MarkRetry || now.Sub(nt.at) < simSettle {
			continue
		}
		h := wait{simHead{nt.n, nt.head}, nt.epoch}
		if count[h] > 0 {
			want := min(first<<(count[h]-1), 8*time.Hour) / 2
			if gap := nt.at.Sub(last[h]); gap < want {
				return fmt.Sprintf("#%d at %s: diagnostic %d after %s, want at least %s", h.n, short(h.head), count[h]+1, gap, want)
			}
		}
		count[h]++
		last[h] = nt.at
	}
	return ""
}

// checkSessions: one live claim per head across the pools (once the
// claims' tie-break has had simSettle to take a loser back; a claim whose
// life ended holds nothing: a killed pool's, taken over, or its own that
// it claims again after its restart), three where a
// session left no counted review; one session of a head at a time, and
// none after a session filed its verdict there. A head whose sessions
// leave no review gets another after a back-off, up to
// lifecycle.NoReviewNoteAfter of a pool's, then a note and none (before
// that hold, a head got one after another: "#195 at pr-195-1: 4 sessions"
// in seed 1, 1 run in 8).
func (w *simWorld) checkSessions() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.twice != "" {
		return w.twice
	}
	claimed := map[simHead]int{}
	now := time.Now()
	for _, nt := range w.sf.notes {
		// A claim younger than simSettle may be the loser of a race
		// whose poster has not read the claims back yet: the forge answers
		// late (simSlow), and the tie-break takes it back then.
		if nt.claim != "" && now.Sub(nt.at) >= simSettle && now.Sub(nt.active) < simClaimTTL {
			claimed[simHead{nt.n, nt.claim}]++
		}
	}
	for h, c := range claimed {
		if c > 1 && !(w.noReview[h] && c <= 3) {
			return fmt.Sprintf("#%d at %s: %d claims (a session left no review: %v)", h.n, short(h.head), c, w.noReview[h])
		}
	}
	return ""
}

// checkRequests: at most simRequestsPerHr requests of one pool naming one
// PR in an hour, and simRefusedPerHr of those made while the forge refused
// its merges and the pool knew it.
func (w *simWorld) checkRequests() string {
	for k, c := range w.sf.requests {
		if k.n > 0 && c > simRequestsPerHr {
			return fmt.Sprintf("#%d: %d forge requests from %s in hour %d, want at most %d: %v", k.n, c, k.pool, k.hour-w.start.Unix()/3600, simRequestsPerHr, w.sf.ops[k])
		}
	}
	for k, c := range w.sf.refusedReqs {
		if c > simRefusedPerHr {
			return fmt.Sprintf("#%d: %d forge requests from %s in hour %d while its merge was refused, want at most %d: %v", k.n, c, k.pool, k.hour-w.start.Unix()/3600, simRefusedPerHr, w.sf.refusedOps[k])
		}
	}
	return ""
}

// checkSilence: no open PR waits longer than simSilence after a change
// that asks for the pool's word without one: a note, a review, an update
// or a merge, a commit status on its head whose description changed, or
// a hold note or a live claim (a session reviews it) on its head. Left out: a PR labelled for
// humans, an unapproved draft, a head whose counted reviewer asked for
// changes (the author's turn).
func (w *simWorld) checkSilence() (broken string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	now := time.Now()
	defer func() {
		if w.late != "" && broken == "" {
			broken = w.late
		}
	}()
	for n, since := range w.since {
		pr := w.f.prs[n]
		h := simHead{n, pr.HeadSHA}
		if since.IsZero() || pr.State != "open" || w.sf.acted[n].After(since) || w.sf.holds[h] != "" || now.Sub(w.sf.claimed[h]) < simClaimTTL {
			w.settle(n, since, now)
			continue
		}
		if pr.HasLabel(simSkip) || pr.BaseRef != "main" || w.authorsTurn(n, pr.HeadSHA) || (pr.Draft && !w.sf.approvedLocked(n, pr.HeadSHA)) {
			w.settle(n, since, now)
			continue
		}
		if w.late != "" {
			return w.late
		}
		if wait := now.Sub(since); wait > simSilence {
			return fmt.Sprintf("#%d silent for %s since its last change (head %s)", n, wait.Round(time.Minute), short(pr.HeadSHA))
		}
	}
	return ""
}

// settle ends a wait. One the pool answered counts toward the longest
// silence; one the PR's state explains (a label, the author's turn) does
// not. Callers hold w.mu.
func (w *simWorld) settle(n int, since, now time.Time) {
	if since.IsZero() {
		return
	}
	if at := w.sf.acted[n]; at.After(since) && !at.After(now) {
		w.silence = max(w.silence, at.Sub(since))
		if at.Sub(since) > simSilence && w.late == "" {
			w.late = fmt.Sprintf("#%d answered %s after its last change", n, at.Sub(since).Round(time.Minute))
		}
	}
	w.since[n] = time.Time{}
}

// authorsTurn: a counted review of head asks for changes. Callers hold
// w.f.mu.
func (w *simWorld) authorsTurn(n int, head string) bool {
	return simVerdict(w.f.reviews[n], map[string]bool{head: true}) == forge.ReviewRequestChanges
}

func (w *simWorld) figures() simFigures {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sf.mu.Lock()
	defer w.sf.mu.Unlock()
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	var fig simFigures
	for _, pr := range w.f.prs {
		if pr.Merged && pr.MergedBy == w.f.me {
			fig.merges++
		} else if pr.Merged {
			fig.humanMerges++
		}
	}
	for _, hs := range w.heads {
		fig.heads += len(hs)
	}
	for _, c := range w.sessions {
		fig.sessions += c
		fig.maxSessionsPerHead = max(fig.maxSessionsPerHead, c)
	}
	perHead, notesOn := map[simHead]int{}, map[simHead]int{}
	for _, nt := range w.sf.notes {
		h := simHead{nt.n, nt.head}
		switch nt.kind {
		case forge.MarkClaim:
			if nt.claim != "" {
				fig.claims++
				perHead[simHead{nt.n, nt.claim}]++
			}
			continue
		case forge.MarkRetry:
			fig.diagnostics++
		}
		fig.notes++
		notesOn[h]++
	}
	for _, c := range perHead {
		fig.maxClaimsPerHead = max(fig.maxClaimsPerHead, c)
	}
	for _, c := range notesOn {
		fig.maxNotesOnHead = max(fig.maxNotesOnHead, c)
	}
	for k, c := range w.sf.requests {
		if k.n > 0 {
			fig.requests += c
			fig.maxPerPRHr = max(fig.maxPerPRHr, c)
		} else {
			fig.repoRequests += c
		}
	}
	for k, c := range w.sf.refusedReqs {
		if c > fig.maxRefusedPerPRHr {
			fig.maxRefusedPerPRHr, fig.maxRefusedOps = c, w.sf.refusedOps[k]
		}
	}
	fig.poolHours = w.days * 24 * len(w.pools)
	fig.prHours = int(w.openHours)
	fig.longestSilence = w.silence
	fig.updates, fig.editsAsked = w.sf.updates, w.sf.editsAsked
	fig.statusWrites = w.sf.statusWrites
	w.fixes.mu.Lock()
	fig.fixers, fig.fixesPushed = w.fixers, w.fixes.pushed
	w.fixes.mu.Unlock()
	return fig
}
