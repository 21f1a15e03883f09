package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	pageSize   = 50 // the forge's default cap on a page
	maxErrBody = 512
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

// Install registers a Gitea-type webhook on owner/repo that delivers JSON to
// hookURL signed with secret. It is idempotent: hooks already at hookURL are
// replaced by the new one. They are replaced rather than edited because the
// API neither shows a hook's secret nor, on Gitea 1.26, changes it on edit.
// The new hook is created before the old ones are deleted, so no event is
// lost meanwhile (one may arrive twice). The token goes in an Authorization
// header and never into an error. hc may be nil.
func Install(ctx context.Context, forgeURL, token, owner, repo, hookURL string, secret []byte, hc *http.Client) error {
	if err := install(ctx, newForge(forgeURL, token, owner, repo, hc), hookURL, secret); err != nil {
		return fmt.Errorf("webhook: install on %s/%s: %w", owner, repo, err)
	}
	return nil
}

func install(ctx context.Context, f *forge, target string, secret []byte) error {
	if len(secret) == 0 {
		return errors.New("empty secret")
	}
	if !utf8.Valid(secret) { // the forge keeps it as a string
		return errors.New("secret is not valid UTF-8")
	}
	old, err := f.hooksAt(ctx, target)
	if err != nil {
		return fmt.Errorf("list hooks: %w", err)
	}
	if err := f.createHook(ctx, target, secret); err != nil {
		return fmt.Errorf("create hook: %w", err)
	}
	for _, id := range old {
		if err := f.deleteHook(ctx, id); err != nil {
			return fmt.Errorf("delete replaced hook %d: %w", id, err)
		}
	}
	return nil
}

// forge is the little of the forge's API that Install needs.
type forge struct {
	repoAPI string // <forge>/api/v1/repos/<owner>/<repo>
	token   string
	hc      *http.Client
}

func newForge(forgeURL, token, owner, repo string, hc *http.Client) *forge {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &forge{
		repoAPI: strings.TrimRight(forgeURL, "/") + "/api/v1/repos/" +
			url.PathEscape(owner) + "/" + url.PathEscape(repo),
		token: token,
		hc:    hc,
	}
}

type hook struct {
	ID     int64             `json:"id"`
	Config map[string]string `json:"config"`
}

// hooksAt lists the IDs of the repository's hooks that deliver to target.
func (f *forge) hooksAt(ctx context.Context, target string) ([]int64, error) {
	var ids []int64
	for page := 1; ; page++ {
		var hooks []hook
		path := fmt.Sprintf("/hooks?page=%d&limit=%d", page, pageSize)
		if err := f.do(ctx, http.MethodGet, path, nil, &hooks); err != nil {
			return nil, err
		}
		if len(hooks) == 0 {
			return ids, nil
		}
		for _, h := range hooks {
			if h.Config["url"] == target {
				ids = append(ids, h.ID)
			}
		}
	}
}

func (f *forge) createHook(ctx context.Context, target string, secret []byte) error {
	body := map[string]any{
		"type": "gitea",
		"config": map[string]string{
			"url":          target,
			"content_type": "json",
			"secret":       string(secret),
		},
		"events": hookEvents(),
		"active": true,
	}
	return f.do(ctx, http.MethodPost, "/hooks", body, nil)
}

func (f *forge) deleteHook(ctx context.Context, id int64) error {
	return f.do(ctx, http.MethodDelete, fmt.Sprintf("/hooks/%d", id), nil, nil)
}

// do sends a JSON request to the repository API at path and decodes a 2xx
// answer into out, if not nil.
func (f *forge) do(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, f.repoAPI+path, r)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "token "+f.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	return decodeAnswer(resp, method, path, out)
}

func decodeAnswer(resp *http.Response, method, path string, out any) error {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrBody))
		return fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}
