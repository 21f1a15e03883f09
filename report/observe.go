// Package report observes one pull request, read-only, and says what it
// needs: the `pool report` block (the PR poller) and the `pool tick` digest
// (the PR monitor). A value the forge did not give is unknown, never filled
// in: every part of an observation carries the error that kept it unread.
//
// It is a library: the commands' flags and settings are cmd/pool's
// (inspect.go), and the policy it judges by is the caller's
// (configs.Config.Policy).
//
// It judges nothing by rules of its own: whose reviews count, what a check
// means, the check summary and "may it merge?" are lifecycle's (Checks,
// ReviewRule, MissingRequired, MayMerge), the same the supervisor decides by.
package report

import (
	"context"
	"errors"
	"fmt"
	"pool/forge"
	"pool/forgejo"
)

// Forge is the read-only part of the forge an observation uses;
// *sdkclient.Client has it.
type Forge interface {
	Me(ctx context.Context) (string, error)
	PRDetail(ctx context.Context, owner, repo string, n int) (forgejo.PRDetail, error)
	StatusHistory(ctx context.Context, owner, repo, sha string) ([]forge.Status, error)
	ReviewDetails(ctx context.Context, owner, repo string, n int) ([]forgejo.ReviewDetail, error)
	InlineComments(ctx context.Context, owner, repo string, n int, reviewID int64) ([]forgejo.InlineComment, error)
	Comments(ctx context.Context, owner, repo string, n int) ([]forge.Comment, error)
	DefaultBranch(ctx context.Context, owner, repo string) (string, error)
	AutoMergeArmed(ctx context.Context, owner, repo string, n int) (bool, error)
	Protection(ctx context.Context, owner, repo, branch string) (forge.Protection, error)
	OpenDependencies(ctx context.Context, owner, repo string, n int) ([]string, error)
}

// Snapshot is one read of a PR: every part the forge answered, and for every
// part it did not, the error.
type Snapshot struct {
	forge.Target
	PR forgejo.PRDetail

	// Self is the token's account: its reply markers answer items.
	Self    string
	SelfErr error

	Statuses    []forge.Status // full history on the head commit, oldest first
	StatusesErr error

	Reviews    []forgejo.ReviewDetail
	ReviewsErr error

	Inline    []forgejo.InlineComment
	InlineErr error

	Comments    []forge.Comment
	CommentsErr error

	// Protection is the base branch's protection, the floor of every merge.
	Protection    forge.Protection
	ProtectionErr error

	// Dependencies are the open issues the PR depends on: the forge refuses
	// its merge while there are any.
	Dependencies    []string
	DependenciesErr error

	// Read only when auto-merge is in use.
	DefaultBranch  string
	AutoMergeArmed bool
	AutoMergeErr   error
}

// errNoHead stands for statuses that cannot be read because the PR names no
// head commit.
var errNoHead = errors.New("statuses: the PR names no head commit")

// observe reads the PR and everything about it. Only an unreadable PR is an
// error; any other failed read is recorded in the snapshot. Statuses under
// ownContext (the pool's own commit status) are no checks and are left out.
func observe(ctx context.Context, f Forge, t forge.Target, autoMerge bool, ownContext string) (Snapshot, error) {
	s := Snapshot{Target: t}
	pr, err := f.PRDetail(ctx, t.Owner, t.Repo, t.Number)
	if err != nil {
		return s, err
	}
	s.PR = pr
	s.Self, s.SelfErr = f.Me(ctx)
	if pr.HeadSHA == "" {
		s.StatusesErr = errNoHead
	} else {
		s.Statuses, s.StatusesErr = f.StatusHistory(ctx, t.Owner, t.Repo, pr.HeadSHA)
		s.Statuses = forgejo.WithoutContext(s.Statuses, ownContext)
	}
	s.Reviews, s.ReviewsErr = f.ReviewDetails(ctx, t.Owner, t.Repo, t.Number)
	s.Inline, s.InlineErr = inlineComments(ctx, f, t, s.Reviews, s.ReviewsErr)
	s.Comments, s.CommentsErr = f.Comments(ctx, t.Owner, t.Repo, t.Number)
	s.Protection, s.ProtectionErr = f.Protection(ctx, t.Owner, t.Repo, pr.BaseRef)
	s.Dependencies, s.DependenciesErr = f.OpenDependencies(ctx, t.Owner, t.Repo, t.Number)
	if autoMerge {
		s.readAutoMerge(ctx, f)
	}
	return s, nil
}

// inlineComments reads the inline comments of every submitted review that
// has some. Without the reviews they are unknown.
func inlineComments(ctx context.Context, f Forge, t forge.Target, reviews []forgejo.ReviewDetail, reviewsErr error) ([]forgejo.InlineComment, error) {
	if reviewsErr != nil {
		return nil, fmt.Errorf("inline comments: reviews unread: %w", reviewsErr)
	}
	var out []forgejo.InlineComment
	for _, r := range reviews {
		if !submitted(r.State) || r.CommentsCount == 0 {
			continue
		}
		cs, err := f.InlineComments(ctx, t.Owner, t.Repo, t.Number, r.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

func (s *Snapshot) readAutoMerge(ctx context.Context, f Forge) {
	s.DefaultBranch, s.AutoMergeErr = f.DefaultBranch(ctx, s.Owner, s.Repo)
	if s.AutoMergeErr == nil {
		s.AutoMergeArmed, s.AutoMergeErr = f.AutoMergeArmed(ctx, s.Owner, s.Repo, s.Number)
	}
}

// Errors lists the reads that failed, for the operator, each cause once.
func (s Snapshot) Errors() []error {
	var out []error
	for _, err := range []error{s.SelfErr, s.StatusesErr, s.ReviewsErr, s.InlineErr, s.CommentsErr, s.ProtectionErr, s.DependenciesErr, s.AutoMergeErr} {
		if err != nil && !wrapsAny(err, out) {
			out = append(out, err)
		}
	}
	return out
}

func wrapsAny(err error, listed []error) bool {
	for _, l := range listed {
		if errors.Is(err, l) {
			return true
		}
	}
	return false
}

// submitted reports whether a review state is a submitted review (not a
// draft, not a review request).
func submitted(state string) bool {
	switch state {
	case forge.ReviewApproved, forge.ReviewRequestChanges, forge.ReviewComment:
		return true
	}
	return false
}

// prState is open, closed or merged.
func prState(pr forgejo.PRDetail) string {
	switch {
	case pr.Merged:
		return stateMerged
	case pr.State == stateOpen || pr.State == stateClosed:
		return pr.State
	}
	return unknown
}

const (
	unknown     = "unknown"
	stateOpen   = "open"
	stateClosed = "closed"
	stateMerged = "merged"
)
