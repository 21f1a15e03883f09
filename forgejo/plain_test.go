package forgejo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestNewChecksTheServersVersion: New reads /version without the token and
// refuses a server that names no version (a build without one says
// "development") or one older than 1.11, with a connect error worth
// retrying; Forgejo's and Gitea's versions pass.
func TestNewChecksTheServersVersion(t *testing.T) {
	tests := []struct {
		name, answer string
		status       int
		wantErr      string // "" for none
	}{
		{"gitea", `{"version":"1.26.0"}`, 200, ""},
		{"forgejo", `{"version":"11.0.1-99-c504062+gitea-1.22.0"}`, 200, ""},
		{"development build", `{"version":"development"}`, 200, "forgejo: connect: unknown version: development"},
		{"no version", `{}`, 200, "forgejo: connect: unknown version: "},
		{"too old", `{"version":"1.10.6"}`, 200, "is older than 1.11.0"},
		{"not JSON", `<html>`, 200, "forgejo: connect: server version: "},
		{"an error page", `bad gateway`, 502, "forgejo: connect: server version: HTTP 502: bad gateway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var auth []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/api/v1/version":
					mu.Lock()
					auth = append(auth, r.Header.Get("Authorization"))
					mu.Unlock()
					w.WriteHeader(tt.status)
					fmt.Fprint(w, tt.answer)
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			c, err := New(context.Background(), srv.URL, "secret-token", Options{})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.wantErr == "" && c.Version() != strings.TrimSuffix(strings.TrimPrefix(tt.answer, `{"version":"`), `"}`):
				t.Errorf("version %q, want the server's", c.Version())
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("New = %v; want an error containing %q", err, tt.wantErr)
			case tt.wantErr != "" && !IsRetryable(err):
				t.Errorf("New = %v, not retryable; want a connect error worth retrying", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(auth) != 1 || auth[0] != "" {
				t.Errorf("version probes sent with Authorization %q; want one, without the token", auth)
			}
		})
	}
}

// TestCommentWritesSpeakTheAPI: PostComment, EditComment and DeleteComment
// send the forge API's method, path and body with the token, read its
// answer into the plain comment, and classify refusals by status; deleting
// a comment already gone is no error.
func TestCommentWritesSpeakTheAPI(t *testing.T) {
	const comment = `{"id":7,"body":"hi","user":{"login":"pool-bot"},"created_at":"2026-07-01T12:00:00Z","updated_at":"2026-07-01T12:05:00Z"}`
	tests := []struct {
		name        string
		call        func(context.Context, *Client) (string, error)
		status      int
		answer      string
		wantRequest string // method path body
		want        string // the comment read, or "" for an error
		wantErr     error  // nil: any error when want is ""
	}{
		{"post", postHi, 201, comment, `POST /api/v1/repos/o/r/issues/3/comments {"body":"hi"}`, "7 pool-bot hi 12:05", nil},
		{"post refused", postHi, 404, `{"message":"not found"}`, `POST /api/v1/repos/o/r/issues/3/comments {"body":"hi"}`, "", ErrNotFound},
		{"post with an unreadable answer", postHi, 201, `{"id":`, `POST /api/v1/repos/o/r/issues/3/comments {"body":"hi"}`, "", nil},
		{"edit", editHi, 200, comment, `PATCH /api/v1/repos/o/r/issues/comments/7 {"body":"hi"}`, "7 pool-bot hi 12:05", nil},
		{"edit answering another comment", editHi, 200, strings.Replace(comment, `"id":7`, `"id":8`, 1), `PATCH /api/v1/repos/o/r/issues/comments/7 {"body":"hi"}`, "", nil},
		{"edit with a rejected token", editHi, 401, `{"message":"token is required"}`, `PATCH /api/v1/repos/o/r/issues/comments/7 {"body":"hi"}`, "", ErrUnauthorized},
		{"delete", deleteSeven, 204, ``, `DELETE /api/v1/repos/o/r/issues/comments/7 `, "deleted", nil},
		{"delete of one gone", deleteSeven, 404, `{"message":"not found"}`, `DELETE /api/v1/repos/o/r/issues/comments/7 `, "deleted", nil},
		{"delete refused", deleteSeven, 403, `{"message":"forbidden"}`, `DELETE /api/v1/repos/o/r/issues/comments/7 `, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeForge(t, 50)
			var got []string
			f.mux.HandleFunc("/api/v1/repos/o/r/", func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				got = append(got, r.Method+" "+r.URL.Path+" "+strings.TrimSpace(string(body)))
				if r.Header.Get("Authorization") != "token t" {
					t.Errorf("%s %s sent Authorization %q, want the token", r.Method, r.URL.Path, r.Header.Get("Authorization"))
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.answer)
			})
			read, err := tt.call(context.Background(), f.client(Options{}))
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
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func postHi(ctx context.Context, c *Client) (string, error) {
	cm, err := c.PostComment(ctx, "o", "r", 3, "hi")
	return fmt.Sprintf("%d %s %s %s", cm.ID, cm.Author, cm.Body, cm.Updated.Format("15:04")), err
}

func editHi(ctx context.Context, c *Client) (string, error) {
	cm, err := c.EditComment(ctx, "o", "r", 7, "hi")
	return fmt.Sprintf("%d %s %s %s", cm.ID, cm.Author, cm.Body, cm.Updated.Format("15:04")), err
}

func deleteSeven(ctx context.Context, c *Client) (string, error) {
	if err := c.DeleteComment(ctx, "o", "r", 7); err != nil {
		return "", err
	}
	return "deleted", nil
}
