package pool

import (
	"context"
	"errors"

	"pool/claims"
	"pool/forge"
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
func (p *Pool) takeTree(ctx context.Context, pr forge.PR) <-chan treeResult {
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
func (p *Pool) readClaims(ctx context.Context, pr forge.PR) <-chan viewResult {
	out := make(chan viewResult, 1)
	guard.Go(ctx, p.log, "claims read", func() {
		r := viewResult{err: errors.New("reading the claims panicked")}
		defer func() { out <- r }()
		r.view, r.err = p.claimView(ctx, pr)
	})
	return out
}
