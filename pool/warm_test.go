package pool

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"pool/fleet"
)

// spareFakeTrees are fakeTrees that make spare trees, as the clone does.
type spareFakeTrees struct{ *fakeTrees }

func (t spareFakeTrees) SpareTree(_ context.Context, most int) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.live) >= most {
		return "", nil
	}
	t.next++
	dir := fmt.Sprintf("/trees/t-%d", t.next)
	t.live[dir], t.made[dir] = true, true
	t.effects = append(t.effects, "spare "+dir)
	return dir, nil
}

func (t spareFakeTrees) FreeTrees() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for dir := range t.free {
		out = append(out, dir)
	}
	slices.Sort(out)
	return out
}

func (t spareFakeTrees) LendTree(_ context.Context, dir string) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, free := t.free[dir]; !free {
		return false, nil
	}
	delete(t.free, dir)
	t.effects = append(t.effects, "lend "+dir)
	return true, nil
}

func (a *fakeAgent) warmth() (warmed, createdIn []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.warmed), slices.Clone(a.createdIn)
}

// TestEachSlotsFirstSessionFindsItsTreeWarm: two agent servers of two
// slots each. Before any PR comes, the pool has a tree made for each of
// the four slots and each server start its instance for two of them.
// Four PRs opened at once then each get one of those trees, and each
// session goes to the server that warmed its tree: no slot's first
// session starts in a directory its server has not seen.
func TestEachSlotsFirstSessionFindsItsTreeWarm(t *testing.T) {
	f := newFakeForge()
	a, b := newFakeAgent(approver(f, 20*time.Millisecond)), newFakeAgent(approver(f, 20*time.Millisecond))
	a.name, b.name = "a", "b"
	fl := newTestFleet(&fleetClock{}, fleet.Server{Name: "a", Agent: a, Workers: 2, Review: true, Fix: true},
		fleet.Server{Name: "b", Agent: b, Workers: 2, Review: true, Fix: true})
	trees := spareFakeTrees{newFakeTrees()}
	cfg := testConfig(4)
	cfg.IdleExit = 0
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := New(ctx, cfg, Deps{Forge: f, Agent: fl, Trees: trees})
	if err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := p.Run(run); done <- err }()
	warmed := func() int {
		onA, _ := a.warmth()
		onB, _ := b.warmth()
		return len(onA) + len(onB)
	}
	waitFor(ctx, func() bool { return warmed() == 4 && len(trees.FreeTrees()) == 4 })
	if warmed() != 4 {
		trees.mu.Lock()
		effects := slices.Clone(trees.effects)
		trees.mu.Unlock()
		t.Fatalf("%d trees warmed before any PR, want one per slot (4); tree effects %v", warmed(), effects)
	}
	for n := 1; n <= 4; n++ {
		f.open(n)
	}
	p.Wake(0)
	waitFor(ctx, func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) && f.isMerged(4) })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, s := range []*fakeAgent{a, b} {
		warmed, created := s.warmth()
		if len(warmed) != 2 || len(created) != 2 {
			t.Errorf("server %s warmed %v and had sessions in %v; want two of each", s.name, warmed, created)
		}
		for _, dir := range created {
			if !slices.Contains(warmed, dir) {
				t.Errorf("server %s had a session in %s, a tree it never warmed (it warmed %v)", s.name, dir, warmed)
			}
		}
	}
}
