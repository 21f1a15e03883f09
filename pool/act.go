package pool

import (
	"cmp"
	"context"
	"pool/forge"
	"pool/texts"
	"slices"
	"strings"
	"time"

	"pool/internal/retry"
	"pool/lifecycle"
)

// act carries out a decision of the discovery loop and, once it
// succeeded, records its marks: a note or a cancel that failed is asked for
// again by the next decision. Review and Fix are left to the caller, which
// owns the slot.
func (p *Pool) act(ctx context.Context, pr forge.PR, t lifecycle.Track, a lifecycle.Action) error {
	return p.carryOut(ctx, pr, t, a, p.perform)
}

// carryOut carries out action a with do under the PR's act lock, unless
// its marks are recorded already, and records them once do succeeded.
func (p *Pool) carryOut(ctx context.Context, pr forge.PR, t lifecycle.Track, a lifecycle.Action,
	do func(context.Context, forge.PR, lifecycle.Track, lifecycle.Action) error) error {
	acting := p.actLock(pr.Number)
	acting.Lock()
	defer acting.Unlock()
	if p.track(pr.Number).Holds(a.Marks) {
		return nil // the loop or the merge queue carried it out since it was decided
	}
	if err := do(ctx, pr, t, a); err != nil {
		return err
	}
	p.marked(pr.Number, a.Marks)
	return nil
}

// perform is the loop's part of an action: what post writes on the forge,
// then the merge queue for a merge or an update, a PR's drop, and counts.
func (p *Pool) perform(ctx context.Context, pr forge.PR, t lifecycle.Track, a lifecycle.Action) error {
	if err := p.post(ctx, pr, t, a); err != nil {
		return err
	}
	switch a.Kind {
	case lifecycle.Merge, lifecycle.Update:
		if p.cfg.DryRun { // a dry run hands nothing on: no merge queue, no slot (cycle)
			p.log.Info("dry run: would queue", "pr", pr.Number, "head", pr.HeadSHA, "action", a.Kind)
			return nil
		}
		p.queue.add(pr.Number, pr.HeadSHA, p.now()) // the queue merges (or updates) it when it is next
		if t.RefusedForARule() {
			p.queue.wasRefused(pr.Number)
		}
	case lifecycle.Skip:
		p.count(pr.Number, &p.stats.skipped)
	case lifecycle.Drop:
		p.drop(ctx, pr, t, a)
	case lifecycle.Wait:
		if t.State == lifecycle.ChangesRequested {
			p.count(pr.Number, &p.stats.changesRequested)
		}
	}
	return nil
}

// post writes on the forge what an action asks for: its diagnostic, its
// note, the cancel of an auto-merge. The merge queue's decisions and the
// forge's answers to its calls post through it too (merger.say).
func (p *Pool) post(ctx context.Context, pr forge.PR, t lifecycle.Track, a lifecycle.Action) error {
	if a.Diagnostic {
		if err := p.diagnose(ctx, pr.Number, t, a.Reason); err != nil {
			return err
		}
	}
	switch a.Kind {
	case lifecycle.Disarm:
		return p.forge.CancelAutoMerge(ctx, p.cfg.Owner, p.cfg.Name, pr.Number)
	case lifecycle.NoteConflict:
		p.count(pr.Number, &p.stats.conflicts)
		return p.noteOnce(ctx, pr.Number, texts.ConflictBody(p.Base(), pr.HeadSHA),
			func(body string) bool { return texts.NotedAt(body, forge.MarkConflict, pr.HeadSHA) })
	case lifecycle.NoteBlocked:
		return p.noteBlocked(ctx, pr, a.Reason)
	case lifecycle.NoteUnvouched:
		p.log.Warn("an approval no session of the pool filed does not count", "pr", pr.Number, "reason", a.Reason)
		_, err := p.comment(ctx, pr.Number, texts.UnvouchedBody(pr.HeadSHA, a.Reason))
		return err
	case lifecycle.NoteNoReview:
		p.log.Warn("sessions leave no counted review; no more sessions of this head", "pr", pr.Number, "reason", a.Reason)
		return p.noteOnce(ctx, pr.Number, texts.NoReviewBody(pr.HeadSHA, a.Reason, p.cfg.Reviews.AllowLabel),
			func(body string) bool { return texts.NotedAt(body, forge.MarkNoReview, pr.HeadSHA) })
	case lifecycle.NoteWithheld:
		p.log.Info("no review session until a maintainer's label", "pr", pr.Number, "author", pr.Author, "reason", a.Reason)
		return p.noteOnce(ctx, pr.Number, texts.WithheldBody(pr.HeadSHA, a.Reason, p.cfg.Reviews.AllowLabel),
			func(body string) bool { return texts.WithheldNoted(body, pr.HeadSHA, a.Reason) })
	}
	return nil
}

// noteBlocked posts, once per head and reason, why the forge's rules keep
// the PR from merging. A note already on the forge (from before a lost
// state dir) is not posted again.
func (p *Pool) noteBlocked(ctx context.Context, pr forge.PR, reason string) error {
	p.log.Info("merge blocked; waiting for the PR or the rules to change", "pr", pr.Number, "reason", reason)
	return p.noteOnce(ctx, pr.Number, texts.BlockedBody(pr.HeadSHA, reason),
		func(body string) bool { return texts.BlockedNoted(body, pr.HeadSHA, reason) })
}

// noteOnce posts a note unless the pool's account wrote one that noted
// says is it already: a post whose answer was lost, or a pool that lost
// its state dir, posts it no second time.
func (p *Pool) noteOnce(ctx context.Context, n int, body string, noted func(string) bool) error {
	comments, err := p.forge.Comments(ctx, p.cfg.Owner, p.cfg.Name, n)
	if err != nil {
		return err
	}
	for _, c := range comments {
		if strings.EqualFold(c.Author, p.me) && noted(c.Body) {
			return nil
		}
	}
	return p.postFirst(ctx, n, body, func(c forge.Comment) bool { return noted(c.Body) })
}

// notedOn reports whether the pool's account (this pool or another of the
// repository) posted the note of kind for head among comments: a note
// another account imitates counts for nothing.
func (p *Pool) notedOn(comments []forge.Comment, kind, head string) bool {
	for _, c := range comments {
		if strings.EqualFold(c.Author, p.me) && texts.NotedAt(c.Body, kind, head) {
			return true
		}
	}
	return false
}

// postFirst posts a note and takes it back if the forge then shows an
// earlier one of the account's that same says is the same note: two pools
// of one repository that read before either posted each posted theirs
// (TestPoolsOfOneRepositoryNoteOnce: 2 hold notes, want 1). The read after
// the post is tried again, and a post whose answer was lost may have made
// a copy too: every copy after the first goes
// (TestANoteTakenBackIsDeletedThoughTheForgeFailsOnce). A read that keeps
// failing leaves the note.
func (p *Pool) postFirst(ctx context.Context, n int, body string, same func(forge.Comment) bool) error {
	mine, posted := p.comment(ctx, n, body)
	if posted != nil && !retry.Later(posted) {
		return posted
	}
	var comments []forge.Comment
	err := tryAgain(ctx, func() (err error) {
		comments, err = p.forge.Comments(ctx, p.cfg.Owner, p.cfg.Name, n)
		return err
	})
	if err != nil {
		return posted
	}
	var copies []forge.Comment
	for _, c := range comments {
		if strings.EqualFold(c.Author, p.me) && same(c) {
			copies = append(copies, c)
		}
	}
	slices.SortFunc(copies, func(a, b forge.Comment) int { return cmp.Compare(a.ID, b.ID) })
	for i, c := range copies {
		if i == 0 || (posted == nil && c.ID != mine.ID) {
			continue // the first, or another pool's copy, which its poster takes back
		}
		p.log.Info("another pool posted the note first; taking ours back", "pr", n, "comment", c.ID)
		if err := p.takeBack(ctx, c.ID); err != nil {
			p.log.Warn("taking back a note posted twice failed", "pr", n, "comment", c.ID, "err", err)
		}
	}
	return posted
}

// takeBack deletes one of the pool's comments, a note posted twice or a
// claim that lost, trying again on a failure worth it: left, the PR shows
// the note twice, or the claim beside the winner's for a claim's life
// (TestANoteTakenBackIsDeletedThoughTheForgeFailsOnce).
func (p *Pool) takeBack(ctx context.Context, id int64) error {
	return tryAgain(ctx, func() error { return p.forge.DeleteComment(ctx, p.cfg.Owner, p.cfg.Name, id) })
}

// tryAgain makes call up to three times, 2 and 4 seconds apart, while it
// fails in a way worth trying again (retry.Later).
func tryAgain(ctx context.Context, call func() error) error {
	var err error
	for try := range 3 {
		if try > 0 && !retry.Wait(ctx, time.Duration(try)*2*time.Second) {
			break
		}
		if err = call(); err == nil || !retry.Later(err) {
			return err
		}
	}
	return err
}

// drop ends tracking of a merged or closed PR. A merge by another account
// than the pool's is a human's: counted apart and not announced. The note
// on linked issues is a courtesy: a failure to post it is logged, never
// retried.
func (p *Pool) drop(ctx context.Context, pr forge.PR, t lifecycle.Track, a lifecycle.Action) {
	human := t.State == lifecycle.Merged && pr.MergedBy != "" && !strings.EqualFold(pr.MergedBy, p.me)
	switch {
	case human:
		p.log.Info("merged by a human", "pr", pr.Number, "by", pr.MergedBy)
		p.count(pr.Number, &p.stats.mergedByHumans)
		p.metrics.Merged("human")
		p.forget(pr.Number)
		return
	case t.State == lifecycle.Merged && p.knows(pr.Number):
		p.count(pr.Number, &p.stats.merged)
		p.metrics.Merged("pool")
	}
	if a.Announce {
		for _, issue := range texts.LinkedIssues(pr.Body, pr.Number) {
			if _, err := p.comment(ctx, issue, texts.ScheduledMergedBody(pr.Number)); err != nil {
				p.log.Warn("announcing the merge on a linked issue failed", "pr", pr.Number, "issue", issue, "err", err)
			}
		}
	}
	p.forget(pr.Number)
}

// diagnose posts the diagnostic of t's wait unless one of the account's
// was posted on the PR within the pause this one waited: the pools that
// serve one repository keep a track each, and each posted its own series
// (TestPoolsOfOneRepositoryShareTheDiagnosticPause: 8 in two hours from two
// pools, where one posts 4). A diagnostic left out counts as made.
func (p *Pool) diagnose(ctx context.Context, n int, t lifecycle.Track, reason string) error {
	comments, err := p.forge.Comments(ctx, p.cfg.Owner, p.cfg.Name, n)
	if err != nil {
		return err
	}
	comments = p.takeBackCopies(ctx, n, comments, t.HeadSHA)
	// The other pools' diagnostics of this wait at the head count: this
	// one is due the pause its number asks after the last of them
	// (TestAPoolCountsTheOtherPoolsDiagnosticsOfTheHead).
	posted := 0
	for _, c := range comments {
		if t.HeadSHA != "" && strings.EqualFold(c.Author, p.me) && texts.RetryHead(c.Body) == t.HeadSHA && c.Created.After(t.HeadBefore) {
			posted++
		}
	}
	since := p.now().Add(-lifecycle.DiagnosticPause(p.policy, max(t.Diagnostics, posted+1)))
	recent := func(c forge.Comment) bool {
		return strings.EqualFold(c.Author, p.me) && forge.ParseMarker(c.Body, forge.MarkRetry, &struct{}{}) && c.Created.After(since)
	}
	if slices.ContainsFunc(comments, recent) {
		return nil
	}
	return p.postFirst(ctx, n, texts.DiagnosticBody(t.Attempts, t.LastStatus, reason, t.HeadSHA), recent)
}

// takeBackCopies takes back the pool's diagnostics of head posted sooner
// than half the first pause after the one kept before them, and returns
// comments without them. By the pools' clocks, diagnostics of one head are
// at least the first pause apart; half of it leaves room for a pool whose
// clock runs ahead of the forge's (TestSim bounds them at half too). So
// such a one is a copy, seconds after the first: two pools of the account
// posted it at once, and the one that would have taken its copy back at
// its read-back (postFirst) was killed before it
// (TestACopyOfADiagnosticIsTakenBack). A copy that could not be deleted
// stays in comments, tried again at the next look.
func (p *Pool) takeBackCopies(ctx context.Context, n int, comments []forge.Comment, head string) []forge.Comment {
	if head == "" {
		return comments
	}
	var mine []forge.Comment
	for _, c := range comments {
		if strings.EqualFold(c.Author, p.me) && texts.RetryHead(c.Body) == head {
			mine = append(mine, c)
		}
	}
	slices.SortFunc(mine, func(a, b forge.Comment) int { return cmp.Compare(a.ID, b.ID) })
	gap := lifecycle.DiagnosticPause(p.policy, 1) / 2
	gone := map[int64]bool{}
	for i, kept := 1, 0; i < len(mine); i++ {
		if mine[i].Created.Sub(mine[kept].Created) >= gap {
			kept = i
			continue
		}
		p.log.Info("a diagnostic stands twice; taking the later copy back", "pr", n, "comment", mine[i].ID)
		if err := p.takeBack(ctx, mine[i].ID); err != nil {
			p.log.Warn("taking back a diagnostic posted twice failed", "pr", n, "comment", mine[i].ID, "err", err)
			continue
		}
		gone[mine[i].ID] = true
	}
	if len(gone) == 0 {
		return comments
	}
	return slices.DeleteFunc(slices.Clone(comments), func(c forge.Comment) bool { return gone[c.ID] })
}

// recoverAttempts rebuilds an approved PR's retry count from the pool's own
// diagnostic comments, for a pool that lost its state dir.
func (p *Pool) recoverAttempts(ctx context.Context, pr forge.PR) error {
	comments, err := p.forge.Comments(ctx, p.cfg.Owner, p.cfg.Name, pr.Number)
	if err != nil {
		return err
	}
	attempts := 0
	for _, c := range comments {
		if strings.EqualFold(c.Author, p.me) {
			attempts = max(attempts, texts.RetryAttempt(c.Body))
		}
	}
	if attempts > 0 {
		p.log.Info("recovered the retry count from the forge", "pr", pr.Number, "attempts", attempts)
	}
	p.recovered(pr.Number, pr.HeadSHA, attempts)
	return nil
}
