package pool

import (
	"context"
	"sync"
	"time"

	"pool/internal/guard"
)

// Warm trees from the first PR. A work tree's session starts fast once
// the agent server has started its instance for the tree (its tools, its
// providers, its snapshot of the files), which the first session in a tree
// did itself: held out, PR opened → reviewer at work took 1.1 s median,
// and 6.1 s for a slot's first session. So once its first cycle has given
// the PRs already open their slots, and again when an agent server answers
// after it was down (its instances are gone), a pool of one repository
// has its clone make a tree for each slot left idle, up to one per slot
// of the servers that run reviews (at the default branch's head: no PR's
// code), and has a server start each one (fleet.Warm: as many per server
// as it has slots). A slot's first PR then finds a tree warm on a server,
// where the fleet sends its session. It runs beside the loop and holds
// nothing up: a PR that comes while the trees are warmed takes a tree of
// its own (the clone keeps no more free trees than the slots).

// warming is the agent servers' side (package fleet).
type warming interface {
	Warm(ctx context.Context, dir string) (server string, err error)
	Cold(dir string) bool
	ReviewSlots() int
	Revived() <-chan struct{}
}

// spareTrees is the clone's side: trees lent while they are warmed, then
// given back (sessions.Set.GiveTree) to be kept free.
type spareTrees interface {
	SpareTree(ctx context.Context, most int) (string, error)
	FreeTrees() []string
	LendTree(ctx context.Context, dir string) (bool, error)
}

// warmTrees warms the trees at the start and after each revival of a
// server, until ctx ends. Pools that share their slots do not: which
// repository's PR a slot takes next is not known.
func (p *Pool) warmTrees(ctx context.Context) {
	w, ok := p.agent.(warming)
	spares, ok2 := p.trees.(spareTrees)
	if !ok || !ok2 || p.shared || p.cfg.DryRun {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-p.cycled:
	}
	for ctx.Err() == nil {
		revived := w.Revived()
		p.warmRound(ctx, w, spares)
		select {
		case <-ctx.Done():
		case <-revived:
		}
	}
}

// warmRound warms the free trees that are cold, then makes and warms new
// ones until there is a tree free or warming for each idle slot (at most
// one per review slot), each started on its server at once.
func (p *Pool) warmRound(ctx context.Context, w warming, spares spareTrees) {
	var wg sync.WaitGroup
	warm := func(dir string) {
		wg.Add(1)
		guard.Go(ctx, p.log, "tree warming", func() {
			defer wg.Done()
			p.warmTree(ctx, w, dir)
		})
	}
	lent := 0
	for _, dir := range spares.FreeTrees() {
		if !w.Cold(dir) {
			continue
		}
		ok, err := spares.LendTree(ctx, dir)
		if err != nil {
			p.log.Warn("lending a free work tree to warm failed", "dir", dir, "err", err)
		}
		if ok {
			lent++
			warm(dir)
		}
	}
	want := min(p.slots.PerRepo(), w.ReviewSlots())
	for need := want - p.busySlots() - len(spares.FreeTrees()) - lent; need > 0 && ctx.Err() == nil; need-- {
		dir, err := spares.SpareTree(ctx, want)
		if err != nil {
			p.log.Warn("making a work tree to warm failed", "err", err)
			break
		}
		if dir == "" {
			break
		}
		warm(dir)
	}
	wg.Wait()
}

// busySlots counts the PRs that hold a slot.
func (p *Pool) busySlots() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.busy)
}

// warmTree has a server start its instance for dir, and gives the tree
// back to be kept free.
func (p *Pool) warmTree(ctx context.Context, w warming, dir string) {
	defer p.sessions.GiveTree(context.WithoutCancel(ctx), dir)
	began := p.now()
	server, err := w.Warm(ctx, dir)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("warming a work tree failed; its first session starts the agent server's instance itself", "dir", dir, "err", err)
		}
		return
	}
	p.log.Info("work tree warmed", "dir", dir, "agent_server", server, "took", p.now().Sub(began).Round(time.Millisecond))
}
