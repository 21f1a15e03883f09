// Package sdkclient is the supervisor's forge client: package forgejo's
// plain-HTTP client with the calls it makes through the Forgejo SDK (the
// server's version at connect, who am i, the default branch, editing and
// deleting a comment). It is apart so that the reviewer's tool, which needs
// none of these, links no SDK.
//
// Because the SDK's context is client-wide, each SDK call builds a light SDK
// client of its own that shares the plain client's http.Client, so the SDK's
// answers have the same body cap and timeout.
package sdkclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	sdk "codeberg.org/mvdkleijn/forgejo-sdk/forgejo/v2"

	"pool/forge"
	"pool/forgejo"
)

// Client is a forgejo.Client with the SDK's calls.
type Client struct {
	*forgejo.Client
	token   string
	version string
}

// New checks the server's version with the SDK (at least 1.11), then
// connects as forgejo.New does. A rejected token is a permanent error.
func New(ctx context.Context, url, token string, opt forgejo.Options) (*Client, error) {
	c := &Client{token: token}
	opt.Check = c.checkVersion
	fc, err := forgejo.New(ctx, url, token, opt)
	if err != nil {
		return nil, err
	}
	c.Client = fc
	return c, nil
}

// checkVersion reads the server's version; the SDK refuses one older than
// 1.11, or one it cannot read.
func (c *Client) checkVersion(ctx context.Context, fc *forgejo.Client) error {
	probe, err := sdk.NewClient(fc.URL(), sdk.SetHTTPClient(fc.HTTPClient()), sdk.SetContext(ctx))
	if err != nil {
		return classify("connect", nil, err)
	}
	v, resp, err := probe.ServerVersion()
	if err != nil {
		return classify("server version", resp, err)
	}
	c.version = v
	if _, err := sdk.NewClient(fc.URL(), sdk.SetForgejoVersion(v)); err != nil {
		c.version = "" // unparsable version: tell the SDK to skip its version checks
	}
	return nil
}

// Version is the server's reported version.
func (c *Client) Version() string { return c.version }

// api returns an SDK client bound to ctx for one operation.
func (c *Client) api(ctx context.Context) *sdk.Client {
	cl, _ := sdk.NewClient(c.URL(), sdk.SetHTTPClient(c.HTTPClient()), sdk.SetToken(c.token),
		sdk.SetForgejoVersion(c.version), sdk.SetContext(ctx))
	return cl
}

// classify is forgejo.Classify for an SDK call's error and answer.
func classify(op string, resp *sdk.Response, err error) error {
	if resp == nil || resp.Response == nil {
		return forgejo.Classify(op, 0, nil, err)
	}
	return forgejo.Classify(op, resp.StatusCode, resp.Header, err)
}

// Me returns the login of the token's account.
func (c *Client) Me(ctx context.Context) (string, error) {
	const op = "who am i"
	u, resp, err := c.api(ctx).GetMyUserInfo()
	if err != nil {
		return "", classify(op, resp, err)
	}
	if u == nil || u.UserName == "" {
		return "", forgejo.Malformed(op, errors.New("no login"))
	}
	return u.UserName, nil
}

// DefaultBranch returns the repository's default branch.
func (c *Client) DefaultBranch(ctx context.Context, owner, repo string) (string, error) {
	op := "get repo " + owner + "/" + repo
	r, resp, err := c.api(ctx).GetRepo(owner, repo)
	if err != nil {
		return "", classify(op, resp, err)
	}
	if r == nil || r.DefaultBranch == "" {
		return "", forgejo.Malformed(op, errors.New("no default branch"))
	}
	return r.DefaultBranch, nil
}

// EditComment replaces a comment's body; the forge moves its update time.
func (c *Client) EditComment(ctx context.Context, owner, repo string, id int64, body string) (forge.Comment, error) {
	op := fmt.Sprintf("edit comment %d on %s/%s", id, owner, repo)
	cm, resp, err := c.api(ctx).EditIssueComment(owner, repo, id, sdk.EditIssueCommentOption{Body: body})
	if err != nil {
		return forge.Comment{}, classify(op, resp, err)
	}
	if cm == nil || cm.ID != id {
		return forge.Comment{}, forgejo.Malformed(op, errors.New("not the comment edited"))
	}
	out := forge.Comment{ID: cm.ID, Body: cm.Body, Created: cm.Created, Updated: cm.Updated}
	if cm.Poster != nil {
		out.Author = cm.Poster.UserName
	}
	return out, nil
}

// DeleteComment removes a comment; one already gone is not an error.
func (c *Client) DeleteComment(ctx context.Context, owner, repo string, id int64) error {
	resp, err := c.api(ctx).DeleteIssueComment(owner, repo, id)
	if err != nil && !(resp != nil && resp.StatusCode == http.StatusNotFound) {
		return classify(fmt.Sprintf("delete comment %d on %s/%s", id, owner, repo), resp, err)
	}
	return nil
}
