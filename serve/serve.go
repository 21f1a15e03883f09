// Package serve wires the pool process: the forge and agent clients, one
// pool (package pool: the loop of one repository) per repository served,
// one event hub sharing the agent server's stream, one webhook receiver,
// one ops listener with the readiness checks, and each repository's commit
// statuses. One repository is a list of one. cmd/pool calls Run and
// InstallHook; nothing below it touches signals.
package serve

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"pool/agent"
	"pool/configs"
	"pool/fleet"
	"pool/forgejo"
	"pool/forgejo/sdkclient"
	"pool/internal/bwrap"
	"pool/internal/guard"
	"pool/metrics"
	"pool/ops"
	"pool/pool"
	"pool/slots"
)

// keepWarnings is how many warnings the status page shows.
const keepWarnings = 20

// Run serves the repositories cfg names (one, several, or an
// organisation's) until ctx ends or every pool has ended on its own, and
// returns their report: one repository's as it is, several summed. Each
// pool has its own default branch, protection, state store, index,
// claims, merge queue and clone; they share the forge and agent clients,
// the event stream, the webhook receiver and the ops listener, and, with
// several, the workers (slots.Slots, max_per_repo) and the quiet-cycle
// delta (changeFeed: one request per owner a round). An organisation is
// listed again every cfg.OrgRelist: a new repository gets a pool, an
// archived or removed one's pool stops. Every way out cleans up: the
// listeners have stopped, each store is closed, and each clone removed
// unless sessions were left running in its work trees for the next start.
func Run(ctx context.Context, cfg configs.Config, log *slog.Logger) (pool.Report, error) {
	warnings := ops.NewWarnings(keepWarnings)
	log = slog.New(warnings.Wrap(log.Handler()))
	cfg.Fixers.Enabled = fixersEnabled(ctx, cfg, log)
	s := &process{cfg: cfg, log: log, warnings: warnings, running: map[string]context.CancelFunc{}, repos: map[string]*repo{},
		ended: make(chan struct{})}
	s.metrics = metrics.New(func() metrics.Gauges { return gauges(s.status()) })
	err := retryStart(ctx, log, "connect to the forge", startFirstWait, forgeRetryable, func() (err error) {
		s.fc, err = sdkclient.New(ctx, cfg.ForgejoURL, cfg.Token, forgejo.Options{MaxBody: cfg.MaxBody,
			Transport: s.metrics.ForgeTransport(nil), Log: log.With("component", "forgejo")})
		return err
	})
	if err != nil {
		return pool.Report{}, fmt.Errorf("pool: connect to the forge: %w", err)
	}
	if cfg.Several() {
		s.slots, s.feed = slots.New(cfg.Workers, cfg.MaxPerRepo), newChangeFeed(s.fc, time.Now)
	}
	s.agents = s.newFleet()
	hubCtx, stopHub := context.WithCancel(ctx)
	s.hub = newEventHub(hubCtx, s.agents, log.With("component", "agent"))
	checked := make(chan struct{})
	guard.Go(hubCtx, log, "agent server checks", func() { defer close(checked); s.agents.Run(hubCtx) })
	defer func() { stopHub(); <-s.hub.done; <-checked }()
	targets, err := s.targets(ctx, s.fc)
	if err != nil {
		return pool.Report{}, err
	}
	s.listEvery = max(pool.FullListEvery, len(targets))
	if cfg.Several() {
		log.Info("serving several repositories", "repos", targets, "org", cfg.Org, "workers", cfg.Workers, "max_per_repo", cfg.MaxPerRepo)
	}
	live := s.startAll(ctx, targets)
	if live == 0 && s.cfg.Org == "" {
		return s.total, s.firstErr // nothing to serve, and nothing will come
	}
	stopServers := s.serve(ctx)
	defer stopServers()
	s.wait(ctx, live)
	return s.report(), s.firstErr
}

// report is the pools' total, with each agent server's sessions when
// there are several.
func (s *process) report() pool.Report {
	s.mu.Lock()
	r := s.total
	s.mu.Unlock()
	if st := s.agents.Status(); len(st) > 1 {
		for _, a := range st {
			r.AgentServers = append(r.AgentServers, pool.ServerCount{URL: a.Name, Started: a.Started, Lost: a.Lost})
		}
	}
	return r
}

// process is the state of Run.
type process struct {
	cfg      configs.Config
	log      *slog.Logger
	warnings *ops.Warnings
	metrics  *metrics.Metrics
	fc       *sdkclient.Client
	agents   *fleet.Fleet  // the agent servers, one agent for every pool
	hub      *eventHub     // the agent servers' event streams, one for every pool
	slots    *slots.Slots  // shared by several repositories' pools; nil for one
	feed     *changeFeed   // the quiet-cycle delta of several repositories, one search per owner; nil for one
	ended    chan struct{} // a pool ended; received by wait alone

	mu        sync.Mutex // guards running, repos, only, total, firstErr, listEvery and turns
	listEvery int        // cycles between one pool's full listings: pool.FullListEvery, or one per repository
	turns     int        // full-listing phases given out
	running   map[string]context.CancelFunc
	repos     map[string]*repo // by lower-case name, while its pool runs
	only      *pool.Pool       // the pool of the one repository served, kept after it ended
	total     pool.Report
	firstErr  error
}

// serve starts the webhook receiver and the ops listener the config asks
// for; the returned func stops them and waits until they have stopped.
func (s *process) serve(ctx context.Context) func() {
	servers, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if s.cfg.Listen != "" {
		wg.Add(1)
		guard.Go(servers, s.log, "webhook receiver", func() { defer wg.Done(); s.serveWebhooks(servers) })
	}
	if s.cfg.OpsListen != "" {
		wg.Add(1)
		guard.Go(servers, s.log, "ops listener", func() { defer wg.Done(); s.serveOps(servers) })
	}
	return func() { stop(); wg.Wait() }
}

// wait returns when the live pools (and those started later) have ended.
// With no pool left, an organisation is still waited on when the pools
// never exit on their own (idle_exit 0): its next listing may bring one.
func (s *process) wait(ctx context.Context, live int) {
	var relist <-chan time.Time
	if s.cfg.Org != "" {
		t := time.NewTicker(s.cfg.OrgRelist)
		defer t.Stop()
		relist = t.C
	}
	done := ctx.Done()
	for live > 0 || (relist != nil && s.cfg.IdleExit == 0 && done != nil) {
		select {
		case <-s.ended:
			live--
		case <-relist:
			live += s.relist(ctx, s.fc)
		case <-done:
			done = nil // the pools end on their own
		}
	}
}

// newFleet makes the agent servers' fleet (configs.Config.Servers).
func (s *process) newFleet() *fleet.Fleet {
	var servers []fleet.Server
	for _, a := range s.cfg.Servers() {
		c := agent.New(a.URL, a.Password, agent.Options{MaxBody: s.cfg.MaxBody, Transport: s.metrics.AgentTransport(nil)})
		servers = append(servers, fleet.Server{Name: a.URL, Agent: c, Workers: a.Workers, Review: a.Reviews(), Fix: a.Fixes(), Labels: a.Labels})
	}
	return fleet.New(servers, fleet.Options{Log: s.log.With("component", "fleet")})
}

// fixersEnabled is cfg.Fixers.Enabled unless no sandbox for the fixers'
// commands can be made on this machine (bwrap.Probe): fixers run a PR's
// code, so without one they are refused, with one line saying why.
func fixersEnabled(ctx context.Context, cfg configs.Config, log *slog.Logger) bool {
	if !cfg.Fixers.Enabled || cfg.DryRun {
		return cfg.Fixers.Enabled
	}
	if err := bwrap.Probe(ctx); err != nil {
		log.Warn("fixers refused: no sandbox for their commands can be made here; fixers.enabled is ignored", "err", err)
		return false
	}
	return true
}
