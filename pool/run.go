package pool

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"pool/agent"
	"pool/clone"
	"pool/configs"
	"pool/forgejo"
	"pool/lifecycle"
	"pool/report"
	"pool/webhook"
)

// Run wires the real forge, agent server, state store and clone, supervises
// until ctx ends or the pool goes idle, and cleans up on every way out. The
// clone is removed and the store closed before it returns.
func Run(ctx context.Context, cfg configs.Config, log *slog.Logger) (Report, error) {
	hc := &http.Client{Timeout: 60 * time.Second}
	fc, err := forgejo.New(ctx, cfg.ForgejoURL, cfg.Token, hc)
	if err != nil {
		return Report{}, fmt.Errorf("pool: connect to the forge: %w", err)
	}
	store, err := OpenStore(cfg.StateDir, cfg.Owner, cfg.Name)
	if err != nil {
		return Report{}, err
	}
	defer store.Close()
	d := Deps{Forge: fc, Agent: agent.New(cfg.AgentURL, cfg.AgentPassword, hc), Store: store, Log: log,
		Digests: tickDigester{c: fc, cfg: cfg}}
	p, err := New(ctx, cfg, d)
	if err != nil {
		return Report{}, err
	}
	cl, err := clone.New(ctx, clone.Options{URL: fmt.Sprintf("%s/%s/%s.git", cfg.ForgejoURL, cfg.Owner, cfg.Name),
		Token: cfg.Token, Branch: p.base, GitName: cfg.GitName, GitEmail: cfg.GitEmail})
	if err != nil {
		return Report{}, fmt.Errorf("pool: %w", err)
	}
	defer func() {
		if err := cl.Remove(); err != nil {
			log.Error("removing the clone failed", "dir", cl.Dir, "err", err)
		}
	}()
	log.Info("clone ready", "dir", cl.Dir)
	p.clone = cl
	if cfg.Listen != "" {
		go serveWebhooks(ctx, cfg, p, log)
	}
	return p.Run(ctx)
}

// tickDigester reads digests with the same code as `pool tick`.
type tickDigester struct {
	c   *forgejo.Client
	cfg configs.Config
}

func (t tickDigester) Digest(ctx context.Context, n int) (report.Digest, error) {
	rule := lifecycle.ReviewRule{Reviewers: t.cfg.Reviewers, AllowUnofficial: t.cfg.AllowUnofficial}
	return report.Tick(ctx, t.c, t.cfg.Owner, t.cfg.Name, n, report.TickOptions{Rule: rule})
}

// serveWebhooks wakes the pool on verified forge deliveries until ctx ends.
// If it cannot serve, polling carries on alone.
func serveWebhooks(ctx context.Context, cfg configs.Config, p *Pool, log *slog.Logger) {
	log = log.With("component", "webhook")
	h := webhook.Handler([]byte(cfg.WebhookSecret), cfg.Owner, cfg.Name, log, p.Wake)
	log.Info("serving forge webhooks", "addr", cfg.Listen)
	if err := webhook.Serve(ctx, cfg.Listen, h, log); err != nil {
		log.Error("webhook receiver stopped; polling continues", "err", err)
	}
}

// InstallHook registers the pool's webhook on the repository.
func InstallHook(ctx context.Context, cfg configs.Config) error {
	if cfg.HookURL == "" || cfg.WebhookSecret == "" {
		return &configs.Error{Key: "webhook.url", Reason: "hook install needs webhook.url (--hook-url) and webhook.secret"}
	}
	return webhook.Install(ctx, cfg.ForgejoURL, cfg.Token, cfg.Owner, cfg.Name, cfg.HookURL,
		[]byte(cfg.WebhookSecret), &http.Client{Timeout: 60 * time.Second})
}
