package pool

import (
	"context"
	"strings"

	"pool/forgejo"
	"pool/lifecycle"
)

// act performs a decision. Review and Fix are left to the caller, which
// owns the slot. It changes the track only through lifecycle functions.
func (p *Pool) act(ctx context.Context, pr forgejo.PR, t lifecycle.Track, a lifecycle.Action) error {
	if a.Diagnostic {
		if _, err := p.comment(ctx, pr.Number, diagnosticBody(t.Attempts, t.LastStatus)); err != nil {
			return err
		}
	}
	switch a.Kind {
	case lifecycle.Merge:
		if p.cfg.DryRun {
			p.log.Info("dry run: would merge", "pr", pr.Number, "head", pr.HeadSHA)
			return nil
		}
		p.queue.add(pr.Number, pr.HeadSHA, p.now())
	case lifecycle.Disarm:
		if p.cfg.DryRun {
			return nil
		}
		return p.forge.CancelAutoMerge(ctx, p.cfg.Owner, p.cfg.Name, pr.Number)
	case lifecycle.NoteConflict:
		p.count(pr.Number, &p.stats.conflicts)
		_, err := p.comment(ctx, pr.Number, conflictBody(p.base))
		return err
	case lifecycle.NoteBlocked:
		return p.noteBlocked(ctx, pr, a.Reason)
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
func (p *Pool) merge(ctx context.Context, pr forgejo.PR) (forgejo.MergeResult, error) {
	res, err := p.forge.Merge(ctx, p.cfg.Owner, p.cfg.Name, pr.Number, forgejo.MergeOptions{
		Style: p.cfg.MergeStyle, HeadSHA: pr.HeadSHA})
	if err != nil && res.Status == 0 {
		return res, err
	}
	p.log.Info("merge answered", "pr", pr.Number, "outcome", res.Outcome, "status", res.Status, "message", res.Message)
	p.metrics.MergeCalled(string(res.Outcome))
	p.book.mergeAnswered(pr.Number, res)
	next, act := lifecycle.AfterMerge(p.policy, p.track(pr.Number), pr.HeadSHA, res)
	p.setTrack(pr.Number, next)
	return res, p.act(ctx, pr, next, act)
}

// noteBlocked posts, once per head and reason, why the forge's rules keep
// the PR from merging. A note already on the forge (from before a lost
// state dir) is not posted again.
func (p *Pool) noteBlocked(ctx context.Context, pr forgejo.PR, reason string) error {
	p.log.Info("merge blocked; waiting for the PR or the rules to change", "pr", pr.Number, "reason", reason)
	comments, err := p.forge.Comments(ctx, p.cfg.Owner, p.cfg.Name, pr.Number)
	if err != nil {
		return err
	}
	for _, c := range comments {
		if strings.EqualFold(c.Author, p.me) && blockedNoted(c.Body, pr.HeadSHA, reason) {
			return nil
		}
	}
	_, err = p.comment(ctx, pr.Number, blockedBody(pr.HeadSHA, reason))
	return err
}

// drop ends tracking of a merged or closed PR. The note on linked issues is
// a courtesy: a failure to post it is logged, never retried.
func (p *Pool) drop(ctx context.Context, pr forgejo.PR, t lifecycle.Track, a lifecycle.Action) {
	if t.State == lifecycle.Merged && p.knows(pr.Number) {
		p.count(pr.Number, &p.stats.merged)
	}
	if a.Announce {
		for _, issue := range linkedIssues(pr.Body, pr.Number) {
			if _, err := p.comment(ctx, issue, scheduledMergedBody(pr.Number)); err != nil {
				p.log.Warn("announcing the merge on a linked issue failed", "pr", pr.Number, "issue", issue, "err", err)
			}
		}
	}
	p.dropTrack(pr.Number)
}

// recoverAttempts rebuilds an approved PR's retry count from the pool's own
// diagnostic comments, for a pool that lost its state dir.
func (p *Pool) recoverAttempts(ctx context.Context, pr forgejo.PR) error {
	comments, err := p.forge.Comments(ctx, p.cfg.Owner, p.cfg.Name, pr.Number)
	if err != nil {
		return err
	}
	attempts := 0
	for _, c := range comments {
		if strings.EqualFold(c.Author, p.me) {
			attempts = max(attempts, retryAttempt(c.Body))
		}
	}
	if attempts > 0 {
		p.log.Info("recovered the retry count from the forge", "pr", pr.Number, "attempts", attempts)
	}
	p.setTrack(pr.Number, lifecycle.Recovered(pr.HeadSHA, attempts))
	return nil
}
