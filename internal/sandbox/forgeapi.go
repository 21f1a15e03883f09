package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// APIError is a forge answer with a status outside 2xx.
type APIError struct {
	Method string
	Path   string
	Status int
	Body   string // the start of the response body
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: status %d: %s", e.Method, e.Path, e.Status, e.Body)
}

const (
	maxBody     = 8 << 20
	maxErrBody  = 1024
	labelColour = "#ededed"
)

// Do sends a JSON request to /api/v1+path (path may carry a query) with the
// token, if any, and decodes a 2xx answer into out, if not nil. Any other
// status is returned together with an *APIError.
func (f *Forge) Do(ctx context.Context, token, method, path string, body any, out any) (status int, err error) {
	return f.call(ctx, tokenAuth(token), method, path, body, out)
}

type authFunc func(*http.Request)

func tokenAuth(token string) authFunc {
	return func(r *http.Request) {
		if token != "" {
			r.Header.Set("Authorization", "token "+token)
		}
	}
}

func basicAuth(user, password string) authFunc {
	return func(r *http.Request) { r.SetBasicAuth(user, password) }
}

func (f *Forge) call(ctx context.Context, auth authFunc, method, path string, body, out any) (int, error) {
	req, err := newJSONRequest(ctx, method, f.URL+"/api/v1"+path, body)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	auth(req)
	resp, err := f.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, &APIError{Method: method, Path: path, Status: resp.StatusCode, Body: snippet(data)}
	}
	if out != nil && len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode answer: %w: %s", method, path, err, snippet(data))
		}
	}
	return resp.StatusCode, nil
}

func newJSONRequest(ctx context.Context, method, target string, body any) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > maxErrBody {
		return string(b[:maxErrBody]) + "..."
	}
	return string(b)
}

func repoPath(owner, repo string) string {
	return "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(repo)
}

// contentsPath escapes each segment of a file path but keeps its slashes.
func contentsPath(owner, repo, file string) string {
	segs := strings.Split(file, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return repoPath(owner, repo) + "/contents/" + strings.Join(segs, "/")
}

// Via returns a client of the same forge, with its tokens, that sends its
// API calls to url instead (a proxy in front of the forge). It starts and
// stops nothing: Stop is the original's.
func (f *Forge) Via(url string) *Forge {
	return &Forge{URL: url, AdminUser: f.AdminUser, AdminToken: f.AdminToken, Dir: f.Dir, client: f.client}
}
