package guard

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPanicCancelsTheRootWithItsCause(t *testing.T) {
	var first []*PanicError
	var mu sync.Mutex
	ctx, cancel := WithPanics(context.Background(), func(p *PanicError) {
		mu.Lock()
		defer mu.Unlock()
		first = append(first, p)
	})
	defer cancel()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	// a goroutine started under a child context (as the pool's slots are)
	child, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	Go(child, log, "slot PR-7", func() { panic("boom") })

	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the root context was not cancelled after a panic")
	}
	p := Panicked(ctx)
	if p == nil || p.Where != "slot PR-7" || p.Value != "boom" {
		t.Fatalf("Panicked = %+v", p)
	}
	if !strings.Contains(string(p.Stack), "guard_test.go") {
		t.Errorf("stack does not show the panicking function:\n%s", p.Stack)
	}
	if !strings.Contains(logs.String(), "panic=boom") || !strings.Contains(logs.String(), "guard_test.go") {
		t.Errorf("the panic was not logged with its stack:\n%s", logs.String())
	}

	// a second panic neither calls onPanic again nor changes the cause
	Go(ctx, nil, "second", func() { panic("again") })
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(first) != 1 {
		t.Errorf("onPanic called %d times, want 1", len(first))
	}
	if Panicked(ctx).Value != "boom" {
		t.Errorf("cause changed to %v", Panicked(ctx).Value)
	}
}

func TestNoPanicNoCause(t *testing.T) {
	ctx, cancel := WithPanics(context.Background(), nil)
	done := make(chan struct{})
	Go(ctx, nil, "quiet", func() { close(done) })
	<-done
	cancel()
	if p := Panicked(ctx); p != nil {
		t.Errorf("Panicked = %v after a clean cancel", p)
	}
	if Panicked(context.Background()) != nil {
		t.Error("Panicked(Background) != nil")
	}
}

func TestRecoverWithoutSinkRepanics(t *testing.T) {
	defer func() {
		if v := recover(); v != "unguarded" {
			t.Errorf("recovered %v, want the re-panic", v)
		}
	}()
	func() {
		defer Recover(nil, "test", nil)
		panic("unguarded")
	}()
	t.Error("not reached: Recover without a sink must re-panic")
}
