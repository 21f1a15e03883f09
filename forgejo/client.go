// Package forgejo knows the forge's API and speaks plain HTTP to it: reads
// (lists paged here, see page.go), reviews, comments, merges, statuses and
// hooks. Every call goes through one http.Client whose transport caps each
// answer's body (limits.max_body) and times the call out; every method takes
// a context. It links no SDK, so the reviewer's tool (pool-review), which
// needs only this, stays small; the supervisor's client (forgejo/sdkclient)
// adds the few calls it makes with the Forgejo SDK.
//
// The forge's answers are hostile data: a null entry, a missing field, a
// wrong type or truncated JSON is an error for the call, never a panic. Lists
// of PRs skip such an entry (it cannot be told which PR it was) and log it.
//
// The answers come back as package forge's plain types (PR, Review, Status,
// Protection, MergeResult...).
package forgejo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"pool/forge"
	"pool/internal/bounded"
	"pool/internal/redact"
	"pool/internal/retry"
)

// callTimeout bounds one call to the forge, its answer's body included.
const callTimeout = 60 * time.Second

// Options are how a Client reaches the forge.
type Options struct {
	// MaxBody caps every answer's body; 0 means bounded.DefaultMaxBody.
	MaxBody int64
	// Transport carries the calls; nil means http.DefaultTransport.
	// Benchmarks count requests here.
	Transport http.RoundTripper
	// Log receives warnings about unreadable list entries; nil discards.
	Log *slog.Logger
	// Check, when set, is New's first call to the forge, and its error
	// New's: the supervisor's client checks the server's version there
	// (package sdkclient).
	Check func(ctx context.Context, c *Client) error
}

// Client talks to one Forgejo (or Gitea) server with one token.
type Client struct {
	url      string
	token    string
	hc       *http.Client
	maxBody  int64
	pageSize int // the forge's max_response_items
	log      *slog.Logger

	mu      sync.Mutex
	skipped map[string]int // guarded by mu: unreadable entries last seen per list
}

// New returns a client after opt.Check, if any, passed. It reads the
// forge's page size once (GET /settings/api). A rejected token is a
// permanent error.
func New(ctx context.Context, url, token string, opt Options) (*Client, error) {
	if opt.MaxBody <= 0 {
		opt.MaxBody = bounded.DefaultMaxBody
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	c := &Client{url: strings.TrimRight(url, "/"), token: token, maxBody: opt.MaxBody,
		hc: bounded.Client(opt.Transport, opt.MaxBody, callTimeout), log: opt.Log, skipped: map[string]int{}}
	if opt.Check != nil {
		if err := opt.Check(ctx, c); err != nil {
			return nil, err
		}
	}
	c.pageSize = c.readPageSize(ctx)
	return c, nil
}

// URL is the server's base URL.
func (c *Client) URL() string { return c.url }

// HTTPClient is the http.Client every call goes through, with the body cap
// and the timeout: the SDK's calls share it.
func (c *Client) HTTPClient() *http.Client { return c.hc }

// PageSize is the number of entries the client asks for per page.
func (c *Client) PageSize() int { return c.pageSize }

// Error is a failed forge call: the operation, the HTTP status when there was
// one, and whether trying again later may help.
type Error struct {
	Op        string
	Status    int
	Retryable bool
	// RetryAfter is the wait a 429 or 503 asked for (Retry-After), or 0.
	RetryAfter time.Duration
	Err        error
}

// maxErrorText bounds what an error quotes of the forge's answer.
const maxErrorText = 500

// Error never shows a URL's user info, and quotes at most 500 bytes of
// what the forge said.
func (e *Error) Error() string {
	msg := redact.Clip(e.Err.Error(), maxErrorText)
	if e.Status != 0 {
		return redact.Text(fmt.Sprintf("forgejo: %s: HTTP %d: %s", e.Op, e.Status, msg))
	}
	return redact.Text(fmt.Sprintf("forgejo: %s: %s", e.Op, msg))
}

func (e *Error) Unwrap() error { return e.Err }

// maxRetryAfter bounds the wait a Retry-After header may ask for.
const maxRetryAfter = time.Hour

// RetryAfter is the wait the forge, or a proxy in front of it, asked for
// with a 429 or 503 (its Retry-After header), or 0.
func RetryAfter(err error) time.Duration {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.RetryAfter
	}
	return 0
}

// retryAfter reads the Retry-After header of a 429 or 503 answer: seconds
// or an HTTP date, at most maxRetryAfter; 0 when absent or unreadable.
func retryAfter(status int, hdr http.Header, now time.Time) time.Duration {
	if status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
		return 0
	}
	v := strings.TrimSpace(hdr.Get("Retry-After"))
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return min(time.Duration(min(secs, int64(maxRetryAfter/time.Second)))*time.Second, maxRetryAfter)
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return min(at.Sub(now), maxRetryAfter)
	}
	return 0
}

// ErrUnauthorized means the forge rejected the token: fatal for the pool.
var ErrUnauthorized = errors.New("token rejected")

// ErrNotFound means the object does not exist (or is hidden from the token).
var ErrNotFound = errors.New("not found")

// RetryLater says whether trying the call again later may help (retry.Later).
func (e *Error) RetryLater() bool { return e.Retryable }

// IsRetryable reports whether err is worth retrying later: the one rule,
// retry.Later (an error that is no *Error or agent error is not).
func IsRetryable(err error) bool { return retry.Later(err) }

// IsTooLarge reports whether err is an answer over the body cap.
func IsTooLarge(err error) bool {
	var tl *bounded.TooLargeError
	return errors.As(err, &tl)
}

// Classify is the error of the call op that failed with err, having had
// an answer of status (0 for none) with header: a rejected token or a
// missing object, worth retrying or not, and the wait a 429 or 503 asked
// for. The SDK's calls (package sdkclient) are classified here too.
func Classify(op string, status int, header http.Header, err error) error {
	return withRetryAfter(newError(op, status, err), retryAfter(status, header, time.Now()))
}

// withRetryAfter records on a forge error the wait the answer asked for.
func withRetryAfter(err error, wait time.Duration) error {
	var fe *Error
	if wait > 0 && errors.As(err, &fe) {
		fe.RetryAfter = wait
	}
	return err
}

func newError(op string, status int, err error) error {
	switch {
	case status == http.StatusUnauthorized:
		err = fmt.Errorf("%w: %v", ErrUnauthorized, err)
	case status == http.StatusNotFound:
		err = fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	retry := status == 0 || status == http.StatusTooManyRequests || status >= 500
	if errors.Is(err, context.Canceled) || IsTooLarge(err) {
		retry = false
	}
	return &Error{Op: op, Status: status, Retryable: retry, Err: err}
}

// Malformed is an answer that could be read but not used: a null, a
// missing field, a wrong type. The forge may answer better next time.
func Malformed(op string, err error) error {
	return &Error{Op: op, Retryable: true, Err: fmt.Errorf("malformed answer: %w", err)}
}

// Permission returns an account's permission on the repository (none,
// read, write, admin or owner). The forge answers only an admin of the
// repository or the account itself; others get a 403 error.
func (c *Client) Permission(ctx context.Context, owner, repo, account string) (string, error) {
	op := fmt.Sprintf("read the permission of %s on %s/%s", account, owner, repo)
	var p struct {
		Permission string `json:"permission"`
	}
	if err := c.getJSON(ctx, op, fmt.Sprintf("%s/collaborators/%s/permission", repoPath(owner, repo), url.PathEscape(account)), &p); err != nil {
		return "", err
	}
	if p.Permission == "" {
		return "", Malformed(op, errors.New("no permission"))
	}
	return p.Permission, nil
}

// IsCollaborator reports whether account is a collaborator of the
// repository, or a member of the organisation that owns it (the forge
// answers 204 for yes and 404 for no; to a user's repository, whose owner
// is no organisation, 404 too).
func (c *Client) IsCollaborator(ctx context.Context, owner, repo, account string) (bool, error) {
	if strings.EqualFold(owner, account) {
		return true, nil
	}
	for _, q := range []struct{ op, path string }{
		{fmt.Sprintf("check %s is a collaborator of %s/%s", account, owner, repo),
			fmt.Sprintf("%s/collaborators/%s", repoPath(owner, repo), url.PathEscape(account))},
		{fmt.Sprintf("check %s is a member of %s", account, owner),
			fmt.Sprintf("/orgs/%s/members/%s", url.PathEscape(owner), url.PathEscape(account))},
	} {
		status, body, err := c.do(ctx, q.op, http.MethodGet, q.path, nil)
		switch {
		case err != nil:
			return false, err
		case status == http.StatusNoContent:
			return true, nil
		case status != http.StatusNotFound:
			return false, newError(q.op, status, fmt.Errorf("%s", snippet(body)))
		}
	}
	return false, nil
}

// OpenPRs lists every open PR of the repository (all pages). An entry the
// forge could not render (null, or without number, head or base) is left
// out and logged.
func (c *Client) OpenPRs(ctx context.Context, owner, repo string) ([]forge.PR, error) {
	l := listing{op: fmt.Sprintf("list open PRs of %s/%s", owner, repo), path: repoPath(owner, repo) + "/pulls?state=open"}
	var out []forge.PR
	var bad []error
	err := c.eachPage(ctx, l, func(_ int, body []byte, _ http.Header) (int, error) {
		prs, skipped, n, err := decodeEntries(body, (*apiPR).check)
		for _, p := range prs {
			out = append(out, p.detail().PR)
		}
		bad = append(bad, skipped...)
		return n, err
	})
	if err != nil {
		return nil, err
	}
	c.noteSkipped(l.op, bad)
	return out, nil
}

// PR reads one pull request.
func (c *Client) PR(ctx context.Context, owner, repo string, n int) (forge.PR, error) {
	d, err := c.PRDetail(ctx, owner, repo, n)
	return d.PR, err
}

// Comments lists the comments of an issue or PR. The forge answers the
// list in one piece (it does not page it); when that answer is over the
// body cap (outsiders wrote a lot), the comments are read in pages from the
// timeline instead, keeping the newest that fit (timelineComments).
func (c *Client) Comments(ctx context.Context, owner, repo string, n int) ([]forge.Comment, error) {
	op := fmt.Sprintf("list comments of %s/%s#%d", owner, repo, n)
	var batch []*apiComment
	err := c.getJSON(ctx, op, fmt.Sprintf("%s/issues/%d/comments", repoPath(owner, repo), n), &batch)
	if IsTooLarge(err) {
		return c.timelineComments(ctx, owner, repo, n)
	}
	if err != nil {
		return nil, err
	}
	out := make([]forge.Comment, 0, len(batch))
	for i, cm := range batch {
		if err := cm.check(); err != nil {
			return nil, Malformed(op, fmt.Errorf("entry %d: %w", i, err))
		}
		out = append(out, cm.comment())
	}
	return out, nil
}

// PostComment adds a comment to an issue or PR. An answer that cannot be
// read is an error not worth retrying: the comment may have been made.
func (c *Client) PostComment(ctx context.Context, owner, repo string, n int, body string) (forge.Comment, error) {
	op := fmt.Sprintf("comment on %s/%s#%d", owner, repo, n)
	path := fmt.Sprintf("%s/issues/%d/comments", repoPath(owner, repo), n)
	status, answer, err := c.do(ctx, op, http.MethodPost, path, map[string]string{"body": body})
	if err != nil {
		return forge.Comment{}, err
	}
	if status/100 != 2 {
		return forge.Comment{}, newError(op, status, errors.New(snippet(answer)))
	}
	var cm *apiComment
	if err := json.Unmarshal(answer, &cm); err != nil {
		return forge.Comment{}, newError(op, status, fmt.Errorf("malformed answer: %w", err))
	}
	if cm == nil || cm.ID <= 0 {
		return forge.Comment{}, Malformed(op, errors.New("no comment id"))
	}
	return cm.comment(), nil
}

// Reviews lists a PR's reviews (all pages).
func (c *Client) Reviews(ctx context.Context, owner, repo string, n int) ([]forge.Review, error) {
	details, err := c.ReviewDetails(ctx, owner, repo, n)
	if err != nil {
		return nil, err
	}
	out := make([]forge.Review, len(details))
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
// second than that is in the answer for good. An unreadable entry is left
// out and logged; the periodic full listing catches up with it.
func (c *Client) ChangedPRs(ctx context.Context, owner, repo string, since time.Time) ([]PRChange, time.Time, error) {
	l := listing{
		op:   fmt.Sprintf("list PRs of %s/%s changed since %s", owner, repo, since.Format(time.RFC3339)),
		path: repoPath(owner, repo) + "/issues?type=pulls&state=all&since=" + queryTime(since),
	}
	var out []PRChange
	var served time.Time
	var bad []error
	err := c.eachPage(ctx, l, func(page int, body []byte, hdr http.Header) (int, error) {
		if page == 1 {
			served, _ = http.ParseTime(hdr.Get("Date"))
		}
		issues, skipped, n, err := decodeEntries(body, (*apiIssue).check)
		for _, is := range issues {
			out = append(out, PRChange{Number: is.Number, State: is.State, Updated: is.Updated})
		}
		bad = append(bad, skipped...)
		return n, err
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	c.noteSkipped(fmt.Sprintf("list PRs of %s/%s changed", owner, repo), bad)
	return out, served, nil
}

// noteSkipped logs the entries a list left out: a warning when their count
// changes, so a forge that keeps failing on one PR is reported once, not
// every cycle.
func (c *Client) noteSkipped(list string, bad []error) {
	c.mu.Lock()
	last := c.skipped[list]
	c.skipped[list] = len(bad)
	c.mu.Unlock()
	switch {
	case len(bad) > 0 && len(bad) != last:
		c.log.Warn("forge list has unreadable entries; skipped", "list", list, "skipped", len(bad), "first", redact.Clip(bad[0].Error(), 200))
	case len(bad) == 0 && last > 0:
		c.log.Info("forge list readable again", "list", list)
	}
}

// IsNotFound reports whether err means the object does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
