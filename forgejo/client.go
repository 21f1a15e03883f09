// Package forgejo is the only package that knows the forge's API: the Forgejo
// SDK for plain reads and writes, and direct HTTP where the SDK loses the
// answer (merge) or does not page (statuses). Every method takes a context;
// because the SDK's context is client-wide, each call builds a light SDK
// client of its own that shares one http.Client.
package forgejo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "codeberg.org/mvdkleijn/forgejo-sdk/forgejo/v2"
)

// pageSize is the forge's hard cap on items per page.
const pageSize = 50

// Client talks to one Forgejo (or Gitea) server with one token.
type Client struct {
	url     string
	token   string
	version string
	hc      *http.Client
}

// New checks the server and the token and returns a client. A rejected token
// is a permanent error.
func New(ctx context.Context, url, token string, hc *http.Client) (*Client, error) {
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	c := &Client{url: strings.TrimRight(url, "/"), token: token, hc: hc}
	probe, err := sdk.NewClient(c.url, sdk.SetHTTPClient(hc), sdk.SetContext(ctx))
	if err != nil {
		return nil, classify("connect", nil, err)
	}
	v, resp, err := probe.ServerVersion()
	if err != nil {
		return nil, classify("server version", resp, err)
	}
	c.version = v
	if _, err := sdk.NewClient(c.url, sdk.SetForgejoVersion(v)); err != nil {
		c.version = "" // unparsable version: tell the SDK to skip its version checks
	}
	return c, nil
}

// URL is the server's base URL.
func (c *Client) URL() string { return c.url }

// Version is the server's reported version.
func (c *Client) Version() string { return c.version }

// api returns an SDK client bound to ctx for one operation.
func (c *Client) api(ctx context.Context) *sdk.Client {
	cl, _ := sdk.NewClient(c.url, sdk.SetHTTPClient(c.hc), sdk.SetToken(c.token),
		sdk.SetForgejoVersion(c.version), sdk.SetContext(ctx))
	return cl
}

// Error is a failed forge call: the operation, the HTTP status when there was
// one, and whether trying again later may help.
type Error struct {
	Op        string
	Status    int
	Retryable bool
	Err       error
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("forgejo: %s: HTTP %d: %v", e.Op, e.Status, e.Err)
	}
	return fmt.Sprintf("forgejo: %s: %v", e.Op, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrUnauthorized means the forge rejected the token: fatal for the pool.
var ErrUnauthorized = errors.New("token rejected")

// ErrNotFound means the object does not exist (or is hidden from the token).
var ErrNotFound = errors.New("not found")

// IsRetryable reports whether err is worth retrying later.
func IsRetryable(err error) bool {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Retryable
	}
	return !errors.Is(err, context.Canceled)
}

func classify(op string, resp *sdk.Response, err error) error {
	if err == nil {
		return nil
	}
	status := 0
	if resp != nil && resp.Response != nil {
		status = resp.StatusCode
	}
	return newError(op, status, err)
}

func newError(op string, status int, err error) error {
	switch {
	case status == http.StatusUnauthorized:
		err = fmt.Errorf("%w: %v", ErrUnauthorized, err)
	case status == http.StatusNotFound:
		err = fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	// A 2xx with an error is an answer that broke while it was read (a
	// truncated body): as transient as a broken connection.
	retry := status == 0 || status/100 == 2 || status == http.StatusTooManyRequests || status >= 500
	if errors.Is(err, context.Canceled) {
		retry = false
	}
	return &Error{Op: op, Status: status, Retryable: retry, Err: err}
}

// Me returns the login of the token's account.
func (c *Client) Me(ctx context.Context) (string, error) {
	u, resp, err := c.api(ctx).GetMyUserInfo()
	if err != nil {
		return "", classify("who am i", resp, err)
	}
	return u.UserName, nil
}

// DefaultBranch returns the repository's default branch.
func (c *Client) DefaultBranch(ctx context.Context, owner, repo string) (string, error) {
	r, resp, err := c.api(ctx).GetRepo(owner, repo)
	if err != nil {
		return "", classify("get repo "+owner+"/"+repo, resp, err)
	}
	return r.DefaultBranch, nil
}

// OpenPRs lists every open PR of the repository (all pages).
func (c *Client) OpenPRs(ctx context.Context, owner, repo string) ([]PR, error) {
	api := c.api(ctx)
	var out []PR
	for page := 1; ; page++ {
		prs, resp, err := api.ListRepoPullRequests(owner, repo, sdk.ListPullRequestsOptions{
			ListOptions: sdk.ListOptions{Page: page, PageSize: pageSize},
			State:       sdk.StateOpen,
		})
		if err != nil {
			return nil, classify(fmt.Sprintf("list open PRs of %s/%s", owner, repo), resp, err)
		}
		out = append(out, toPRs(prs)...)
		if len(prs) < pageSize || resp == nil || resp.NextPage == 0 {
			return out, nil
		}
	}
}

// PR reads one pull request.
func (c *Client) PR(ctx context.Context, owner, repo string, n int) (PR, error) {
	p, resp, err := c.api(ctx).GetPullRequest(owner, repo, int64(n))
	if err != nil {
		return PR{}, classify(fmt.Sprintf("get %s/%s#%d", owner, repo, n), resp, err)
	}
	return toPR(p), nil
}

func toPR(p *sdk.PullRequest) PR {
	pr := PR{Number: int(p.Index), Title: p.Title, Body: p.Body, State: string(p.State),
		Merged: p.HasMerged, Mergeable: p.Mergeable, URL: p.HTMLURL, MergeBase: p.MergeBase}
	if p.Poster != nil {
		pr.Author = p.Poster.UserName
	}
	if p.Head != nil {
		pr.HeadSHA, pr.HeadRef = p.Head.Sha, p.Head.Ref
	}
	if p.Base != nil {
		pr.BaseRef, pr.BaseSHA = p.Base.Ref, p.Base.Sha
	}
	if p.Updated != nil {
		pr.Updated = *p.Updated
	}
	for _, l := range p.Labels {
		if l != nil {
			pr.Labels = append(pr.Labels, l.Name)
		}
	}
	return pr
}

// Comments lists the comments of an issue or PR.
func (c *Client) Comments(ctx context.Context, owner, repo string, n int) ([]Comment, error) {
	op := fmt.Sprintf("list comments of %s/%s#%d", owner, repo, n)
	cs, resp, err := c.api(ctx).ListIssueComments(owner, repo, int64(n), sdk.ListIssueCommentOptions{})
	if err != nil {
		return nil, classify(op, resp, err)
	}
	out, err := toComments(cs)
	if err != nil {
		return nil, malformed(op, err)
	}
	return out, nil
}

func toComment(c *sdk.Comment) Comment {
	out := Comment{ID: c.ID, Body: c.Body, Created: c.Created, Updated: c.Updated}
	if c.Poster != nil {
		out.Author = c.Poster.UserName
	}
	return out
}

// PostComment adds a comment to an issue or PR.
func (c *Client) PostComment(ctx context.Context, owner, repo string, n int, body string) (Comment, error) {
	cm, resp, err := c.api(ctx).CreateIssueComment(owner, repo, int64(n), sdk.CreateIssueCommentOption{Body: body})
	if err != nil {
		return Comment{}, classify(fmt.Sprintf("comment on %s/%s#%d", owner, repo, n), resp, err)
	}
	return toComment(cm), nil
}

// DeleteComment removes a comment; one already gone is not an error.
func (c *Client) DeleteComment(ctx context.Context, owner, repo string, id int64) error {
	resp, err := c.api(ctx).DeleteIssueComment(owner, repo, id)
	if err != nil && !(resp != nil && resp.StatusCode == http.StatusNotFound) {
		return classify(fmt.Sprintf("delete comment %d on %s/%s", id, owner, repo), resp, err)
	}
	return nil
}

// Reviews lists a PR's reviews (all pages).
func (c *Client) Reviews(ctx context.Context, owner, repo string, n int) ([]Review, error) {
	details, err := c.ReviewDetails(ctx, owner, repo, n)
	if err != nil {
		return nil, err
	}
	out := make([]Review, len(details))
	for i, d := range details {
		out[i] = d.Review
	}
	return out, nil
}

// PRChange is a PR that changed since some moment: its number, state and
// update time, as the issues endpoint reports them.
type PRChange struct {
	Number  int
	State   string
	Updated time.Time
}

// ChangedPRs lists the PRs, open or closed, updated at or after since (all
// pages). It is the cheap delta a quiet cycle asks for: one request when
// nothing changed. It also returns the forge's clock at the answer (its Date
// header, whole seconds; zero when absent): an update stamped in an earlier
// second than that is in the answer for good.
func (c *Client) ChangedPRs(ctx context.Context, owner, repo string, since time.Time) ([]PRChange, time.Time, error) {
	api := c.api(ctx)
	var out []PRChange
	var served time.Time
	op := fmt.Sprintf("list PRs of %s/%s changed since %s", owner, repo, since.Format(time.RFC3339))
	for page := 1; ; page++ {
		issues, resp, err := api.ListRepoIssues(owner, repo, sdk.ListIssueOption{
			ListOptions: sdk.ListOptions{Page: page, PageSize: pageSize},
			State:       sdk.StateAll, Type: sdk.IssueTypePull, Since: since,
		})
		if err != nil {
			return nil, time.Time{}, classify(op, resp, err)
		}
		if page == 1 && resp != nil && resp.Response != nil {
			served, _ = http.ParseTime(resp.Header.Get("Date"))
		}
		changes, err := toChanges(issues)
		if err != nil {
			return nil, time.Time{}, malformed(op, err)
		}
		out = append(out, changes...)
		if len(issues) < pageSize {
			return out, served, nil
		}
	}
}

// IsNotFound reports whether err means the object does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
