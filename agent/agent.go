// Package agent is the pool's client for the OpenCode agent server (the 1.x
// HTTP API of `opencode serve`). It is the only package that knows that API.
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
)

// basicAuthUser is the user name the server expects with its password.
const basicAuthUser = "opencode"

// Client talks to one agent server. It is safe for concurrent use.
type Client struct {
	base     string
	password string
	hc       *http.Client
	log      *slog.Logger // nil: no logging; only Events logs
}

// New returns a client for the server at baseURL. A non-empty password is
// sent as basic auth (user "opencode"). A nil hc gets a client with a 30 s
// timeout per call.
func New(baseURL, password string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), password: password, hc: hc}
}

// WithLogger returns a copy of c that logs to log. Only Events logs, about
// its stream breaking and reconnecting.
func (c *Client) WithLogger(log *slog.Logger) *Client {
	cc := *c
	cc.log = log
	return &cc
}

// Session is an agent session.
type Session struct {
	ID, Title        string
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

// CreateSession creates a session. Giving a title also keeps the server from
// asking the model to invent one.
func (c *Client) CreateSession(ctx context.Context, title string) (Session, error) {
	var s sessionJSON
	err := c.do(ctx, "create session", http.MethodPost, "/session", map[string]string{"title": title}, &s)
	return s.session(), err
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

// Statuses returns the status of every session that is not idle. A session
// is absent both when it finished and in the second or so between an
// accepted prompt and its first busy, so absence alone does not mean done;
// see Finished.
func (c *Client) Statuses(ctx context.Context) (map[string]Status, error) {
	var raw map[string]statusJSON
	if err := c.do(ctx, "statuses", http.MethodGet, "/session/status", nil, &raw); err != nil {
		return nil, err
	}
	out := make(map[string]Status, len(raw))
	for id, s := range raw {
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
	var raw []messageJSON
	if err := c.do(ctx, op, http.MethodGet, path, nil, &raw); err != nil {
		return nil, err
	}
	msgs := make([]Message, len(raw))
	for i, m := range raw {
		msgs[i] = m.message()
	}
	return msgs, nil
}

// sessionsLimit is the most sessions Sessions asks for. Without a limit the
// server lists only the 100 most recently updated; it has no cursor.
const sessionsLimit = 100000

// Sessions returns the sessions the server keeps, most recently updated
// first, child sessions included.
func (c *Client) Sessions(ctx context.Context) ([]Session, error) {
	var raw []sessionJSON
	path := fmt.Sprintf("/session?limit=%d", sessionsLimit)
	if err := c.do(ctx, "sessions", http.MethodGet, path, nil, &raw); err != nil {
		return nil, err
	}
	out := make([]Session, len(raw))
	for i, s := range raw {
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

// Permissions returns the pending permission asks of all sessions.
func (c *Client) Permissions(ctx context.Context) ([]Permission, error) {
	var raw []permissionJSON
	if err := c.do(ctx, "permissions", http.MethodGet, "/permission", nil, &raw); err != nil {
		return nil, err
	}
	out := make([]Permission, len(raw))
	for i, p := range raw {
		out[i] = Permission{ID: p.ID, SessionID: p.SessionID, Type: p.Permission, Patterns: p.Patterns}
	}
	return out, nil
}

// Agents returns the names of the agents the server knows, so a caller can
// check its agent exists before prompting it.
func (c *Client) Agents(ctx context.Context) ([]string, error) {
	var raw []struct {
		Name string `json:"name"`
	}
	if err := c.do(ctx, "agents", http.MethodGet, "/agent", nil, &raw); err != nil {
		return nil, err
	}
	names := make([]string, len(raw))
	for i, a := range raw {
		names[i] = a.Name
	}
	return names, nil
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
	req, err := c.newRequest(ctx, method, path, in)
	if err != nil {
		return &Error{Op: op, Err: err}
	}
	resp, err := c.hc.Do(req)
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
// the caller's context ended.
func transportError(ctx context.Context, op string, err error) *Error {
	return &Error{Op: op, Retryable: ctx.Err() == nil, Err: err}
}
