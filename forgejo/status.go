package forgejo

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"pool/forge"
)

// NewStatus is a commit status to report.
type NewStatus struct {
	Context     string
	State       string // pending, success, error, failure, warning
	Description string
	TargetURL   string
}

// PostStatus reports a commit status on sha. The forge keeps every report;
// the newest per context is the one that counts.
func (c *Client) PostStatus(ctx context.Context, owner, repo, sha string, s NewStatus) error {
	op := fmt.Sprintf("set status %q on %s/%s@%s", s.Context, owner, repo, forge.Short(sha))
	body := map[string]string{"context": s.Context, "state": s.State, "description": s.Description}
	if s.TargetURL != "" {
		body["target_url"] = s.TargetURL
	}
	status, b, err := c.do(ctx, op, http.MethodPost, fmt.Sprintf("%s/statuses/%s", repoPath(owner, repo), url.PathEscape(sha)), body)
	if err != nil {
		return err
	}
	if status != http.StatusCreated && status != http.StatusOK {
		return newError(op, status, fmt.Errorf("%s", snippet(b)))
	}
	return nil
}

// WithoutContext drops the statuses reported under context (compared
// case-insensitively): the pool's own status is no check of the PR.
func WithoutContext(statuses []forge.Status, context string) []forge.Status {
	if context == "" {
		return statuses
	}
	out := make([]forge.Status, 0, len(statuses))
	for _, s := range statuses {
		if !strings.EqualFold(s.Context, context) {
			out = append(out, s)
		}
	}
	return out
}
