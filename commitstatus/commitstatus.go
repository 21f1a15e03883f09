// Package commitstatus keeps the pool's own commit status on the head of
// every PR it tracks: a description in plain words of where the PR stands
// and what happens next, pending while the PR is open and success once it
// is merged, never failure (it must never block a merge). A status is
// written only when its text changes.
package commitstatus

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"pool/forge"
	"pool/forgejo"
	"pool/statuspage"
)

// Forge is what the publisher asks of the forge.
type Forge interface {
	StatusHistory(ctx context.Context, owner, repo, sha string) ([]forge.Status, error)
	PostStatus(ctx context.Context, owner, repo, sha string, s forgejo.NewStatus) error
}

// Publisher writes the statuses of one repository.
type Publisher struct {
	Forge       Forge
	Owner, Repo string
	Context     string // the status context, e.g. "pool"
	// PageURL is the status page's public URL; each status links to the
	// PR's row there. Empty: no link.
	PageURL string
	// OnePageOfSeveral: the page shows several repositories, whose rows
	// are named by repository too (statuspage.Anchor).
	OnePageOfSeveral bool
	// Required reports whether the branch protection waits for the pool's
	// context; then the status is success from the start, so that it never
	// holds a merge. May be nil.
	Required func() bool
	// Memory keeps what was written across restarts; may be nil. With it,
	// a head it knows nothing of is written without reading the forge
	// first (one request instead of two), and a relaunch rewrites nothing
	// that has not changed. Without it, the forge is read at the first look
	// at each head.
	Memory Memory
	Log    *slog.Logger

	written map[key]forgejo.NewStatus // what the forge shows now, as far as we know
	failed  map[key]bool              // the last write failed: logged once
	absent  map[key]int               // syncs in a row a written PR head was not in the status
	unsure  map[key]bool              // a write's answer was lost: read the forge before the next
}

// Memory is where a publisher keeps what it wrote on each PR head.
type Memory interface {
	Written() (map[Head]forgejo.NewStatus, error)
	Remember(h Head, s forgejo.NewStatus) error
	Forget(h Head) error
}

// Head is a PR's head commit.
type Head struct {
	PR  int
	SHA string
}

// forgetAfter is how many syncs in a row a PR head must be missing from
// the status before what was written on it is forgotten: a PR can drop out
// of one snapshot (between its merge and its settling) and come back, and
// its status must not be written again then.
const forgetAfter = 30

type key = Head

// Run publishes whenever changed signals and every interval, until ctx ends.
func (p *Publisher) Run(ctx context.Context, status func() statuspage.Status, changed <-chan struct{}, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		p.Sync(ctx, status())
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-t.C:
		}
	}
}

// Sync brings the forge's statuses in line with st, writing only those whose
// state or text differ from what the forge shows.
func (p *Publisher) Sync(ctx context.Context, st statuspage.Status) {
	if p.written == nil {
		p.failed, p.absent, p.unsure = map[key]bool{}, map[key]int{}, map[key]bool{}
		p.written = p.recall()
	}
	live := map[key]bool{}
	required := p.Required != nil && p.Required()
	for _, pr := range st.PRs {
		want, ok := p.want(pr, required)
		if !ok || ctx.Err() != nil {
			continue
		}
		k := key{PR: pr.Number, SHA: pr.Head}
		live[k] = true
		if err := p.sync(ctx, k, want); err != nil {
			if !p.failed[k] {
				p.log().Warn("setting the PR's commit status failed; will retry", "pr", pr.Number, "err", err)
			}
			p.failed[k] = true
			continue
		}
		delete(p.failed, k)
	}
	for k := range p.written {
		if live[k] {
			delete(p.absent, k)
			continue
		}
		if p.absent[k]++; p.absent[k] >= forgetAfter {
			delete(p.written, k)
			delete(p.absent, k)
			p.forget(k)
		}
	}
}

// want is the status a PR should show: none for a PR closed unmerged (the
// pool has nothing more to say) or without a head; pending while open
// unless the protection requires the pool's context.
func (p *Publisher) want(pr statuspage.PR, required bool) (forgejo.NewStatus, bool) {
	if pr.Head == "" || (pr.Done && !pr.Merged) {
		return forgejo.NewStatus{}, false
	}
	s := forgejo.NewStatus{Context: p.Context, State: "pending", Description: pr.Next}
	if pr.Commit != "" {
		s.Description = pr.Commit
	}
	if pr.Merged || required {
		s.State = "success"
	}
	if p.PageURL != "" {
		repo := ""
		if p.OnePageOfSeveral {
			repo = p.Owner + "/" + p.Repo
		}
		s.TargetURL = fmt.Sprintf("%s/#%s", strings.TrimRight(p.PageURL, "/"), statuspage.Anchor(repo, pr.Number))
	}
	return s, true
}

func (p *Publisher) sync(ctx context.Context, k key, want forgejo.NewStatus) error {
	have, known := p.written[k]
	if !known && (p.Memory == nil || p.unsure[k]) {
		// First look at this head since the start, with nothing
		// remembered, or after a write whose answer was lost: the forge may
		// already show it.
		statuses, err := p.Forge.StatusHistory(ctx, p.Owner, p.Repo, k.SHA)
		if err != nil {
			return err
		}
		have = own(statuses, p.Context)
		p.written[k] = have
		delete(p.unsure, k)
	}
	if have == want {
		return nil
	}
	if err := p.Forge.PostStatus(ctx, p.Owner, p.Repo, k.SHA, want); err != nil {
		// The write may have landed with its answer lost (a timeout, or the
		// pool stopping mid-call): read the forge again before the next one.
		delete(p.written, k)
		p.unsure[k] = true
		p.remember(k, forgejo.NewStatus{}) // unsure, after a restart too
		return err
	}
	p.written[k] = want
	p.remember(k, want)
	p.log().Debug("commit status set", "pr", k.PR, "state", want.State, "description", want.Description)
	return nil
}

// recall is what Memory holds, or nothing. A head remembered with no
// status had a write whose answer was lost: the forge is read first.
func (p *Publisher) recall() map[key]forgejo.NewStatus {
	out := map[key]forgejo.NewStatus{}
	if p.Memory == nil {
		return out
	}
	got, err := p.Memory.Written()
	if err != nil {
		p.log().Warn("reading the commit statuses written before failed; writing them again", "err", err)
		return out
	}
	for k, s := range got {
		if s == (forgejo.NewStatus{}) {
			p.unsure[k] = true
			continue
		}
		out[k] = s
	}
	return out
}

func (p *Publisher) remember(k key, s forgejo.NewStatus) {
	if p.Memory == nil {
		return
	}
	if err := p.Memory.Remember(k, s); err != nil {
		p.log().Warn("keeping a written commit status failed", "pr", k.PR, "err", err)
	}
}

func (p *Publisher) forget(k key) {
	if p.Memory == nil {
		return
	}
	if err := p.Memory.Forget(k); err != nil {
		p.log().Warn("forgetting a written commit status failed", "pr", k.PR, "err", err)
	}
}

// own is the newest status under context, as a NewStatus to compare with.
func own(history []forge.Status, context string) forgejo.NewStatus {
	var newest forge.Status
	for _, s := range forge.NewestPerContext(history) {
		if strings.EqualFold(s.Context, context) && s.ID >= newest.ID {
			newest = s
		}
	}
	if newest.Context == "" {
		return forgejo.NewStatus{}
	}
	return forgejo.NewStatus{Context: context, State: newest.State, Description: newest.Description, TargetURL: newest.TargetURL}
}

func (p *Publisher) log() *slog.Logger {
	if p.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Log
}
