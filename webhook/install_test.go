package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

const testToken = "0123456789abcdef-token"

// fakeForge serves the hook endpoints of one repository and records each
// call as "METHOD path".
type fakeForge struct {
	mu     sync.Mutex
	calls  []string       // guarded by mu
	hooks  map[int64]hook // guarded by mu
	nextID int64          // guarded by mu
	fail   string         // answer 500 to calls starting with this
}

func (f *fakeForge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := r.Method + " " + r.URL.Path
	f.calls = append(f.calls, call)
	switch {
	case r.Header.Get("Authorization") != "token "+testToken:
		http.Error(w, `{"message":"token is required"}`, http.StatusUnauthorized)
	case f.fail != "" && strings.HasPrefix(call, f.fail):
		http.Error(w, `{"message":"boom"}`, http.StatusInternalServerError)
	case call == "GET /api/v1/repos/owner/demo/hooks":
		f.list(w, r)
	case call == "POST /api/v1/repos/owner/demo/hooks":
		f.create(w, r)
	case strings.HasPrefix(call, "DELETE /api/v1/repos/owner/demo/hooks/"):
		var id int64
		fmt.Sscanf(r.URL.Path, "/api/v1/repos/owner/demo/hooks/%d", &id)
		delete(f.hooks, id)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

// list puts every hook on page 1.
func (f *fakeForge) list(w http.ResponseWriter, r *http.Request) {
	hooks := []hook{}
	if r.URL.Query().Get("page") == "1" {
		for _, id := range slices.Sorted(maps.Keys(f.hooks)) {
			hooks = append(hooks, f.hooks[id])
		}
	}
	_ = json.NewEncoder(w).Encode(hooks)
}

func (f *fakeForge) create(w http.ResponseWriter, r *http.Request) {
	var h hook
	if err := json.NewDecoder(r.Body).Decode(&h); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.nextID++
	h.ID = f.nextID
	f.hooks[h.ID] = h
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(h)
}

func (f *fakeForge) urls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var urls []string
	for _, id := range slices.Sorted(maps.Keys(f.hooks)) {
		urls = append(urls, fmt.Sprintf("%d %s", id, f.hooks[id].Config["url"]))
	}
	return urls
}

func TestInstallReplacesHookAtSameURL(t *testing.T) {
	ff := &fakeForge{hooks: map[int64]hook{}}
	srv := httptest.NewServer(ff)
	defer srv.Close()
	ctx := context.Background()
	install := func(url, secret string) {
		t.Helper()
		if err := Install(ctx, srv.URL+"/", testToken, "owner", "demo", url, []byte(secret), srv.Client()); err != nil {
			t.Fatal(err)
		}
	}
	install("http://127.0.0.1:1/a", "one")
	install("http://127.0.0.1:1/b", "two")
	install("http://127.0.0.1:1/a", "three")
	want := []string{"2 http://127.0.0.1:1/b", "3 http://127.0.0.1:1/a"}
	if got := ff.urls(); !slices.Equal(got, want) {
		t.Errorf("hooks %q, want %q", got, want)
	}
	if got := ff.hooks[3].Config["secret"]; got != "three" {
		t.Errorf("secret %q, want the latest", got)
	}
}

func TestInstallErrors(t *testing.T) {
	tests := []struct {
		name, token, fail, secret string
		want                      string
	}{
		{"token refused", "wrong", "", "s", "webhook: install on owner/demo: list hooks: GET /hooks?page=1&limit=50: status 401"},
		{"create fails", testToken, "POST", "s", "webhook: install on owner/demo: create hook: POST /hooks: status 500"},
		{"empty secret", testToken, "", "", "webhook: install on owner/demo: empty secret"},
		{"secret not UTF-8", testToken, "", "\xff", "webhook: install on owner/demo: secret is not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ff := &fakeForge{hooks: map[int64]hook{}, fail: tt.fail}
			srv := httptest.NewServer(ff)
			defer srv.Close()
			err := Install(context.Background(), srv.URL, tt.token, "owner", "demo", "http://127.0.0.1:1/", []byte(tt.secret), nil)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %v, want prefix %q", err, tt.want)
			}
			if strings.Contains(err.Error(), tt.token) {
				t.Errorf("error shows the token: %v", err)
			}
		})
	}
}
