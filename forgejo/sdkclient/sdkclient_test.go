package sdkclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"pool/forgejo"
)

// fakeForge answers the version probe with version and the API settings,
// and whatever routes a test adds; it records the requests it served.
type fakeForge struct {
	mux      *http.ServeMux
	srv      *httptest.Server
	mu       sync.Mutex
	requests []string // method and path
}

func newFakeForge(t *testing.T, version string) *fakeForge {
	f := &fakeForge{mux: http.NewServeMux()}
	f.mux.HandleFunc("/api/v1/version", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"version":%q}`, version)
	})
	f.mux.HandleFunc("/api/v1/settings/api", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"max_response_items":50}`)
	})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		f.mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// served returns the requests served so far and forgets them.
func (f *fakeForge) served() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.requests
	f.requests = nil
	return out
}

func (f *fakeForge) client(t *testing.T) *Client {
	t.Helper()
	c, err := New(context.Background(), f.srv.URL, "t", forgejo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.served()
	return c
}

// TestOnlyTheSupervisorsClientChecksTheVersion: New asks the server's
// version through the SDK before anything else and refuses a server that
// names none (a build without one says "development") or one older than
// 1.11, with a connect error worth retrying; the plain client (the
// reviewer's tool's) never asks.
func TestOnlyTheSupervisorsClientChecksTheVersion(t *testing.T) {
	tests := []struct {
		version string
		wantErr string // "" for none
	}{
		{"1.26.0", ""},
		{"11.0.1-99-c504062+gitea-1.22.0", ""},
		{"development", "forgejo: connect: unknown version: development"},
		{"1.10.6", "is older than 1.11.0"},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			f := newFakeForge(t, tt.version)
			c, err := New(context.Background(), f.srv.URL, "t", forgejo.Options{})
			got := f.served()
			switch {
			case tt.wantErr == "" && (err != nil || c.Version() != tt.version):
				t.Fatalf("New = %v; want a client of version %s", err, tt.version)
			case tt.wantErr == "" && !slices.Equal(got, []string{"GET /api/v1/version", "GET /api/v1/version", "GET /api/v1/settings/api"}):
				t.Errorf("requests %q; want the SDK's version probe, then the API settings", got)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("New = %v; want an error containing %q", err, tt.wantErr)
			case tt.wantErr != "" && !forgejo.IsRetryable(err):
				t.Errorf("New = %v, not retryable; want a connect error worth retrying", err)
			case tt.wantErr != "" && slices.Contains(got, "GET /api/v1/settings/api"):
				t.Errorf("requests %q: read on after the version was refused", got)
			}
			if _, err := forgejo.New(context.Background(), f.srv.URL, "t", forgejo.Options{}); err != nil {
				t.Fatalf("forgejo.New: %v", err)
			}
			if got := f.served(); !slices.Equal(got, []string{"GET /api/v1/settings/api"}) {
				t.Errorf("the plain client's requests %q; want the API settings alone", got)
			}
		})
	}
}

// TestSDKCallsSpeakTheAPI: each SDK call sends the forge API's method, path
// and body with the token, reads the answer, and classifies a refusal by
// its status as package forgejo does; deleting a comment already gone is no
// error, and an answer without what was asked for is one.
func TestSDKCallsSpeakTheAPI(t *testing.T) {
	const comment = `{"id":7,"body":"hi","user":{"login":"pool-bot"},"created_at":"2026-07-01T12:00:00Z","updated_at":"2026-07-01T12:05:00Z"}`
	me := func(ctx context.Context, c *Client) (string, error) { return c.Me(ctx) }
	branch := func(ctx context.Context, c *Client) (string, error) { return c.DefaultBranch(ctx, "o", "r") }
	edit := func(ctx context.Context, c *Client) (string, error) {
		cm, err := c.EditComment(ctx, "o", "r", 7, "hi")
		return fmt.Sprintf("%d %s %s %s", cm.ID, cm.Author, cm.Body, cm.Updated.Format("15:04")), err
	}
	del := func(ctx context.Context, c *Client) (string, error) {
		return "deleted", c.DeleteComment(ctx, "o", "r", 7)
	}
	tests := []struct {
		name        string
		call        func(context.Context, *Client) (string, error)
		status      int
		answer      string
		wantRequest string // method path body
		want        string // what the call read, or "" for an error
		wantErr     error  // nil: any error when want is ""
	}{
		{"who am i", me, 200, `{"id":1,"login":"pool-bot"}`, `GET /api/v1/user `, "pool-bot", nil},
		{"who am i, null", me, 200, `null`, `GET /api/v1/user `, "", nil},
		{"who am i, token rejected", me, 401, `{"message":"token is required"}`, `GET /api/v1/user `, "", forgejo.ErrUnauthorized},
		{"default branch", branch, 200, `{"id":1,"default_branch":"trunk"}`, `GET /api/v1/repos/o/r `, "trunk", nil},
		{"default branch, null", branch, 200, `null`, `GET /api/v1/repos/o/r `, "", nil},
		{"default branch, no repository", branch, 404, `{"message":"not found"}`, `GET /api/v1/repos/o/r `, "", forgejo.ErrNotFound},
		{"edit", edit, 200, comment, `PATCH /api/v1/repos/o/r/issues/comments/7 {"body":"hi"}`, "7 pool-bot hi 12:05", nil},
		{"edit answering another comment", edit, 200, strings.Replace(comment, `"id":7`, `"id":8`, 1), `PATCH /api/v1/repos/o/r/issues/comments/7 {"body":"hi"}`, "", nil},
		{"edit, token rejected", edit, 401, `{"message":"token is required"}`, `PATCH /api/v1/repos/o/r/issues/comments/7 {"body":"hi"}`, "", forgejo.ErrUnauthorized},
		{"delete", del, 204, ``, `DELETE /api/v1/repos/o/r/issues/comments/7 `, "deleted", nil},
		{"delete of one gone", del, 404, `{"message":"not found"}`, `DELETE /api/v1/repos/o/r/issues/comments/7 `, "deleted", nil},
		{"delete refused", del, 403, `{"message":"forbidden"}`, `DELETE /api/v1/repos/o/r/issues/comments/7 `, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeForge(t, "1.26.0")
			var got []string
			answer := func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				got = append(got, r.Method+" "+r.URL.Path+" "+strings.TrimSpace(string(body)))
				if r.Header.Get("Authorization") != "token t" {
					t.Errorf("%s %s sent Authorization %q, want the token", r.Method, r.URL.Path, r.Header.Get("Authorization"))
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.answer)
			}
			f.mux.HandleFunc("/api/v1/user", answer)
			f.mux.HandleFunc("/api/v1/repos/o/r", answer)
			f.mux.HandleFunc("/api/v1/repos/o/r/", answer)
			read, err := tt.call(context.Background(), f.client(t))
			if len(got) != 1 || got[0] != tt.wantRequest {
				t.Errorf("requests %q, want [%q]", got, tt.wantRequest)
			}
			switch {
			case tt.want != "" && (err != nil || read != tt.want):
				t.Errorf("= %q, %v; want %q", read, err, tt.want)
			case tt.want == "" && err == nil:
				t.Errorf("= %q, no error; want one", read)
			case tt.want == "" && !strings.HasPrefix(err.Error(), "forgejo: "):
				t.Errorf("error %q does not come from the client", err)
			case tt.wantErr != nil && (!errors.Is(err, tt.wantErr) || forgejo.IsRetryable(err)):
				t.Errorf("error %v, want a permanent %v", err, tt.wantErr)
			}
		})
	}
}

// TestSDKErrorsAreBoundedAndClassified: an SDK call's error is worth
// retrying when the forge failed, keeps the wait a 429 asked for, and
// quotes at most a bounded part of the answer, with no password.
func TestSDKErrorsAreBoundedAndClassified(t *testing.T) {
	f := newFakeForge(t, "1.26.0")
	f.mux.HandleFunc("/api/v1/user", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprint(w, `{"message":"proxy http://admin:hunter2@upstream/ said `+strings.Repeat("z", 1<<20)+`"}`)
	})
	f.mux.HandleFunc("/api/v1/repos/o/r", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"message":"slow down"}`)
	})
	c := f.client(t)
	_, err := c.Me(context.Background())
	if err == nil || !forgejo.IsRetryable(err) {
		t.Fatalf("Me = %v, want a retryable error", err)
	}
	if msg := err.Error(); len(msg) > 700 || strings.Contains(msg, "hunter2") {
		t.Errorf("error text is %d bytes or shows the password: %.200q", len(msg), msg)
	}
	_, err = c.DefaultBranch(context.Background(), "o", "r")
	if !forgejo.IsRetryable(err) || forgejo.RetryAfter(err) != 30*time.Second {
		t.Errorf("DefaultBranch = %v, retry after %v; want a retryable error asking 30s", err, forgejo.RetryAfter(err))
	}
}
