package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"pool/agent"
)

// Run checks every server every CheckEvery until ctx ends.
func (f *Fleet) Run(ctx context.Context) {
	t := time.NewTicker(CheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f.Check(ctx)
		}
	}
}

// Check reads every server once (its statuses, a cheap read), and marks
// each up or down by the answers: a server down LostAfter has its
// sessions counted lost; one that answers again is used again once those
// are deleted.
func (f *Fleet) Check(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range f.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.checkOne(ctx, s)
		}()
	}
	wg.Wait()
}

func (f *Fleet) checkOne(ctx context.Context, s *server) {
	read, cancel := context.WithTimeout(ctx, CheckTimeout)
	_, err := s.Agent.Statuses(read, "")
	cancel()
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		f.failed(s, err)
		return
	}
	f.mu.Lock()
	s.failures = 0
	down := s.down
	f.mu.Unlock()
	if down && f.endLost(ctx, s) {
		f.mu.Lock()
		s.down, s.lostDone = false, false
		s.life++
		close(f.revived)
		f.revived = make(chan struct{})
		f.mu.Unlock()
		f.log.Info("agent server answers again; placing sessions on it", "server", s.Name)
	}
}

// failed counts a failed check; the DownAfter-th in a row marks s down,
// and LostAfter later its sessions count lost, when another server may
// run them: with one server they wait for it, as its restart leaves them.
func (f *Fleet) failed(s *server, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s.failures++
	now := f.now()
	if !s.down && s.failures >= DownAfter {
		s.down, s.downSince = true, now
		f.log.Warn("agent server does not answer; no session starts on it", "server", s.Name, "failed_checks", s.failures,
			"sessions", len(s.held), "lost_after", LostAfter, "err", err)
	}
	if s.down && !s.lostDone && len(f.servers) > 1 && now.Sub(s.downSince) >= LostAfter {
		s.lostDone = true
		s.lost += len(s.held)
		if len(s.held) > 0 {
			f.log.Warn("agent server still down: its sessions count lost, and their PRs start again on another server",
				"server", s.Name, "sessions", len(s.held), "down_for", now.Sub(s.downSince).Round(time.Second))
		}
		for id := range s.held {
			s.lostIDs[id] = true
		}
		clear(s.held)
	}
}

// endLost deletes the sessions of s counted lost, before s is used again:
// its pools started their PRs again elsewhere. It reports whether each is
// gone.
func (f *Fleet) endLost(ctx context.Context, s *server) bool {
	f.mu.Lock()
	ids := slices.Collect(maps.Keys(s.lostIDs))
	f.mu.Unlock()
	ok := true
	for _, id := range ids {
		if err := s.Agent.Delete(ctx, id); err != nil {
			ok = false
			continue
		}
		f.log.Info("deleted a session counted lost while its agent server was down", "server", s.Name, "session", id)
		f.mu.Lock()
		delete(s.lostIDs, id)
		if f.where[id] == s {
			delete(f.where, id)
		}
		f.mu.Unlock()
	}
	return ok
}

// Events merges the servers' event streams until ctx ends, then closes
// the channel once every stream has closed. Like each stream it never
// waits for the consumer: a dropped event owes an EventReconnected.
func (f *Fleet) Events(ctx context.Context) <-chan agent.Event {
	out := make(chan agent.Event, 256)
	var mu sync.Mutex // guards owed and sends on out
	owed := false
	var wg sync.WaitGroup
	for _, s := range f.servers {
		in := s.Agent.Events(ctx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range in {
				mu.Lock()
				owed, _ = agent.Offer(out, owed, ev)
				mu.Unlock()
			}
		}()
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	return out
}

// Ready reports whether an up server answers a cheap read now.
func (f *Fleet) Ready(ctx context.Context) error {
	var errs []error
	for _, s := range f.up() {
		_, err := s.Agent.Statuses(ctx, "")
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("on %s: %w", s.Name, err))
	}
	if len(errs) == 0 {
		return errors.New("fleet: every agent server is down")
	}
	return errors.Join(errs...)
}

// ServerStatus is one server as the status page and metrics show it.
type ServerStatus struct {
	Name     string            `json:"name"`
	Labels   map[string]string `json:"labels,omitempty"`
	Review   bool              `json:"review"`
	Fix      bool              `json:"fix"`
	Up       bool              `json:"up"`
	Workers  int               `json:"workers"`
	Sessions int               `json:"sessions"` // in its slots now
	Started  int               `json:"started"`  // placed on it since start
	Lost     int               `json:"lost"`     // counted lost while it was down
}

// Status is every server's, in the configured order.
func (f *Fleet) Status() []ServerStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]ServerStatus, len(f.servers))
	for i, s := range f.servers {
		out[i] = ServerStatus{Name: s.Name, Labels: s.Labels, Review: s.Review, Fix: s.Fix, Up: !s.down, Workers: s.Workers,
			Sessions: len(s.held), Started: s.started, Lost: s.lost}
	}
	return out
}
