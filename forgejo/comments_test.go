package forgejo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCommentsOverTheCapAreReadInPages: a PR whose comments, in the one
// answer the forge gives for the list, are over the body cap is read from
// its paged timeline; the newest comments that fit are kept, one comment
// over the cap alone is skipped, and the read does not fail.
func TestCommentsOverTheCapAreReadInPages(t *testing.T) {
	const maxBody = 64 << 10
	var events, comments []map[string]any
	for i := 1; i <= 40; i++ {
		size := 3000
		if i == 20 {
			size = maxBody + 1 // one stranger's comment alone over the cap
		}
		c := map[string]any{"id": i, "body": fmt.Sprintf("%03d %s", i, strings.Repeat("x", size)),
			"user": map[string]string{"login": "chatty"}}
		comments = append(comments, c)
		events = append(events, map[string]any{"type": "commit_ref"}, withType(c, "comment"))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/repos/o/r/issues/1/comments", func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(comments) })
	mux.HandleFunc("/api/v1/repos/o/r/issues/1/timeline", func(w http.ResponseWriter, r *http.Request) { servePage(w, r, events) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()
	c, err := New(ctx, srv.URL, "t", Options{MaxBody: maxBody})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Comments(ctx, "o", "r", 1)
	if err != nil {
		t.Fatalf("Comments: %v", err)
	}
	total := 0
	for i, cm := range got {
		total += len(cm.Body)
		if cm.ID == 20 {
			t.Errorf("the comment over the cap alone was kept")
		}
		if i > 0 && cm.ID <= got[i-1].ID {
			t.Errorf("comments out of order: %d after %d", cm.ID, got[i-1].ID)
		}
	}
	if len(got) == 0 || got[len(got)-1].ID != 40 || got[len(got)-1].Author != "chatty" {
		t.Fatalf("the newest comment is missing: %d comments", len(got))
	}
	if total > maxBody || total < maxBody-3100 {
		t.Errorf("kept %d bytes of comments, want the newest that fit in %d", total, maxBody)
	}
}

func withType(entry map[string]any, typ string) map[string]any {
	out := maps.Clone(entry)
	out["type"] = typ
	return out
}

// TestPostCommentSpeaksTheAPI: PostComment sends the forge API's method,
// path and body with the token, reads its answer into the plain comment,
// and classifies a refusal by its status; an answer it cannot read is no
// comment, and not worth retrying (the comment may have been made).
func TestPostCommentSpeaksTheAPI(t *testing.T) {
	const comment = `{"id":7,"body":"hi","user":{"login":"pool-bot"},"created_at":"2026-07-01T12:00:00Z","updated_at":"2026-07-01T12:05:00Z"}`
	tests := []struct {
		name      string
		status    int
		answer    string
		want      string // the comment read, or "" for an error
		wantErr   error  // nil: any error when want is ""
		wantRetry bool
	}{
		{"posted", 201, comment, "7 pool-bot hi 12:05", nil, false},
		{"refused", 404, `{"message":"not found"}`, "", ErrNotFound, false},
		{"token rejected", 401, `{"message":"token is required"}`, "", ErrUnauthorized, false},
		{"forge failing", 500, `{"message":"boom"}`, "", nil, true},
		{"unreadable answer", 201, `{"id":`, "", nil, false},
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
			cm, err := f.client(Options{}).PostComment(context.Background(), "o", "r", 3, "hi")
			if want := `POST /api/v1/repos/o/r/issues/3/comments {"body":"hi"}`; len(got) != 1 || got[0] != want {
				t.Errorf("requests %q, want [%q]", got, want)
			}
			read := fmt.Sprintf("%d %s %s %s", cm.ID, cm.Author, cm.Body, cm.Updated.Format("15:04"))
			switch {
			case tt.want != "" && (err != nil || read != tt.want):
				t.Errorf("= %q, %v; want %q", read, err, tt.want)
			case tt.want == "" && err == nil:
				t.Errorf("= %q, no error; want one", read)
			case tt.want == "" && !strings.HasPrefix(err.Error(), "forgejo: comment on o/r#3: "):
				t.Errorf("error %q does not name the call", err)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("error %v, want %v", err, tt.wantErr)
			case tt.want == "" && IsRetryable(err) != tt.wantRetry:
				t.Errorf("error %v: retryable %v, want %v", err, IsRetryable(err), tt.wantRetry)
			}
		})
	}
}
