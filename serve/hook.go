package serve

import (
	"context"
	"fmt"
	"strings"

	"pool/configs"
	"pool/forgejo"
	"pool/forgejo/sdkclient"
	"pool/webhook"
)

// InstallHook registers the pool's webhook on the repository.
func InstallHook(ctx context.Context, cfg configs.Config) error {
	if cfg.HookURL == "" || cfg.WebhookSecret == "" {
		return &configs.Error{Key: "webhook.url", Reason: "hook install needs webhook.url (--hook-url) and webhook.secret"}
	}
	fc, err := sdkclient.New(ctx, cfg.ForgejoURL, cfg.Token, forgejo.Options{MaxBody: cfg.MaxBody})
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
