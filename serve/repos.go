package serve

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"pool/internal/guard"
	"pool/pool"

	"golang.org/x/sync/errgroup"
)

// orgLister lists an organisation's repositories.
type orgLister interface {
	OrgRepos(ctx context.Context, org string) ([]string, error)
}

// targets are the repositories named (the one, or several), and the
// organisation's.
func (s *process) targets(ctx context.Context, org orgLister) ([]string, error) {
	if !s.cfg.Several() {
		return []string{s.cfg.Repo()}, nil
	}
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
// given before every one's first cycle (see slots.Slots). A repository whose
// pool cannot start is logged and left out; the others go on. It returns
// how many it started; each sends on s.ended when it has ended.
func (s *process) startAll(ctx context.Context, repos []string) int {
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
			run, err := s.open(ctx, repo)
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
func (s *process) startFailed(repo string, err error) {
	switch {
	case !s.cfg.Several():
		// the one repository: the error is the process's
	case s.cfg.Org != "":
		s.log.Warn("a repository's pool could not start; serving the others, and trying it again at the next listing",
			"repo", repo, "err", err, "next_listing", s.cfg.OrgRelist)
		return
	default:
		s.log.Error("a repository's pool could not start; serving the others", "repo", repo, "err", err)
	}
	s.note(repo, pool.Report{}, err)
}

// open makes one repository's pool; run runs it to its end and cleans up.
func (s *process) open(ctx context.Context, name string) (run func(), err error) {
	cfg, log := s.cfg, s.log
	d := pool.Deps{Forge: s.fc, Reruns: s.fc, Agent: hubAgent{Fleet: s.agents, hub: s.hub}, Log: log, Metrics: s.metrics}
	if s.cfg.Several() {
		cfg, log = s.cfg.For(name), s.log.With("repo", name)
		d.Forge, d.Log, d.Slots, d.FullList = feedForge{Forge: s.fc, feed: s.feed}, log, s.slots, s.nextTurn(cfg.Owner)
	}
	d.Digests = tickDigester{c: s.fc, cfg: cfg}
	r, err := openRepo(ctx, cfg, d)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(ctx)
	key := strings.ToLower(name)
	s.mu.Lock()
	s.running[name] = cancel
	s.repos[key] = r
	if !s.cfg.Several() {
		s.only = r.pool
	}
	s.mu.Unlock()
	return func() {
		defer cancel()
		rep, err := r.run(pctx, s.fc, log, s.cfg.Several())
		s.mu.Lock()
		delete(s.running, name)
		delete(s.repos, key)
		s.mu.Unlock()
		r.close(log)
		s.note(name, rep, err)
	}, nil
}

// nextTurn is the full-listing turn of the next pool made, of a
// repository of owner: the pools, which cycle at the same pace, take
// consecutive phases, so their turns fall in different rounds while they
// stay in step; a pool woken between rounds drifts out of step, and the
// gate (one listing between two searches of the owner) defers a turn that
// falls in a round already holding one.
func (s *process) nextTurn(owner string) pool.ListTurn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listEvery == 0 {
		s.listEvery = pool.FullListEvery
	}
	t := pool.ListTurn{Every: s.listEvery, Phase: s.turns % s.listEvery}
	if s.feed != nil {
		t.Gate = func() bool { return s.feed.takeListing(owner) }
	}
	s.turns++
	return t
}

// note takes in a repository's report and keeps the first error: one
// repository's as they are, several summed and named.
func (s *process) note(repo string, r pool.Report, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.cfg.Several() {
		s.total, s.firstErr = r, err
		return
	}
	r.Repo = repo
	s.total = add(s.total, r)
	if err != nil && s.firstErr == nil {
		s.firstErr = fmt.Errorf("%s: %w", repo, err)
	}
}

// relist lists the organisation again: new repositories get a pool, those
// no longer listed (archived, removed, or out of the token's sight) are
// stopped. A failed listing changes nothing. It returns how many pools it
// started.
func (s *process) relist(ctx context.Context, org orgLister) int {
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
func (s *process) stopUnlisted(want []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for repo, cancel := range s.running {
		if !slices.ContainsFunc(want, func(w string) bool { return strings.EqualFold(w, repo) }) {
			s.log.Info("a repository is no longer listed; stopping its pool", "repo", repo)
			cancel()
		}
	}
}
