package serve

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"pool/clone"
	"pool/commitstatus"
	"pool/configs"
	"pool/forgejo/sdkclient"
	"pool/internal/guard"
	"pool/pool"
	"pool/report"
	"pool/store"
)

// repo is one repository's pool and what it keeps on the disk.
type repo struct {
	cfg   configs.Config
	pool  *pool.Pool
	clone *clone.Clone // nil in a dry run
	store *store.Store // nil in a dry run: the pool's memory ends with the process
}

// openRepo opens a repository's state store, makes its pool with d (to
// which it adds the store) and opens its clone, retrying what the forge may
// answer later. A dry run opens neither store nor clone: it writes nothing
// to the disk. The caller closes the repository once the pool has run.
func openRepo(ctx context.Context, cfg configs.Config, d pool.Deps) (*repo, error) {
	log := d.Log
	r := &repo{cfg: cfg}
	if !cfg.DryRun {
		st, err := store.Open(cfg.StateDir, cfg.Owner, cfg.Name, log)
		if err != nil {
			return nil, err
		}
		r.store, d.Store, d.WorkDir = st, st, st.Dir()
		if err := shareTheWay(cfg, st); err != nil {
			r.close(log)
			return nil, err
		}
	}
	if err := retryStart(ctx, log, "read the token's account and the repository", startFirstWait, forgeRetryable, func() (err error) {
		r.pool, err = pool.New(ctx, cfg, d)
		return err
	}); err != nil {
		r.close(log)
		return nil, err
	}
	if cfg.DryRun {
		return r, nil
	}
	err := retryStart(ctx, log, "clone", startFirstWait, cloneRetryable, func() (err error) {
		r.clone, err = clone.Open(ctx, clone.Options{Dir: filepath.Join(r.store.Dir(), "clone"), Log: log.With("component", "clone"),
			URL:   fmt.Sprintf("%s/%s/%s.git", cfg.ForgejoURL, cfg.Owner, cfg.Name),
			Token: cfg.Token, Branch: r.pool.Base(), GitName: cfg.GitName, GitEmail: cfg.GitEmail, Instance: r.pool.Instance(), TreeGroup: cfg.AgentTreeGroup, Reaper: cfg.AgentReaper})
		return err
	})
	if err != nil {
		r.pool.Leave() // it will not run
		r.clone = nil
		r.close(log)
		return nil, fmt.Errorf("pool: %w", err)
	}
	log.Info("clone ready", "dir", r.clone.Dir, "reused", r.clone.Reused)
	r.pool.UseClone(r.clone)
	return r, nil
}

// shareTheWay lets the agent server's user (cfg.AgentTreeGroup) pass
// through the state directory and the repository's, down to the work
// trees; it may list neither, and the files in them stay the pool's. It
// comes before the pool lists the agent server's agents for the
// repository's directory, which the server resolves as its own user.
func shareTheWay(cfg configs.Config, st *store.Store) error {
	gid, err := clone.LookupGroup(cfg.AgentTreeGroup)
	if err != nil {
		return &configs.Error{Key: "agent.tree_group", Reason: "names no group of this machine"}
	}
	if err := clone.AllowTraverse(gid, st.Dir(), filepath.Dir(st.Dir())); err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	return nil
}

// run runs the repository's pool, keeping its commit statuses unless
// there are none to keep (none configured, or a dry run). several: its
// status page shows several repositories.
func (r *repo) run(ctx context.Context, fc *sdkclient.Client, log *slog.Logger, several bool) (pool.Report, error) {
	if r.cfg.StatusContext == "" || r.cfg.DryRun {
		return r.pool.Run(ctx)
	}
	return runPublishing(ctx, r.cfg, r.pool, log, &commitstatus.Publisher{Forge: fc, Owner: r.cfg.Owner, Repo: r.cfg.Name,
		Context: r.cfg.StatusContext, PageURL: r.cfg.OpsURL, OnePageOfSeveral: several, Required: r.pool.OwnStatusRequired,
		Memory: r.store, Log: log.With("component", "commitstatus")})
}

// close frees the agent server's instances for the free work trees, and
// removes the clone after the pool ran, unless sessions were left running
// in its work trees for the next start, and closes the store.
func (r *repo) close(log *slog.Logger) {
	if r.clone != nil {
		r.pool.RetireTrees()
		if left := r.pool.LeftRunning(); left > 0 {
			log.Info("keeping the clone: sessions left running work in it", "sessions", left, "dir", r.clone.Dir)
		} else if err := r.clone.Remove(); err != nil {
			log.Error("removing the clone failed", "dir", r.clone.Dir, "err", err)
		}
	}
	if r.store != nil {
		if err := r.store.Close(); err != nil {
			log.Error("closing the state store failed", "err", err)
		}
	}
}

// runPublishing runs the pool with its commit statuses kept up to date, and
// publishes once more after it stops, so a merge in the last cycle shows.
func runPublishing(ctx context.Context, cfg configs.Config, p *pool.Pool, log *slog.Logger, pub *commitstatus.Publisher) (pool.Report, error) {
	pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	guard.Go(ctx, log, "commit status publisher", func() { defer close(done); pub.Run(pctx, p.Status, p.Changed(), cfg.PollInterval) })
	rep, err := p.Run(ctx)
	stop()
	<-done
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	pub.Sync(fctx, p.Status())
	return rep, err
}

// tickDigester reads digests with the same code as `pool tick`.
type tickDigester struct {
	c   *sdkclient.Client
	cfg configs.Config
}

func (t tickDigester) Digest(ctx context.Context, n int) (report.Digest, error) {
	opt := report.TickOptionsFor(t.cfg.Policy(), t.cfg.StatusContext, false)
	return report.Tick(ctx, t.c, t.cfg.Owner, t.cfg.Name, n, opt)
}
