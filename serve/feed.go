package serve

import (
	"context"
	"strings"
	"sync"
	"time"

	"pool/forgejo"
	"pool/pool"
)

// searcher reads the PRs changed since a moment, across an owner's
// repositories or in one.
type searcher interface {
	SearchChangedPRs(ctx context.Context, owner string, since time.Time) ([]forgejo.RepoPRChange, time.Time, error)
	ChangedPRs(ctx context.Context, owner, repo string, since time.Time) ([]forgejo.PRChange, time.Time, error)
}

// changeFeed answers the quiet-cycle delta of the pools of several
// repositories with one cross-repository search per owner, shared: a pool
// whose last answer came from the latest search makes a new one, the
// others take theirs from it. So a round of quiet cycles costs one request
// per owner, whatever the number of repositories.
type changeFeed struct {
	forge searcher
	now   func() time.Time

	mu     sync.Mutex // guards owners; held during a search, so pools asking at once share it
	owners map[string]*ownerFeed
}

// ownerFeed is the latest search of one owner's repositories.
type ownerFeed struct {
	gen     int       // searches made
	since   time.Time // the latest search holds the changes from here
	served  time.Time // the forge's clock at its answer
	changes map[string][]forgejo.PRChange
	// answered is, per repository, the search its last answer came from.
	answered map[string]int
	listed   int // the search after which a repository last made a full listing
}

func newChangeFeed(forge searcher, now func() time.Time) *changeFeed {
	return &changeFeed{forge: forge, now: now, owners: map[string]*ownerFeed{}}
}

// changed is ChangedPRs for one repository, answered from the shared
// search. A since in the future is the pool reading the forge's clock
// before a full listing: the latest search's answer time serves (the
// listing, made after it, holds every update stamped before it), or, before
// any search, the repository is asked.
func (f *changeFeed) changed(ctx context.Context, owner, repo string, since time.Time) ([]forgejo.PRChange, time.Time, error) {
	if since.After(f.now()) {
		if served := f.lastServed(owner); !served.IsZero() {
			return nil, served, nil
		}
		return f.forge.ChangedPRs(ctx, owner, repo, since)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := strings.ToLower(owner)
	of := f.owners[key]
	if of == nil {
		of = &ownerFeed{answered: map[string]int{}}
		f.owners[key] = of
	}
	name := strings.ToLower(owner + "/" + repo)
	if of.gen == 0 || of.answered[name] == of.gen || of.since.After(since) {
		if err := f.search(ctx, owner, of, since); err != nil {
			return nil, time.Time{}, err
		}
	}
	of.answered[name] = of.gen
	var out []forgejo.PRChange
	for _, ch := range of.changes[name] {
		if !ch.Updated.Before(since) {
			out = append(out, ch)
		}
	}
	return out, of.served, nil
}

// takeListing is the gate of the full listings of owner's repositories:
// it allows one between two searches (and any before the first), so that a
// round of quiet cycles holds one at most however the pools drift.
func (f *changeFeed) takeListing(owner string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	of := f.owners[strings.ToLower(owner)]
	if of == nil || of.gen == 0 {
		return true
	}
	if of.listed == of.gen {
		return false
	}
	of.listed = of.gen
	return true
}

// lastServed is the forge's clock at the owner's latest search, or zero
// before any.
func (f *changeFeed) lastServed(owner string) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if of := f.owners[strings.ToLower(owner)]; of != nil {
		return of.served
	}
	return time.Time{}
}

// search reads the owner's changes from the earlier of since and a second
// before the previous search's answer: every pool that took an answer
// from that search asks from there or later.
func (f *changeFeed) search(ctx context.Context, owner string, of *ownerFeed, since time.Time) error {
	from := since
	if !of.served.IsZero() && of.served.Add(-time.Second).Before(from) {
		from = of.served.Add(-time.Second)
	}
	changes, served, err := f.forge.SearchChangedPRs(ctx, owner, from)
	if err != nil {
		return err
	}
	of.gen++
	of.since, of.served = from, served
	of.changes = map[string][]forgejo.PRChange{}
	for _, ch := range changes {
		name := strings.ToLower(ch.Repo)
		of.changes[name] = append(of.changes[name], ch.PRChange)
	}
	return nil
}

// feedForge is a repository's forge with its quiet-cycle delta answered by
// a changeFeed shared with the other repositories' pools.
type feedForge struct {
	pool.Forge
	feed *changeFeed
}

func (f feedForge) ChangedPRs(ctx context.Context, owner, repo string, since time.Time) ([]forgejo.PRChange, time.Time, error) {
	return f.feed.changed(ctx, owner, repo, since)
}
