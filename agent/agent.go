// Package agent is the pool's client for the OpenCode agent server (the 1.x
// HTTP API of `opencode serve`). It is the only package that knows that API.
//
// # A directory per session
//
// OpenCode 1.x serves one "instance" per directory: every route takes a
// `directory` query parameter (or an x-opencode-directory header), and
// without one the server uses the directory it was started in. A session
// created with POST /session?directory=D belongs to D's instance and works
// there: its tools run with D as their working directory (checked on
// opencode-ai 1.18.33: a bash call of `pwd; git rev-parse HEAD` in a session
// created in a git work tree printed that work tree and its HEAD). What that
// means for the other routes, as checked on the same server:
//
//   - GET /session/status and GET /permission answer for one directory's
//     instance only, so Statuses and Permissions take the directory.
//   - GET /session lists one directory's sessions; GET /experimental/session
//     lists every directory's, and Sessions uses it.
//   - GET /event streams one directory's events; GET /global/event streams
//     all of them, each wrapped with its directory, and Events uses it.
//   - prompt_async, messages, abort and delete find the session by its id,
//     whatever directory the request names.
//   - The instance loads its config for D, not for the server's own
//     directory: the reviewer agent must be in the server's global config
//     (or OPENCODE_CONFIG). Run the server with
//     OPENCODE_DISABLE_PROJECT_CONFIG=1, or a PR's opencode.json,
//     .opencode/ (agents, plugins) and AGENTS.md configure the reviewer
//     that reviews it.
//   - A directory that does not exist is accepted and silently treated as
//     a project-less one. An instance stays in the server's memory until
//     POST /instance/dispose?directory=D (Dispose).
package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"pool/internal/bounded"
)

// basicAuthUser is the user name the server expects with its password.
const basicAuthUser = "opencode"

// Client talks to one agent server. It is safe for concurrent use.
type Client struct {
	base     string
	password string
	hc       *http.Client // every call but the event stream: capped and timed out
	create   *http.Client // CreateSession's: hc with createTimeout
	stream   *http.Client // the event stream: no timeout, its lines bounded
	maxBody  int64
	log      *slog.Logger // nil: no logging; only Events logs
}

// callTimeout bounds one call, its answer's body included. The event stream
// has its silence watchdog instead.
const callTimeout = 30 * time.Second

// createTimeout bounds creating a session. The first call for a directory
// boots the server's instance for it inside the call (its config, agents,
// and a look at the git repository there) before it answers: under a second
// on an idle machine, but on a loaded one-core machine it ran past
// callTimeout, and a pool that gave up backed off and created the session
// again, loading the server further. A create that still fails is retried
// like any other; a session it may have made is found by its directory and
// deleted (sessions.Sweep).
const createTimeout = 2 * time.Minute

// Options are how a Client reaches the server.
type Options struct {
	// MaxBody caps every answer's body, and each event of the stream; 0
	// means bounded.DefaultMaxBody.
	MaxBody int64
	// Transport carries the calls; nil means http.DefaultTransport.
	Transport http.RoundTripper
}

// New returns a client for the server at baseURL. A non-empty password is
// sent as basic auth (user "opencode"). Every call times out after 30 s
// (creating a session after two minutes: createTimeout) and reads at most
// opt.MaxBody of the answer.
func New(baseURL, password string, opt Options) *Client {
	if opt.MaxBody <= 0 {
		opt.MaxBody = bounded.DefaultMaxBody
	}
	base := opt.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), password: password, maxBody: opt.MaxBody,
		hc: bounded.Client(base, opt.MaxBody, callTimeout), create: bounded.Client(base, opt.MaxBody, createTimeout),
		stream: &http.Client{Transport: base}}
}

// WithLogger returns a copy of c that logs to log. Only Events logs, about
// its stream breaking and reconnecting.
func (c *Client) WithLogger(log *slog.Logger) *Client {
	cc := *c
	cc.log = log
	return &cc
}

// Session is an agent session. Directory is where it works; "" when the
// listing did not say.
type Session struct {
	ID, Title        string
	Directory        string
	Created, Updated time.Time
}

// Status is a busy session's state: Type "busy", or "retry" while the server
// waits to call the model again after a failure (Attempt counts them,
// Message says why, Next is when). Idle sessions have no status.
type Status struct {
	Type    string
	Attempt int
	Message string
	Next    time.Time
}

// Permission is a pending permission ask; its session waits until someone
// answers it.
type Permission struct {
	ID, SessionID string
	Type          string   // the permission asked for, e.g. "bash"
	Patterns      []string // e.g. the command
}

// CreateSession creates a session that works in dir ("" for the server's
// own directory). Giving a title also keeps the server from asking the model
// to invent one.
func (c *Client) CreateSession(ctx context.Context, title, dir string) (Session, error) {
	const op = "create session"
	var s *sessionJSON
	if err := c.doOn(ctx, c.create, op, http.MethodPost, inDir("/session", dir), map[string]string{"title": title}, &s); err != nil {
		return Session{}, err
	}
	if s == nil || s.ID == "" {
		return Session{}, malformed(op, errors.New("no session id"))
	}
	return s.session(), nil
}

// PromptAsync sends text to the session as a user message, for agentName
// ("" for the server's default agent), and returns once the server accepted
// it. The server does not check agentName: a prompt for an agent it does not
// know is accepted and never runs (see Agents).
func (c *Client) PromptAsync(ctx context.Context, sessionID, agentName, text string) error {
	op := "prompt " + sessionID
	path, err := sessionPath(op, sessionID, "/prompt_async")
	if err != nil {
		return err
	}
	body := promptJSON{Agent: agentName, Parts: []textPartJSON{{Type: "text", Text: text}}}
	return c.do(ctx, op, http.MethodPost, path, body, nil)
}

// Statuses returns the status of every session working in dir ("" for the
// server's own directory) that is not idle. A session is absent both when it
// finished and in the second or so between an accepted prompt and its first
// busy, so absence alone does not mean done; see Finished.
func (c *Client) Statuses(ctx context.Context, dir string) (map[string]Status, error) {
	const op = "statuses"
	var raw map[string]*statusJSON
	if err := c.do(ctx, op, http.MethodGet, inDir("/session/status", dir), nil, &raw); err != nil {
		return nil, err
	}
	out := make(map[string]Status, len(raw))
	for id, s := range raw {
		if s == nil || s.Type == "" {
			return nil, malformed(op, fmt.Errorf("session %q has no status", clip(id, 64)))
		}
		out[id] = s.status()
	}
	return out, nil
}

// Messages returns the session's messages, oldest first.
func (c *Client) Messages(ctx context.Context, sessionID string) ([]Message, error) {
	op := "messages " + sessionID
	path, err := sessionPath(op, sessionID, "/message")
	if err != nil {
		return nil, err
	}
	var raw []*messageJSON
	if err := c.do(ctx, op, http.MethodGet, path, nil, &raw); err != nil {
		return nil, err
	}
	msgs := make([]Message, len(raw))
	for i, m := range raw {
		if m == nil || m.Info.Role == "" {
			return nil, malformed(op, fmt.Errorf("message %d is null or has no role", i))
		}
		msgs[i] = m.message()
	}
	return msgs, nil
}

// sessionsLimit is the most sessions Sessions asks for. Without a limit the
// server lists only the 100 most recently updated.
const sessionsLimit = 100000

// Sessions returns the sessions the server keeps in every directory, most
// recently updated first, child sessions included (archived ones are not).
func (c *Client) Sessions(ctx context.Context) ([]Session, error) {
	const op = "sessions"
	var raw []*sessionJSON
	path := fmt.Sprintf("/experimental/session?limit=%d", sessionsLimit)
	if err := c.do(ctx, op, http.MethodGet, path, nil, &raw); err != nil {
		return nil, err
	}
	out := make([]Session, len(raw))
	for i, s := range raw {
		if s == nil || s.ID == "" {
			return nil, malformed(op, fmt.Errorf("session %d is null or has no id", i))
		}
		out[i] = s.session()
	}
	return out, nil
}

// Delete deletes the session, stopping it if it runs. A session that is
// already gone is not an error.
func (c *Client) Delete(ctx context.Context, sessionID string) error {
	op := "delete " + sessionID
	path, err := sessionPath(op, sessionID, "")
	if err != nil {
		return err
	}
	err = c.do(ctx, op, http.MethodDelete, path, nil, nil)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// Abort stops the session's current work; it stays, with the interrupted
// message marked aborted. The server answers success for a gone session too.
// A permission ask the session was waiting on stays listed.
func (c *Client) Abort(ctx context.Context, sessionID string) error {
	op := "abort " + sessionID
	path, err := sessionPath(op, sessionID, "/abort")
	if err != nil {
		return err
	}
	return c.do(ctx, op, http.MethodPost, path, nil, nil)
}

// Permissions returns the pending permission asks of the sessions working
// in dir ("" for the server's own directory).
func (c *Client) Permissions(ctx context.Context, dir string) ([]Permission, error) {
	const op = "permissions"
	var raw []*permissionJSON
	if err := c.do(ctx, op, http.MethodGet, inDir("/permission", dir), nil, &raw); err != nil {
		return nil, err
	}
	out := make([]Permission, len(raw))
	for i, p := range raw {
		if p == nil || p.SessionID == "" {
			return nil, malformed(op, fmt.Errorf("permission %d is null or names no session", i))
		}
		out[i] = Permission{ID: p.ID, SessionID: p.SessionID, Type: p.Permission, Patterns: p.Patterns}
	}
	return out, nil
}

// Agents returns the names of the agents the server knows for sessions in
// dir ("" for the server's own directory), so a caller can check its agent
// exists before prompting it.
func (c *Client) Agents(ctx context.Context, dir string) ([]string, error) {
	const op = "agents"
	var raw []*struct {
		Name string `json:"name"`
	}
	if err := c.do(ctx, op, http.MethodGet, inDir("/agent", dir), nil, &raw); err != nil {
		return nil, err
	}
	names := make([]string, len(raw))
	for i, a := range raw {
		if a == nil || a.Name == "" {
			return nil, malformed(op, fmt.Errorf("agent %d is null or has no name", i))
		}
		names[i] = a.Name
	}
	return names, nil
}

// OpenToAnyone reports whether the server answers a request that carries
// no password: then any process that can reach it may run commands as the
// server's user. A server that asks for credentials answers 401.
func (c *Client) OpenToAnyone(ctx context.Context) (bool, error) {
	const op = "check the server asks for a password"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/agent", nil)
	if err != nil {
		return false, &Error{Op: op, Err: err}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return false, transportError(ctx, op, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return false, nil
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		return true, nil
	}
	return false, statusError(op, resp.StatusCode, nil)
}

// Dispose frees the server's instance for dir, once no session works there
// any more. Its sessions stay listed.
func (c *Client) Dispose(ctx context.Context, dir string) error {
	if dir == "" {
		return nil // never the server's own instance
	}
	return c.do(ctx, "dispose "+dir, http.MethodPost, inDir("/instance/dispose", dir), nil, nil)
}

// inDir adds the directory a route is for; "" leaves the server's own.
func inDir(path, dir string) string {
	if dir == "" {
		return path
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + "directory=" + url.QueryEscape(dir)
}

// sessionPath builds /session/{id}{suffix}. The server answers 500 rather
// than 404 for an id without the "ses" prefix, which would look retryable.
func sessionPath(op, sessionID, suffix string) (string, error) {
	if !strings.HasPrefix(sessionID, "ses") {
		return "", &Error{Op: op, Err: fmt.Errorf("invalid session id %q", sessionID)}
	}
	return "/session/" + url.PathEscape(sessionID) + suffix, nil
}

// do sends one request and decodes a JSON answer into out (unless nil). Every
// failure is an *Error.
func (c *Client) do(ctx context.Context, op, method, path string, in, out any) error {
	return c.doOn(ctx, c.hc, op, method, path, in, out)
}

// doOn is do on the client hc.
func (c *Client) doOn(ctx context.Context, hc *http.Client, op, method, path string, in, out any) error {
	req, err := c.newRequest(ctx, method, path, in)
	if err != nil {
		return &Error{Op: op, Err: err}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return transportError(ctx, op, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return transportError(ctx, op, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError(op, resp.StatusCode, body)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &Error{Op: op, Status: resp.StatusCode, Err: fmt.Errorf("decode answer: %w", err)}
	}
	return nil
}

// malformed is an answer that decoded but cannot be used: a null, a missing
// field. Not retryable, like an answer that does not decode.
func malformed(op string, err error) *Error {
	return &Error{Op: op, Err: fmt.Errorf("malformed answer: %w", err)}
}

func (c *Client) newRequest(ctx context.Context, method, path string, in any) (*http.Request, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.password != "" {
		req.SetBasicAuth(basicAuthUser, c.password)
	}
	return req, nil
}

// transportError classifies a failure to get an answer: retryable, unless
// the caller's context ended or the answer was over the cap.
func transportError(ctx context.Context, op string, err error) *Error {
	var tl *bounded.TooLargeError
	return &Error{Op: op, Retryable: ctx.Err() == nil && !errors.As(err, &tl), Err: err}
}
