package serve

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"pool/agent"
)

// chanSource is an event source fed by the test; it counts subscriptions.
type chanSource struct {
	ch    chan agent.Event
	count atomic.Int32
}

func (c *chanSource) Events(ctx context.Context) <-chan agent.Event {
	c.count.Add(1)
	out := make(chan agent.Event)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-c.ch:
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

func nextEvent(t *testing.T, ch <-chan agent.Event) agent.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("subscription closed")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return agent.Event{}
}

// TestEventHubSharesOneStream: three pools' subscriptions make one
// subscription to the agent server; each gets a first EventReconnected and
// then every event; a subscription closes when its context ends, and the
// others go on.
func TestEventHubSharesOneStream(t *testing.T) {
	src := &chanSource{ch: make(chan agent.Event)}
	ctx, cancel := context.WithCancel(context.Background())
	hub := newEventHub(ctx, src, slog.New(slog.DiscardHandler))
	var subs []<-chan agent.Event
	var stops []context.CancelFunc
	for range 3 {
		sctx, stop := context.WithCancel(ctx)
		subs, stops = append(subs, hub.Events(sctx)), append(stops, stop)
	}
	if n := src.count.Load(); n != 1 {
		t.Errorf("subscriptions to the agent server: %d, want 1", n)
	}
	for i, s := range subs {
		if ev := nextEvent(t, s); ev.Type != agent.EventReconnected {
			t.Errorf("subscriber %d: first event %+v, want %s", i, ev, agent.EventReconnected)
		}
	}
	src.ch <- agent.Event{Type: agent.EventSessionIdle, SessionID: "ses_1"}
	for i, s := range subs {
		if ev := nextEvent(t, s); ev.SessionID != "ses_1" {
			t.Errorf("subscriber %d: got %+v, want the idle of ses_1", i, ev)
		}
	}
	stops[0]()
	if _, ok := <-subs[0]; ok {
		t.Error("a subscription whose context ended is still open")
	}
	src.ch <- agent.Event{Type: agent.EventSessionIdle, SessionID: "ses_2"}
	for i, s := range subs[1:] {
		if ev := nextEvent(t, s); ev.SessionID != "ses_2" {
			t.Errorf("subscriber %d: got %+v, want the idle of ses_2", i+1, ev)
		}
	}
	cancel()
	<-hub.done
	for i, s := range subs[1:] {
		if _, ok := <-s; ok {
			t.Errorf("subscriber %d still open after the stream ended", i+1)
		}
	}
	if _, ok := <-hub.Events(context.Background()); !ok {
		t.Error("a subscription after the end has no first event")
	}
}

// TestEventHubNeverWaitsForASlowSubscriber: a subscriber that reads nothing
// does not hold up the others; once it reads again it gets an
// EventReconnected before the next event.
func TestEventHubNeverWaitsForASlowSubscriber(t *testing.T) {
	src := &chanSource{ch: make(chan agent.Event)}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel() }()
	hub := newEventHub(ctx, src, slog.New(slog.DiscardHandler))
	slow, fast := hub.Events(ctx), hub.Events(ctx)
	nextEvent(t, fast)
	for i := range hubBuffer + 10 {
		src.ch <- agent.Event{Type: agent.EventSessionStatus, SessionID: "ses_fast", Status: "busy"}
		if ev := nextEvent(t, fast); ev.SessionID != "ses_fast" {
			t.Fatalf("fast subscriber, event %d: %+v", i, ev)
		}
	}
	for range hubBuffer { // its first EventReconnected and what fitted after it
		nextEvent(t, slow)
	}
	src.ch <- agent.Event{Type: agent.EventSessionIdle, SessionID: "ses_last"}
	if ev := nextEvent(t, slow); ev.Type != agent.EventReconnected {
		t.Errorf("slow subscriber after its drops: %+v, want %s", ev, agent.EventReconnected)
	}
	if ev := nextEvent(t, slow); ev.SessionID != "ses_last" {
		t.Errorf("slow subscriber then: %+v, want the idle of ses_last", ev)
	}
}
