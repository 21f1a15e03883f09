package serve

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"pool/lifecycle"
	"pool/metrics"
	"pool/ops"
	"pool/pool"
	"pool/statuspage"
	"pool/webhook"
)

// status is what the status page shows: the one repository's pool, or
// every repository's slots and PRs, named by repository, and its figures
// (ops.Combine).
func (s *process) status() statuspage.Status {
	s.mu.Lock()
	names := slices.Sorted(maps.Keys(s.repos))
	repos := make([]*repo, len(names))
	for i, n := range names {
		repos[i] = s.repos[n]
	}
	only := s.only
	s.mu.Unlock()
	if !s.cfg.Several() {
		var st statuspage.Status
		if only != nil {
			st = only.Status()
		}
		st.Warnings = s.warnings.List()
		st.AgentServers = s.agentServers()
		return st
	}
	st := statuspage.Status{Repo: fmt.Sprintf("%d repositories", len(repos)), ForgeURL: s.cfg.ForgejoURL, AgentURL: s.cfg.AgentURLs(),
		Workers: s.cfg.Workers, Version: pool.Version(), Now: time.Now(), Warnings: s.warnings.List()}
	if s.cfg.Org != "" {
		st.Repo = fmt.Sprintf("organisation %s (%d repositories)", s.cfg.Org, len(repos))
	}
	each := make([]statuspage.Status, len(repos))
	for i, r := range repos {
		each[i] = r.pool.Status()
		each[i].Repo = r.cfg.Repo()
	}
	st = ops.Combine(st, each)
	st.AgentServers = s.agentServers()
	return st
}

// agentServers are the agent servers as the status page shows them.
func (s *process) agentServers() []statuspage.AgentServer {
	if s.agents == nil {
		return nil
	}
	var out []statuspage.AgentServer
	for _, a := range s.agents.Status() {
		role := "both"
		switch {
		case !a.Fix:
			role = "review"
		case !a.Review:
			role = "fix"
		}
		out = append(out, statuspage.AgentServer{URL: a.Name, Role: role, Labels: a.Labels, Up: a.Up, Workers: a.Workers,
			Sessions: a.Sessions, Started: a.Started, Lost: a.Lost})
	}
	return out
}

// serveOps serves the status page with the health and readiness checks of
// the whole process until ctx ends.
func (s *process) serveOps(ctx context.Context) {
	log := s.log.With("component", "ops")
	checks := []ops.Check{
		{Name: "forge", Probe: func(ctx context.Context) error { _, err := s.fc.Me(ctx); return err }},
		{Name: "agent", Probe: s.agents.Ready},
		{Name: "store", Probe: func(context.Context) error { return s.checkStores() }},
		{Name: "events", Probe: func(context.Context) error { return streamConnected(s.metrics) }},
		ops.CycleFresh(s.status, 3*s.cfg.PollInterval),
	}
	srv := &ops.Server{Status: s.status, Metrics: s.metrics.Handler(), Checks: checks}
	if err := ops.Serve(ctx, s.cfg.OpsListen, srv.Handler(), log); err != nil {
		log.Error("ops listener stopped", "err", err)
	}
}

// checkStores checks every running repository's state store.
func (s *process) checkStores() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, r := range s.repos {
		if r.store == nil {
			continue
		}
		if err := r.store.Check(); err != nil {
			if !s.cfg.Several() {
				return err
			}
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// serveWebhooks serves one webhook endpoint for every repository served
// until ctx ends: a delivery wakes its repository's pool. If it cannot
// serve, polling carries on alone.
func (s *process) serveWebhooks(ctx context.Context) {
	log := s.log.With("component", "webhook")
	h := webhook.Router([]byte(s.cfg.WebhookSecret), log, func(name string) (webhook.Wake, bool) {
		s.mu.Lock()
		r := s.repos[strings.ToLower(name)]
		s.mu.Unlock()
		if r == nil {
			return nil, false
		}
		return r.pool.Wake, true
	})
	log.Info("serving forge webhooks", "addr", s.cfg.Listen)
	if err := webhook.Serve(ctx, s.cfg.Listen, s.metrics.WebhookHandler(h), log); err != nil {
		log.Error("webhook receiver stopped; polling continues", "err", err)
	}
}

func streamConnected(m *metrics.Metrics) error {
	if !m.EventStreamConnected() {
		return errors.New("the agent server's event stream is not connected")
	}
	return nil
}

// gauges are the metrics read from the status at each scrape.
func gauges(st statuspage.Status) metrics.Gauges {
	g := metrics.Gauges{SlotsBusy: st.Busy(), SlotsTotal: st.Workers, PRsByState: map[string]int{}}
	for _, a := range st.AgentServers {
		g.AgentServers = append(g.AgentServers, metrics.AgentServer{URL: a.URL, Up: a.Up, Slots: a.Workers, Sessions: a.Sessions,
			Started: a.Started, Lost: a.Lost})
	}
	for _, s := range []lifecycle.State{lifecycle.Unreviewed, lifecycle.CIPending, lifecycle.CIFailing, lifecycle.MergeFailed,
		lifecycle.MergeScheduled, lifecycle.Conflict, lifecycle.ChangesRequested, lifecycle.Commented, lifecycle.AwaitingHuman,
		lifecycle.DependenciesOpen, lifecycle.QuotaExceeded, lifecycle.MergeRefused, lifecycle.OutOfDate, lifecycle.Updating,
		lifecycle.UpdateChecks, lifecycle.WorkInProgress} {
		g.PRsByState[string(s)] = 0 // every state shows, even at zero
	}
	for _, pr := range st.PRs {
		if !pr.Done {
			g.PRsByState[pr.State]++
		}
	}
	return g
}
