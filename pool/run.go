package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"

	"pool/agent"
	"pool/clone"
	"pool/commitstatus"
	"pool/configs"
	"pool/forgejo"
	"pool/internal/guard"
	"pool/lifecycle"
	"pool/metrics"
	"pool/ops"
	"pool/report"
	"pool/webhook"
)

// keepWarnings is how many warnings the status page shows.
const keepWarnings = 20

// Run wires the real forge, agent server, state store and clone, supervises
// until ctx ends or the pool goes idle, and cleans up on every way out: the
// webhook receiver and the ops listener have stopped, the store is closed,
// and the clone is removed, unless sessions were left running in its work
// trees for the next start to adopt. Every answer read from the forge or the
// agent server is capped at cfg.MaxBody.
func Run(ctx context.Context, cfg configs.Config, log *slog.Logger) (Report, error) {
	if cfg.Several() {
		return runSeveral(ctx, cfg, log)
	}
	warnings := ops.NewWarnings(keepWarnings)
	log = slog.New(warnings.Wrap(log.Handler()))
	var p *Pool // read by the gauges only once the ops listener runs, after p is set
	m := metrics.New(func() metrics.Gauges { return gauges(p.Status()) })
	var fc *forgejo.Client
	err := retryStart(ctx, log, "connect to the forge", startFirstWait, forgeRetryable, func() (err error) {
		fc, err = forgejo.New(ctx, cfg.ForgejoURL, cfg.Token, forgejo.Options{MaxBody: cfg.MaxBody,
			Transport: m.ForgeTransport(nil), Log: log.With("component", "forgejo")})
		return err
	})
	if err != nil {
		return Report{}, fmt.Errorf("pool: connect to the forge: %w", err)
	}
	ac := agent.New(cfg.AgentURL, cfg.AgentPassword, agent.Options{MaxBody: cfg.MaxBody, Transport: m.AgentTransport(nil)})
	p, cl, store, err := openRepo(ctx, cfg, Deps{Forge: fc, Agent: ac, Log: log, Metrics: m, Digests: tickDigester{c: fc, cfg: cfg}})
	if err != nil {
		return Report{}, err
	}
	defer store.Close()
	servers, stopServers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if cfg.Listen != "" {
		wg.Add(1)
		guard.Go(servers, log, "webhook receiver", func() { defer wg.Done(); serveWebhooks(servers, cfg, p, m, log) })
	}
	status := func() ops.Status {
		st := p.Status()
		st.Warnings = warnings.List()
		return st
	}
	if cfg.OpsListen != "" {
		checks := []ops.Check{
			{Name: "forge", Probe: func(ctx context.Context) error { _, err := fc.Me(ctx); return err }},
			{Name: "agent", Probe: func(ctx context.Context) error { _, err := ac.Statuses(ctx, ""); return err }},
			{Name: "store", Probe: func(context.Context) error { return store.Check() }},
			{Name: "events", Probe: func(context.Context) error { return streamConnected(m) }},
			ops.CycleFresh(status, 3*cfg.PollInterval),
		}
		srv := &ops.Server{Status: status, Metrics: m.Handler(), Checks: checks}
		wg.Add(1)
		guard.Go(servers, log, "ops listener", func() { defer wg.Done(); serveOps(servers, cfg, srv, log) })
	}
	rep, err := runRepo(ctx, cfg, p, fc, log, false)
	stopServers()
	wg.Wait()
	closeClone(p, cl, log)
	return rep, err
}

// openRepo opens a repository's state store, makes its pool with d (to
// which it adds the store) and opens its clone, retrying what the forge may
// answer later. The caller closes the store once the pool has run.
func openRepo(ctx context.Context, cfg configs.Config, d Deps) (*Pool, *clone.Clone, *Store, error) {
	log := d.Log
	store, err := OpenStore(cfg.StateDir, cfg.Owner, cfg.Name, log)
	if err != nil {
		return nil, nil, nil, err
	}
	d.Store, d.WorkDir = store, store.Dir()
	var p *Pool
	if err := retryStart(ctx, log, "read the token's account and the repository", startFirstWait, forgeRetryable, func() (err error) {
		p, err = New(ctx, cfg, d)
		return err
	}); err != nil {
		store.Close()
		return nil, nil, nil, err
	}
	var cl *clone.Clone
	err = retryStart(ctx, log, "clone", startFirstWait, cloneRetryable, func() (err error) {
		cl, err = clone.Open(ctx, clone.Options{Dir: filepath.Join(store.Dir(), "clone"), Log: log.With("component", "clone"),
			URL:   fmt.Sprintf("%s/%s/%s.git", cfg.ForgejoURL, cfg.Owner, cfg.Name),
			Token: cfg.Token, Branch: p.base, GitName: cfg.GitName, GitEmail: cfg.GitEmail})
		return err
	})
	if err != nil {
		p.slots.leave(cfg.Repo()) // it will not run
		store.Close()
		return nil, nil, nil, fmt.Errorf("pool: %w", err)
	}
	log.Info("clone ready", "dir", cl.Dir, "reused", cl.Reused)
	p.trees, p.history = cl, cl
	return p, cl, store, nil
}

// runRepo runs a repository's pool, keeping its commit statuses unless
// there are none to keep. several: its status page shows several
// repositories.
func runRepo(ctx context.Context, cfg configs.Config, p *Pool, fc *forgejo.Client, log *slog.Logger, several bool) (Report, error) {
	if cfg.StatusContext == "" || cfg.DryRun {
		return p.Run(ctx)
	}
	return runPublishing(ctx, cfg, p, &commitstatus.Publisher{Forge: fc, Owner: cfg.Owner, Repo: cfg.Name,
		Context: cfg.StatusContext, PageURL: cfg.OpsURL, OnePageOfSeveral: several, Required: p.OwnStatusRequired,
		Memory: p.statusMemory(), Log: log.With("component", "commitstatus")})
}

// closeClone frees the agent server's instances for the free work trees,
// and removes a repository's clone after its pool ran, unless sessions were
// left running in its work trees for the next start.
func closeClone(p *Pool, cl *clone.Clone, log *slog.Logger) {
	p.retireAll()
	if left := p.leftRunning(); left > 0 {
		log.Info("keeping the clone: sessions left running work in it", "sessions", left, "dir", cl.Dir)
	} else if err := cl.Remove(); err != nil {
		log.Error("removing the clone failed", "dir", cl.Dir, "err", err)
	}
}

// runPublishing runs the pool with its commit statuses kept up to date, and
// publishes once more after it stops, so a merge in the last cycle shows.
func runPublishing(ctx context.Context, cfg configs.Config, p *Pool, pub *commitstatus.Publisher) (Report, error) {
	pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	guard.Go(ctx, p.log, "commit status publisher", func() { defer close(done); pub.Run(pctx, p.Status, p.Changed(), cfg.PollInterval) })
	rep, err := p.Run(ctx)
	stop()
	<-done
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	pub.Sync(fctx, p.Status())
	return rep, err
}

func streamConnected(m *metrics.Metrics) error {
	if !m.EventStreamConnected() {
		return errors.New("the agent server's event stream is not connected")
	}
	return nil
}

// gauges are the metrics read from the status at each scrape.
func gauges(st ops.Status) metrics.Gauges {
	g := metrics.Gauges{SlotsBusy: st.Busy(), SlotsTotal: st.Workers, PRsByState: map[string]int{}}
	for _, s := range []lifecycle.State{lifecycle.Unreviewed, lifecycle.CIPending, lifecycle.CIFailing, lifecycle.MergeFailed,
		lifecycle.MergeScheduled, lifecycle.Conflict, lifecycle.ChangesRequested, lifecycle.Commented, lifecycle.AwaitingHuman,
		lifecycle.DependenciesOpen, lifecycle.QuotaExceeded, lifecycle.MergeRefused, lifecycle.OutOfDate, lifecycle.Updating,
		lifecycle.UpdateChecks} {
		g.PRsByState[string(s)] = 0 // every state shows, even at zero
	}
	for _, pr := range st.PRs {
		if !pr.Done {
			g.PRsByState[pr.State]++
		}
	}
	return g
}

func serveOps(ctx context.Context, cfg configs.Config, srv *ops.Server, log *slog.Logger) {
	log = log.With("component", "ops")
	if err := ops.Serve(ctx, cfg.OpsListen, srv.Handler(), log); err != nil {
		log.Error("ops listener stopped", "err", err)
	}
}

// tickDigester reads digests with the same code as `pool tick`.
type tickDigester struct {
	c   *forgejo.Client
	cfg configs.Config
}

func (t tickDigester) Digest(ctx context.Context, n int) (report.Digest, error) {
	rule := lifecycle.ReviewRule{Reviewers: t.cfg.Reviewers, AllowUnofficial: t.cfg.AllowUnofficial}
	return report.Tick(ctx, t.c, t.cfg.Owner, t.cfg.Name, n, report.TickOptions{Rule: rule, OwnContext: t.cfg.StatusContext})
}

// serveWebhooks wakes the pool on verified forge deliveries until ctx ends.
// If it cannot serve, polling carries on alone.
func serveWebhooks(ctx context.Context, cfg configs.Config, p *Pool, m *metrics.Metrics, log *slog.Logger) {
	log = log.With("component", "webhook")
	h := webhook.Handler([]byte(cfg.WebhookSecret), cfg.Owner, cfg.Name, log, p.Wake)
	log.Info("serving forge webhooks", "addr", cfg.Listen)
	if err := webhook.Serve(ctx, cfg.Listen, m.WebhookHandler(h), log); err != nil {
		log.Error("webhook receiver stopped; polling continues", "err", err)
	}
}

// InstallHook registers the pool's webhook on the repository.
func InstallHook(ctx context.Context, cfg configs.Config) error {
	if cfg.HookURL == "" || cfg.WebhookSecret == "" {
		return &configs.Error{Key: "webhook.url", Reason: "hook install needs webhook.url (--hook-url) and webhook.secret"}
	}
	fc, err := forgejo.New(ctx, cfg.ForgejoURL, cfg.Token, forgejo.Options{MaxBody: cfg.MaxBody})
	if err != nil {
		return fmt.Errorf("pool: connect to the forge: %w", err)
	}
	if !cfg.Several() {
		return webhook.Install(ctx, fc, cfg.Owner, cfg.Name, cfg.HookURL, []byte(cfg.WebhookSecret))
	}
	if cfg.Org != "" {
		if err := webhook.InstallOrg(ctx, fc, cfg.Org, cfg.HookURL, []byte(cfg.WebhookSecret)); err != nil {
			return err
		}
	}
	for _, repo := range cfg.Repos {
		owner, name, _ := strings.Cut(repo, "/")
		if strings.EqualFold(owner, cfg.Org) {
			continue // the organisation's hook delivers for it
		}
		if err := webhook.Install(ctx, fc, owner, name, cfg.HookURL, []byte(cfg.WebhookSecret)); err != nil {
			return err
		}
	}
	return nil
}

// HookTargets names where InstallHook installs: the repository, or the
// organisation and the named repositories outside it.
func HookTargets(cfg configs.Config) string {
	if !cfg.Several() {
		return cfg.Repo()
	}
	var out []string
	if cfg.Org != "" {
		out = append(out, "organisation "+cfg.Org)
	}
	for _, repo := range cfg.Repos {
		if owner, _, _ := strings.Cut(repo, "/"); !strings.EqualFold(owner, cfg.Org) {
			out = append(out, repo)
		}
	}
	return strings.Join(out, ", ")
}
