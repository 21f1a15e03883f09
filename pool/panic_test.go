package pool

import (
	"context"
	"testing"
	"time"

	"pool/agent"
	"pool/internal/guard"
)

// panickyAgent's sessions cannot be created: the call panics, in a slot's
// goroutine.
type panickyAgent struct{ *fakeAgent }

func (panickyAgent) CreateSession(context.Context, string, string) (agent.Session, error) {
	panic("agent client bug")
}

func TestPanicInASlotEndsTheRunWithItsCause(t *testing.T) {
	f := newFakeForge(1)
	a := panickyAgent{newFakeAgent(approver(f, time.Millisecond))}
	root, stop := guard.WithPanics(context.Background(), nil)
	defer stop()
	ctx, cancel := context.WithTimeout(root, 20*time.Second)
	defer cancel()
	cfg := testConfig(1)
	cfg.IdleExit = 0 // only the panic ends this run
	p, err := New(ctx, cfg, Deps{Forge: f, Agent: a})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = p.Run(ctx)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the pool kept running after a slot panicked")
	}
	pe := guard.Panicked(root)
	if pe == nil || pe.Where != "slot" || pe.Value != "agent client bug" {
		t.Fatalf("Panicked = %v, want the slot's panic", pe)
	}
}
