package pool

import (
	"context"
	"pool/forge"
	"pool/texts"
	"slices"
	"strings"

	"pool/forgejo"
	"pool/lifecycle"
)

// act performs a decision and, once it succeeded, records its marks: a
// note or a cancel that failed is asked for again by the next decision.
// Review and Fix are left to the caller, which owns the slot.
func (p *Pool) act(ctx context.Context, pr forge.PR, t lifecycle.Track, a lifecycle.Action) error {
	acting := p.actLock(pr.Number)
	acting.Lock()
	defer acting.Unlock()
	if p.track(pr.Number).Holds(a.Marks) {
		return nil // the loop or the merge queue carried it out since it was decided
	}
	if err := p.perform(ctx, pr, t, a); err != nil {
		return err
	}
	p.marked(pr.Number, a.Marks)
	return nil
}

func (p *Pool) perform(ctx context.Context, pr forge.PR, t lifecycle.Track, a lifecycle.Action) error {
	if a.Diagnostic {
		if err := p.diagnose(ctx, pr.Number, t, a.Reason); err != nil {
			return err
		}
	}
	switch a.Kind {
	case lifecycle.Merge, lifecycle.Update:
		if p.cfg.DryRun { // a dry run hands nothing on: no merge queue, no slot (cycle)
			p.log.Info("dry run: would queue", "pr", pr.Number, "head", pr.HeadSHA, "action", a.Kind)
			return nil
		}
		p.queue.add(pr.Number, pr.HeadSHA, p.now()) // the queue merges (or updates) it when it is next
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
		p.log.Warn("sessions leave no counted review; still retrying", "pr", pr.Number, "reason", a.Reason)
		return p.noteOnce(ctx, pr.Number, texts.NoReviewBody(pr.HeadSHA, a.Reason),
			func(body string) bool { return texts.NotedAt(body, forge.MarkNoReview, pr.HeadSHA) })
	case lifecycle.NoteWithheld:
		p.log.Info("no review session until a maintainer's label", "pr", pr.Number, "author", pr.Author, "reason", a.Reason)
		return p.noteOnce(ctx, pr.Number, texts.WithheldBody(pr.HeadSHA, a.Reason, p.cfg.Reviews.AllowLabel),
			func(body string) bool { return texts.WithheldNoted(body, pr.HeadSHA, a.Reason) })
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

// merge asks the forge to merge at the head the decision saw and folds the
// answer into the track. Only the forge's word that it merged counts: the
// caller reads the PR again.
func (p *Pool) merge(ctx context.Context, pr forge.PR) (forge.MergeResult, error) {
	res, err := p.forge.Merge(ctx, p.cfg.Owner, p.cfg.Name, pr.Number, forgejo.MergeOptions{
		Style: p.cfg.MergeStyle, HeadSHA: pr.HeadSHA})
	if err != nil && res.Status == 0 {
		return res, err
	}
	p.log.Info("merge answered", "pr", pr.Number, "outcome", res.Outcome, "status", res.Status, "message", res.Message)
	p.metrics.MergeCalled(string(res.Outcome))
	p.book.MergeAnswered(pr.Number, res)
	if res.Outcome == forge.MergeConflict {
		if outcome, err := p.recheckConflict(ctx, pr); err != nil || outcome != forge.MergeConflict {
			res.Outcome = outcome
			return res, err
		}
	}
	if res.Rule != "" {
		p.learn(res.Rule)
	}
	next, act := p.mergeAnswered(pr.Number, pr.HeadSHA, res)
	return res, p.act(ctx, pr, next, act)
}

// recheckConflict re-reads a PR whose merge answered 409 before it is taken
// for a conflict: Forgejo also answers 409 (its error struct as the body)
// when another merge of the PR won the race, and a head pushed meanwhile is
// a new head to review, not a conflict to note. It returns MergeAlready for a
// merged PR, MergeHeadMoved for one closed or moved, else MergeConflict.
func (p *Pool) recheckConflict(ctx context.Context, pr forge.PR) (forge.MergeOutcome, error) {
	fresh, err := p.forge.PR(ctx, p.cfg.Owner, p.cfg.Name, pr.Number)
	if err != nil {
		return forge.MergeFailed, err
	}
	switch {
	case fresh.Merged:
		p.log.Info("the merge answered 409, but the PR is merged: another merge won the race", "pr", pr.Number)
		return forge.MergeAlready, nil
	case fresh.State != "open" || fresh.HeadSHA != pr.HeadSHA:
		p.log.Info("the merge answered 409, but the PR is closed or its head moved: no conflict",
			"pr", pr.Number, "state", fresh.State, "head", fresh.HeadSHA)
		return forge.MergeHeadMoved, nil
	}
	return forge.MergeConflict, nil
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

// postFirst posts a note and takes it back if the forge then shows an
// earlier one of the account's that same says is the same note: two pools
// of one repository that read before either posted each posted theirs
// (TestPoolsOfOneRepositoryNoteOnce: 2 hold notes, want 1). A failed read
// after the post leaves the note.
func (p *Pool) postFirst(ctx context.Context, n int, body string, same func(forge.Comment) bool) error {
	mine, err := p.comment(ctx, n, body)
	if err != nil {
		return err
	}
	comments, err := p.forge.Comments(ctx, p.cfg.Owner, p.cfg.Name, n)
	if err != nil {
		return nil
	}
	for _, c := range comments {
		if c.ID < mine.ID && strings.EqualFold(c.Author, p.me) && same(c) {
			p.log.Info("another pool posted the note first; taking ours back", "pr", n, "comment", mine.ID)
			if err := p.forge.DeleteComment(ctx, p.cfg.Owner, p.cfg.Name, mine.ID); err != nil {
				p.log.Warn("taking back a note posted twice failed", "pr", n, "comment", mine.ID, "err", err)
			}
			return nil
		}
	}
	return nil
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
	since := p.now().Add(-lifecycle.DiagnosticPause(p.policy, max(t.Diagnostics, 1)))
	recent := func(c forge.Comment) bool {
		return strings.EqualFold(c.Author, p.me) && forge.ParseMarker(c.Body, forge.MarkRetry, &struct{}{}) && c.Created.After(since)
	}
	if slices.ContainsFunc(comments, recent) {
		return nil
	}
	return p.postFirst(ctx, n, texts.DiagnosticBody(t.Attempts, t.LastStatus, reason), recent)
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
