package pool

import (
	"context"
	"log/slog"

	"pool/forge"
	"pool/forgejo"
)

// dryForge is the forge of a dry run: it reads as the forge does and
// performs no write, logging what it would have written. A write answers
// as done (a comment with no id, an auto-merge cancelled); a merge or an
// update, which a dry run never hands to its merge queue, answers "not
// ready" so that nothing counts it done.
type dryForge struct {
	Forge
	log *slog.Logger
}

func (d dryForge) PostComment(_ context.Context, _, _ string, n int, body string) (forge.Comment, error) {
	d.log.Info("dry run: would comment", "pr", n, "body", firstLine(body))
	return forge.Comment{}, nil
}

func (d dryForge) EditComment(_ context.Context, _, _ string, id int64, body string) (forge.Comment, error) {
	d.log.Info("dry run: would edit a comment", "comment", id, "body", firstLine(body))
	return forge.Comment{ID: id}, nil
}

func (d dryForge) DeleteComment(_ context.Context, _, _ string, id int64) error {
	d.log.Info("dry run: would delete a comment", "comment", id)
	return nil
}

func (d dryForge) CancelAutoMerge(_ context.Context, _, _ string, n int) error {
	d.log.Info("dry run: would cancel the auto-merge", "pr", n)
	return nil
}

func (d dryForge) Merge(_ context.Context, _, _ string, n int, opt forgejo.MergeOptions) (forge.MergeResult, error) {
	d.log.Info("dry run: would merge", "pr", n, "head", opt.HeadSHA)
	return forge.MergeResult{Outcome: forge.MergeNotReady, Message: "dry run"}, nil
}

func (d dryForge) MarkMerged(_ context.Context, _, _ string, n int, commit string) (forge.MergeResult, error) {
	d.log.Info("dry run: would mark merged", "pr", n, "commit", commit)
	return forge.MergeResult{Outcome: forge.MergeNotReady, Message: "dry run"}, nil
}

func (d dryForge) Update(_ context.Context, _, _ string, n int, style string) (forgejo.UpdateResult, error) {
	d.log.Info("dry run: would update", "pr", n, "style", style)
	return forgejo.UpdateResult{Outcome: forgejo.UpdateClosed}, nil
}
