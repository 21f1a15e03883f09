package pool

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"pool/agent"
	"pool/configs"
	"pool/forgejo"
	"pool/internal/guard"
	"pool/metrics"
	"pool/ops"
	"pool/webhook"

	"golang.org/x/sync/errgroup"
)

// orgLister lists an organisation's repositories.
type orgLister interface {
	OrgRepos(ctx context.Context, org string) ([]string, error)
}

// runSeveral serves several repositories, or an organisation's, in one
// process: one pool per repository, each with its own default branch,
// protection, state store, index, claims, merge queue and clone, sharing
// the forge and agent clients, the workers (Slots, max_per_repo) and the
// quiet-cycle delta (changeFeed: one request per owner a round). An
// organisation is listed again every cfg.OrgRelist: a new repository
// gets a pool, an archived or removed one's pool stops. It returns when
// every pool has ended (each exits on its own idle limit, or when ctx
// ends), with their reports summed.
func runSeveral(ctx context.Context, cfg configs.Config, log *slog.Logger) (Report, error) {
	warnings := ops.NewWarnings(keepWarnings)
	log = slog.New(warnings.Wrap(log.Handler()))
	s := &several{cfg: cfg, log: log, warnings: warnings, slots: NewSlots(cfg.Workers, cfg.MaxPerRepo),
		running: map[string]context.CancelFunc{}, pools: map[string]*Pool{}, stores: map[string]*Store{}, ended: make(chan struct{})}
	s.metrics = metrics.New(func() metrics.Gauges { return gauges(s.status()) })
	var fc *forgejo.Client
	err := retryStart(ctx, log, "connect to the forge", startFirstWait, forgeRetryable, func() (err error) {
		fc, err = forgejo.New(ctx, cfg.ForgejoURL, cfg.Token, forgejo.Options{MaxBody: cfg.MaxBody,
			Transport: s.metrics.ForgeTransport(nil), Log: log.With("component", "forgejo")})
		return err
	})
	if err != nil {
		return Report{}, fmt.Errorf("pool: connect to the forge: %w", err)
	}
	s.fc, s.feed = fc, newChangeFeed(fc, time.Now)
	s.ac = agent.New(cfg.AgentURL, cfg.AgentPassword, agent.Options{MaxBody: cfg.MaxBody, Transport: s.metrics.AgentTransport(nil)})
	hubCtx, stopHub := context.WithCancel(ctx)
	s.hub = newEventHub(hubCtx, s.ac, log.With("component", "agent"))
	defer func() { stopHub(); <-s.hub.done }()
	targets, err := s.targets(ctx, fc)
	if err != nil {
		return Report{}, err
	}
	s.listEvery = max(fullListEvery, len(targets))
	log.Info("serving several repositories", "repos", targets, "org", cfg.Org, "workers", cfg.Workers, "max_per_repo", cfg.MaxPerRepo)
	live := s.startAll(ctx, targets)
	servers, stopServers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopServers(); wg.Wait() }()
	if cfg.Listen != "" {
		wg.Add(1)
		guard.Go(servers, log, "webhook receiver", func() { defer wg.Done(); s.serveWebhooks(servers) })
	}
	if cfg.OpsListen != "" {
		wg.Add(1)
		guard.Go(servers, log, "ops listener", func() { defer wg.Done(); serveOps(servers, cfg, s.opsServer(), log) })
	}
	var relist <-chan time.Time
	if cfg.Org != "" {
		t := time.NewTicker(cfg.OrgRelist)
		defer t.Stop()
		relist = t.C
	}
	// With no pool left, an organisation is still waited on when the pools
	// never exit on their own (idle_exit 0): its next listing may bring one.
	done := ctx.Done()
	for live > 0 || (relist != nil && cfg.IdleExit == 0 && done != nil) {
		select {
		case <-s.ended:
			live--
		case <-relist:
			live += s.relist(ctx, fc)
		case <-done:
			done = nil // the pools end on their own
		}
	}
	return s.total, s.firstErr
}

// several is the state of runSeveral.
type several struct {
	cfg      configs.Config
	log      *slog.Logger
	warnings *ops.Warnings
	metrics  *metrics.Metrics
	fc       *forgejo.Client
	ac       *agent.Client
	hub      *eventHub // the agent server's event stream, one for every pool
	slots    *Slots
	feed     *changeFeed   // the quiet-cycle delta of every repository, one search per owner
	ended    chan struct{} // a pool ended; received by runSeveral alone

	mu        sync.Mutex // guards running, pools, stores, total, firstErr, listEvery and turns
	listEvery int        // cycles between one pool's full listings: fullListEvery, or one per repository
	turns     int        // full-listing phases given out
	running   map[string]context.CancelFunc
	pools     map[string]*Pool  // by lower-case name, while it runs
	stores    map[string]*Store // by lower-case name, while its pool runs
	total     Report
	firstErr  error
}

// targets are the repositories named, and the organisation's.
func (s *several) targets(ctx context.Context, org orgLister) ([]string, error) {
	out := slices.Clone(s.cfg.Repos)
	if s.cfg.Org == "" {
		return out, nil
	}
	var listed []string
	err := retryStart(ctx, s.log, "list the organisation's repositories", startFirstWait, forgeRetryable, func() (err error) {
		listed, err = org.OrgRepos(ctx, s.cfg.Org)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pool: list the repositories of %s: %w", s.cfg.Org, err)
	}
	return mergeTargets(out, listed), nil
}

// mergeTargets adds listed to named, each repository once (the forge
// ignores case in names).
func mergeTargets(named, listed []string) []string {
	out := slices.Clone(named)
	for _, r := range listed {
		if !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, r) }) {
			out = append(out, r)
		}
	}
	return out
}

// startConcurrency is how many repositories' pools startAll opens at once:
// each reads its repository and opens (or clones) its git clone.
const startConcurrency = 4

// startAll makes the pools of repos that have none, startConcurrency at a
// time, all before any runs: each joins the slots when made, and no slot is
// given before every one's first cycle (see Slots). A repository whose pool
// cannot start is logged and left out; the others go on. It returns how
// many it started; each sends on s.ended when it has ended.
func (s *several) startAll(ctx context.Context, repos []string) int {
	var (
		mu   sync.Mutex
		runs []func()
		g    errgroup.Group
	)
	g.SetLimit(startConcurrency)
	for _, repo := range repos {
		s.mu.Lock()
		_, running := s.running[repo]
		s.mu.Unlock()
		if running {
			continue
		}
		g.Go(func() error {
			_, run, err := s.open(ctx, repo)
			if err != nil {
				s.startFailed(repo, err)
				return nil
			}
			mu.Lock()
			runs = append(runs, run)
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait() // every open reports its own failure
	for _, run := range runs {
		guard.Go(ctx, s.log, "repository pool", func() {
			defer func() { s.ended <- struct{}{} }()
			run()
		})
	}
	return len(runs)
}

// startFailed reports a repository whose pool could not start. With an
// organisation, the next listing tries it again (a repository made a moment
// ago may not have its default branch yet): a warning. Otherwise it is left
// out for good, and the process's exit says so.
func (s *several) startFailed(repo string, err error) {
	if s.cfg.Org != "" {
		s.log.Warn("a repository's pool could not start; serving the others, and trying it again at the next listing",
			"repo", repo, "err", err, "next_listing", s.cfg.OrgRelist)
		return
	}
	s.log.Error("a repository's pool could not start; serving the others", "repo", repo, "err", err)
	s.note(repo, Report{}, err)
}

// open makes one repository's pool; run runs it to its end and cleans up.
func (s *several) open(ctx context.Context, repo string) (*Pool, func(), error) {
	cfg := s.cfg.For(repo)
	log := s.log.With("repo", repo)
	p, cl, store, err := openRepo(ctx, cfg, Deps{Forge: feedForge{Forge: s.fc, feed: s.feed}, Agent: hubAgent{Agent: s.ac, hub: s.hub}, Log: log, Slots: s.slots,
		Metrics: s.metrics, FullList: s.nextTurn(cfg.Owner),
		Digests: tickDigester{c: s.fc, cfg: cfg}})
	if err != nil {
		return nil, nil, err
	}
	pctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.running[repo] = cancel
	s.pools[strings.ToLower(repo)] = p
	s.stores[strings.ToLower(repo)] = store
	s.mu.Unlock()
	return p, func() {
		defer store.Close()
		defer cancel()
		rep, err := runRepo(pctx, cfg, p, s.fc, log, true)
		closeClone(p, cl, log)
		s.mu.Lock()
		delete(s.running, repo)
		delete(s.pools, strings.ToLower(repo))
		delete(s.stores, strings.ToLower(repo))
		s.mu.Unlock()
		s.note(repo, rep, err)
	}, nil
}

// nextTurn is the full-listing turn of the next pool made, of a
// repository of owner: the pools, which cycle at the same pace, take
// consecutive phases, so their turns fall in different rounds while they
// stay in step; a pool woken between rounds drifts out of step, and the
// gate (one listing between two searches of the owner) defers a turn that
// falls in a round already holding one.
func (s *several) nextTurn(owner string) ListTurn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listEvery == 0 {
		s.listEvery = fullListEvery
	}
	t := ListTurn{Every: s.listEvery, Phase: s.turns % s.listEvery}
	if s.feed != nil {
		t.Gate = func() bool { return s.feed.takeListing(owner) }
	}
	s.turns++
	return t
}

// note adds a repository's report to the total, and keeps the first error.
func (s *several) note(repo string, r Report, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Repo = repo
	s.total = s.total.add(r)
	if err != nil && s.firstErr == nil {
		s.firstErr = fmt.Errorf("%s: %w", repo, err)
	}
}

// relist lists the organisation again: new repositories get a pool, those
// no longer listed (archived, removed, or out of the token's sight) are
// stopped. A failed listing changes nothing. It returns how many pools it
// started.
func (s *several) relist(ctx context.Context, org orgLister) int {
	if ctx.Err() != nil {
		return 0
	}
	listed, err := org.OrgRepos(ctx, s.cfg.Org)
	if err != nil {
		s.log.Warn("listing the organisation's repositories failed; keeping the ones served", "err", err)
		return 0
	}
	want := mergeTargets(s.cfg.Repos, listed)
	s.stopUnlisted(want)
	return s.startAll(ctx, want)
}

// stopUnlisted stops the pools of repositories not in want.
func (s *several) stopUnlisted(want []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for repo, cancel := range s.running {
		if !slices.ContainsFunc(want, func(w string) bool { return strings.EqualFold(w, repo) }) {
			s.log.Info("a repository is no longer listed; stopping its pool", "repo", repo)
			cancel()
		}
	}
}

// serveWebhooks serves one webhook endpoint for every repository served
// until ctx ends: a delivery wakes its repository's pool. If it cannot
// serve, polling carries on alone.
func (s *several) serveWebhooks(ctx context.Context) {
	log := s.log.With("component", "webhook")
	h := webhook.Router([]byte(s.cfg.WebhookSecret), log, func(repo string) (webhook.Wake, bool) {
		s.mu.Lock()
		p := s.pools[strings.ToLower(repo)]
		s.mu.Unlock()
		if p == nil {
			return nil, false
		}
		return p.Wake, true
	})
	log.Info("serving forge webhooks for every repository", "addr", s.cfg.Listen)
	if err := webhook.Serve(ctx, s.cfg.Listen, h, log); err != nil {
		log.Error("webhook receiver stopped; polling continues", "err", err)
	}
}

// status is what the status page shows: every repository's slots and PRs,
// named by repository, and its figures; the oldest last cycle, so that a
// stuck repository shows (and fails readiness).
func (s *several) status() ops.Status {
	s.mu.Lock()
	names := slices.Sorted(maps.Keys(s.pools))
	pools := make([]*Pool, len(names))
	for i, n := range names {
		pools[i] = s.pools[n]
	}
	s.mu.Unlock()
	st := ops.Status{Repo: fmt.Sprintf("%d repositories", len(pools)), ForgeURL: s.cfg.ForgejoURL, AgentURL: s.cfg.AgentURL,
		Workers: s.cfg.Workers, Version: version(), Now: time.Now(), Warnings: s.warnings.List()}
	if s.cfg.Org != "" {
		st.Repo = fmt.Sprintf("organisation %s (%d repositories)", s.cfg.Org, len(pools))
	}
	for i, p := range pools {
		ps := p.Status()
		repo := p.cfg.Repo()
		if i == 0 || ps.Started.Before(st.Started) {
			st.Started = ps.Started
		}
		if i == 0 || ps.LastCycle.Before(st.LastCycle) {
			st.LastCycle = ps.LastCycle
		}
		if st.Instance == "" {
			st.Instance = ps.Instance
		}
		fig := ops.RepoFigures{Repo: repo, Busy: len(ps.Slots), LastCycle: ps.LastCycle}
		for _, slot := range ps.Slots {
			slot.Repo = repo
			st.Slots = append(st.Slots, slot)
		}
		for _, pr := range ps.PRs {
			pr.Repo = repo
			st.PRs = append(st.PRs, pr)
			switch {
			case pr.Merged:
				fig.Merged++
			case !pr.Done:
				fig.Open++
			}
		}
		st.Repos = append(st.Repos, fig)
	}
	return st
}

// opsServer serves the status page of every repository, with the health
// and readiness checks of the whole process.
func (s *several) opsServer() *ops.Server {
	checks := []ops.Check{
		{Name: "forge", Probe: func(ctx context.Context) error { _, err := s.fc.Me(ctx); return err }},
		{Name: "agent", Probe: func(ctx context.Context) error { _, err := s.ac.Statuses(ctx, ""); return err }},
		{Name: "store", Probe: func(context.Context) error { return s.checkStores() }},
		{Name: "events", Probe: func(context.Context) error { return streamConnected(s.metrics) }},
		ops.CycleFresh(s.status, 3*s.cfg.PollInterval),
	}
	return &ops.Server{Status: s.status, Metrics: s.metrics.Handler(), Checks: checks}
}

// checkStores checks every running repository's state store.
func (s *several) checkStores() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for repo, st := range s.stores {
		if err := st.Check(); err != nil {
			return fmt.Errorf("%s: %w", repo, err)
		}
	}
	return nil
}

// add adds a repository's report (o, whose Repo is set) to a total: the
// figures summed, and o kept in Repos, sorted by name.
func (r Report) add(o Report) Report {
	r.Repos = append(slices.Clone(r.Repos), o)
	slices.SortFunc(r.Repos, func(a, b Report) int { return strings.Compare(a.Repo, b.Repo) })
	if r.InstanceID == "" {
		r.InstanceID = o.InstanceID
	}
	r.Reviewed += o.Reviewed
	r.Merged += o.Merged
	r.Scheduled += o.Scheduled
	r.ChangesRequested += o.ChangesRequested
	r.Conflicts += o.Conflicts
	r.Skipped += o.Skipped
	r.Retrying += o.Retrying
	r.PendingMerge = append(r.PendingMerge, o.PendingMerge...)
	r.CIFixes += o.CIFixes
	r.Cycles += o.Cycles
	r.PeakSlots = max(r.PeakSlots, o.PeakSlots) // the busiest repository's
	return r
}
