package pool

import (
	"context"
	"errors"

	"pool/claims"
	"pool/forgejo"
	"pool/internal/guard"
)

// What a slot starts at once, before and while it claims a PR.

// treeResult is a work tree taken for a session, or why none was.
type treeResult struct {
	dir string // "" without trees
	err error
}

// takeTree starts taking the session's work tree from the clone; the
// result comes on the channel.
func (p *Pool) takeTree(ctx context.Context, pr forgejo.PR) <-chan treeResult {
	out := make(chan treeResult, 1)
	if p.trees == nil {
		out <- treeResult{}
		return out
	}
	guard.Go(ctx, p.log, "work tree", func() {
		t := treeResult{err: errors.New("taking a work tree panicked")}
		defer func() { out <- t }() // even in a panic: the slot waits for it
		t.dir, t.err = p.trees.TakeTree(ctx, pr.Number, pr.HeadSHA)
	})
	return out
}

// unusedTree waits for a tree no session was made in, and gives it back.
func (p *Pool) unusedTree(ctx context.Context, tree <-chan treeResult) {
	if t := <-tree; t.err == nil {
		p.sessions.GiveTree(ctx, t.dir)
	}
}

// viewResult is the claims read on a PR, or why they were not.
type viewResult struct {
	view claims.View
	err  error
}

// readClaims starts reading the claims on pr; the result comes on the
// channel.
func (p *Pool) readClaims(ctx context.Context, pr forgejo.PR) <-chan viewResult {
	out := make(chan viewResult, 1)
	guard.Go(ctx, p.log, "claims read", func() {
		r := viewResult{err: errors.New("reading the claims panicked")}
		defer func() { out <- r }()
		r.view, r.err = p.claimView(ctx, pr)
	})
	return out
}

// commentsResult is a PR's comments read ahead, if read is set.
type commentsResult struct {
	read     bool
	comments []forgejo.Comment
	err      error
}

// again is a channel that gives r once more.
func (r commentsResult) again() <-chan commentsResult {
	out := make(chan commentsResult, 1)
	out <- r
	return out
}

// earlyComments starts reading the comments of a PR at a head the pool has
// not decided on, found after the first cycle with a slot free, while its
// reviews are read: its claims are then likely to matter, and a new PR waits
// one round trip less. For any other PR, and in the first cycle (where every
// PR is new to a fresh store, and most wait for someone), it reads nothing.
// The result comes on the channel.
func (p *Pool) earlyComments(ctx context.Context, pr forgejo.PR) <-chan commentsResult {
	out := make(chan commentsResult, 1)
	p.mu.Lock()
	first := p.stats.cycles == 0
	p.mu.Unlock()
	skip := p.policy.Skips(pr)
	if first || skip || p.freeSlots() == 0 || p.track(pr.Number).HeadSHA == pr.HeadSHA {
		out <- commentsResult{}
		return out
	}
	guard.Go(ctx, p.log, "comments read", func() {
		r := commentsResult{read: true, err: errors.New("reading the comments panicked")}
		defer func() { out <- r }()
		r.comments, r.err = p.forge.Comments(ctx, p.cfg.Owner, p.cfg.Name, pr.Number)
	})
	return out
}
