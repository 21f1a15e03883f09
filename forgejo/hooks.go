package forgejo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// Hook is a repository webhook: its id and where it delivers.
type Hook struct {
	ID  int64
	URL string
}

type apiHook struct {
	ID     int64             `json:"id"`
	Config map[string]string `json:"config"`
}

func (h *apiHook) check() error {
	if h.ID <= 0 {
		return errors.New("hook without an id")
	}
	return nil
}

// hooksPath is where the webhooks of owner/repo live, or, with repo "",
// those of the organisation owner.
func hooksPath(owner, repo string) string {
	if repo == "" {
		return "/orgs/" + url.PathEscape(owner) + "/hooks"
	}
	return repoPath(owner, repo) + "/hooks"
}

// hookTarget names owner/repo, or the organisation owner, in errors.
func hookTarget(owner, repo string) string {
	if repo == "" {
		return "organisation " + owner
	}
	return owner + "/" + repo
}

// Hooks lists the repository's webhooks (all pages), or with repo "" the
// organisation's. The token's account must administer the repository or
// own the organisation.
func (c *Client) Hooks(ctx context.Context, owner, repo string) ([]Hook, error) {
	l := listing{op: "list hooks of " + hookTarget(owner, repo), path: hooksPath(owner, repo)}
	var out []Hook
	err := c.eachPage(ctx, l, func(_ int, body []byte, _ http.Header) (int, error) {
		batch, n, err := strictEntries(body, (*apiHook).check)
		for _, h := range batch {
			out = append(out, Hook{ID: h.ID, URL: h.Config["url"]})
		}
		return n, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// NewHook is a webhook to create: a Gitea-type hook that delivers JSON to
// URL, signed with Secret, for Events.
type NewHook struct {
	URL    string
	Secret string
	Events []string
}

// CreateHook adds an active webhook to the repository (with repo "", to the
// organisation: it delivers for all its repositories). The secret goes in
// the request body only, never into an error.
func (c *Client) CreateHook(ctx context.Context, owner, repo string, h NewHook) error {
	op := "create hook on " + hookTarget(owner, repo)
	body := map[string]any{
		"type":   "gitea",
		"config": map[string]string{"url": h.URL, "content_type": "json", "secret": h.Secret},
		"events": h.Events,
		"active": true,
	}
	status, b, err := c.do(ctx, op, http.MethodPost, hooksPath(owner, repo), body)
	if err != nil {
		return err
	}
	if status != http.StatusCreated && status != http.StatusOK {
		return newError(op, status, fmt.Errorf("%s", snippet(b)))
	}
	return nil
}

// DeleteHook removes a webhook (with repo "", the organisation's); one
// already gone is not an error.
func (c *Client) DeleteHook(ctx context.Context, owner, repo string, id int64) error {
	op := fmt.Sprintf("delete hook %d of %s", id, hookTarget(owner, repo))
	status, b, err := c.do(ctx, op, http.MethodDelete, fmt.Sprintf("%s/%d", hooksPath(owner, repo), id), nil)
	if err != nil {
		return err
	}
	if status >= 300 && status != http.StatusNotFound {
		return newError(op, status, fmt.Errorf("%s", snippet(b)))
	}
	return nil
}
