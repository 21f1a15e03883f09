package serve

import (
	"context"
	"log/slog"
	"sync"

	"pool/agent"
	"pool/fleet"
	"pool/internal/guard"
)

// hubBuffer is the events held for each slow subscriber of an eventHub.
const hubBuffer = 64

// eventHub shares one subscription to the agent server's event stream
// among the pools of the repositories one process serves: one connection
// however many repositories. Each subscriber gets every event (a pool
// ignores the sessions it does not hold). Like the stream, it never waits
// for a subscriber: when one's buffer is full the event is dropped and an
// EventReconnected owed, paid with the next event that fits, so the pool
// reconciles from the server; its StatusInterval check covers the wait.
type eventHub struct {
	done chan struct{} // closed when the stream has ended and every subscriber is closed

	mu     sync.Mutex // guards subs and closed
	subs   map[*hubSub]struct{}
	closed bool // the stream has ended: no more subscribers
}

type hubSub struct {
	out  chan agent.Event
	owed bool
}

// newEventHub subscribes to src until ctx ends, and fans its events out.
func newEventHub(ctx context.Context, src eventSource, log *slog.Logger) *eventHub {
	h := &eventHub{subs: map[*hubSub]struct{}{}, done: make(chan struct{})}
	events := src.Events(ctx)
	guard.Go(ctx, log, "agent event hub", func() { h.run(events) })
	return h
}

// run fans out events until the stream closes, then closes every
// subscriber.
func (h *eventHub) run(events <-chan agent.Event) {
	defer close(h.done)
	for ev := range events {
		h.fanOut(ev)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for s := range h.subs {
		close(s.out)
		delete(h.subs, s)
	}
}

func (h *eventHub) fanOut(ev agent.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.send(ev)
	}
}

// send delivers ev, or drops it and owes an EventReconnected (agent.Offer).
func (s *hubSub) send(ev agent.Event) {
	s.owed, _ = agent.Offer(s.out, s.owed, ev)
}

// Events is a subscription until ctx ends, when its channel closes. It
// starts with an EventReconnected: what happened before it is not replayed.
func (h *eventHub) Events(ctx context.Context) <-chan agent.Event {
	s := &hubSub{out: make(chan agent.Event, hubBuffer)}
	s.out <- agent.Event{Type: agent.EventReconnected}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(s.out)
		return s.out
	}
	h.subs[s] = struct{}{}
	context.AfterFunc(ctx, func() { h.leave(s) })
	return s.out
}

func (h *eventHub) leave(s *hubSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		close(s.out)
	}
}

// eventSource is the agent server's event stream.
type eventSource interface {
	Events(ctx context.Context) <-chan agent.Event
}

// hubAgent is the agent servers with their event streams shared through a
// hub.
type hubAgent struct {
	*fleet.Fleet
	hub *eventHub
}

func (a hubAgent) Events(ctx context.Context) <-chan agent.Event { return a.hub.Events(ctx) }
