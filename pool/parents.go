package pool

import (
	"context"
	"sync"
)

// parentsKept bounds the commits whose parents the pool keeps: past it the
// memory starts over (a week of a busy repository's updated heads is far
// fewer).
const parentsKept = 4096

// parentsMemory keeps the parents of the commits the pool has read them
// for. A commit's parents are part of its id: they never change, so a head
// waiting on its checks or its merge is not asked about again each cycle
// (seed 29 of the simulation: 107 parent reads of one head in an hour, a
// fifth of the 511 requests that broke the bound on requests per PR-hour).
type parentsMemory struct {
	mu   sync.Mutex
	kept map[string][]string // guarded by mu
}

// parents returns sha's parents, read from the forge the first time only.
// A failed read is not kept.
func (p *Pool) parents(ctx context.Context, sha string) ([]string, error) {
	m := &p.parentsOf
	m.mu.Lock()
	got, ok := m.kept[sha]
	m.mu.Unlock()
	if ok {
		return got, nil
	}
	got, err := p.forge.CommitParents(ctx, p.cfg.Owner, p.cfg.Name, sha)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.kept == nil || len(m.kept) >= parentsKept {
		m.kept = map[string][]string{}
	}
	m.kept[sha] = got
	return got, nil
}
