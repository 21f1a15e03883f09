package webhook

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"pool/forgejo"
)

// hookEvents are the event groups Install subscribes to. On Gitea 1.26 (and
// Forgejo) "pull_request" alone enables every pull_request_* group; the others
// are named so the hook reads right in the forge's settings page. A PR comment
// is "pull_request_comment", a review "pull_request_review" (delivered as
// pull_request_review_approved, _rejected or _comment), a push to the head
// branch "pull_request_sync", and a commit status "status" (Gitea only).
func hookEvents() []string {
	return []string{
		"pull_request", "pull_request_sync", "pull_request_review",
		"pull_request_comment", "pull_request_label", "pull_request_review_request",
		"issue_comment", "status",
	}
}

// HookAPI is the forge's webhook API, as package forgejo speaks it.
type HookAPI interface {
	Hooks(ctx context.Context, owner, repo string) ([]forgejo.Hook, error)
	CreateHook(ctx context.Context, owner, repo string, h forgejo.NewHook) error
	DeleteHook(ctx context.Context, owner, repo string, id int64) error
}

// Install registers a Gitea-type webhook on owner/repo that delivers JSON to
// hookURL signed with secret. It is idempotent: hooks already at hookURL are
// replaced by the new one. They are replaced rather than edited because the
// API neither shows a hook's secret nor, on Gitea 1.26, changes it on edit.
// The new hook is created before the old ones are deleted, so no event is
// lost meanwhile (one may arrive twice; the handler ignores a delivery id it
// has seen).
func Install(ctx context.Context, api HookAPI, owner, repo, hookURL string, secret []byte) error {
	if err := install(ctx, api, owner, repo, hookURL, secret); err != nil {
		return fmt.Errorf("webhook: install on %s/%s: %w", owner, repo, err)
	}
	return nil
}

// InstallOrg is Install for an organisation: one hook that delivers the
// events of all its repositories, present and future.
func InstallOrg(ctx context.Context, api HookAPI, org, hookURL string, secret []byte) error {
	if err := install(ctx, api, org, "", hookURL, secret); err != nil {
		return fmt.Errorf("webhook: install on organisation %s: %w", org, err)
	}
	return nil
}

func install(ctx context.Context, api HookAPI, owner, repo, target string, secret []byte) error {
	if len(secret) == 0 {
		return errors.New("empty secret")
	}
	if !utf8.Valid(secret) { // the forge keeps it as a string
		return errors.New("secret is not valid UTF-8")
	}
	hooks, err := api.Hooks(ctx, owner, repo)
	if err != nil {
		return err
	}
	var old []int64
	for _, h := range hooks {
		if h.URL == target {
			old = append(old, h.ID)
		}
	}
	if err := api.CreateHook(ctx, owner, repo, forgejo.NewHook{URL: target, Secret: string(secret), Events: hookEvents()}); err != nil {
		return err
	}
	for _, id := range old {
		if err := api.DeleteHook(ctx, owner, repo, id); err != nil {
			return fmt.Errorf("replaced hook %d: %w", id, err)
		}
	}
	return nil
}
