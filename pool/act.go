package pool

import (
	"context"
	"fmt"
	"strings"

	"pool/forgejo"
	"pool/lifecycle"
)

// act performs a decision. Review and Fix are left to the caller, which
// owns the slot.
func (p *Pool) act(ctx context.Context, pr forgejo.PR, t lifecycle.Track, a lifecycle.Action) error {
	if a.Diagnostic {
		if _, err := p.comment(ctx, pr.Number, diagnosticBody(t.Attempts, t.LastStatus)); err != nil {
			return err
		}
	}
	switch a.Kind {
	case lifecycle.Merge:
		return p.merge(ctx, pr, false)
	case lifecycle.Arm:
		return p.merge(ctx, pr, true)
	case lifecycle.Disarm:
		if p.cfg.DryRun {
			return nil
		}
		return p.forge.CancelAutoMerge(ctx, p.cfg.Owner, p.cfg.Name, pr.Number)
	case lifecycle.NoteConflict:
		p.count(pr.Number, &p.stats.conflicts)
		_, err := p.comment(ctx, pr.Number, conflictBody(p.base))
		return err
	case lifecycle.Skip:
		p.count(pr.Number, &p.stats.skipped)
	case lifecycle.Drop:
		return p.drop(ctx, pr, t, a)
	case lifecycle.Wait:
		if t.State == lifecycle.ChangesRequested {
			p.count(pr.Number, &p.stats.changesRequested)
		}
	}
	return nil
}

// merge asks the forge to merge at the head the decision saw, then re-reads
// the PR: only the forge's word that it merged counts.
func (p *Pool) merge(ctx context.Context, pr forgejo.PR, whenChecksSucceed bool) error {
	if p.cfg.DryRun {
		p.log.Info("dry run: would merge", "pr", pr.Number, "head", pr.HeadSHA)
		return nil
	}
	res, err := p.forge.Merge(ctx, p.cfg.Owner, p.cfg.Name, pr.Number, forgejo.MergeOptions{
		Style: p.cfg.MergeStyle, HeadSHA: pr.HeadSHA, WhenChecksSucceed: whenChecksSucceed})
	if err != nil && res.Status == 0 {
		return err
	}
	p.log.Info("merge answered", "pr", pr.Number, "outcome", res.Outcome, "status", res.Status, "message", res.Message)
	next, act := lifecycle.AfterMerge(p.policy, p.track(pr.Number), pr.HeadSHA, res)
	p.setTrack(pr.Number, next)
	if err := p.act(ctx, pr, next, act); err != nil {
		return err
	}
	fresh, err := p.forge.PR(ctx, p.cfg.Owner, p.cfg.Name, pr.Number)
	if err != nil {
		return err
	}
	if fresh.Merged {
		_, err = p.step(ctx, fresh, "")
	}
	return err
}

// drop ends tracking of a merged or closed PR.
func (p *Pool) drop(ctx context.Context, pr forgejo.PR, t lifecycle.Track, a lifecycle.Action) error {
	if t.State == lifecycle.Merged && p.knows(pr.Number) {
		p.count(pr.Number, &p.stats.merged)
	}
	if a.Announce {
		for _, issue := range linkedIssues(pr.Body) {
			if _, err := p.comment(ctx, issue, scheduledMergedBody(pr.Number)); err != nil {
				return fmt.Errorf("announce merge of #%d on #%d: %w", pr.Number, issue, err)
			}
		}
	}
	p.dropTrack(pr.Number)
	return nil
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
	p.setTrack(pr.Number, lifecycle.Track{HeadSHA: pr.HeadSHA, ReviewedSHA: pr.HeadSHA, Attempts: attempts})
	return nil
}
