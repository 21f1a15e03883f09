package webhook

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRouterWakesTheDeliverysRepository: one endpoint for several
// repositories wakes the pool of the repository a delivery names, and
// ignores a repository it does not serve.
func TestRouterWakesTheDeliverysRepository(t *testing.T) {
	wakes := make(chan string, 10)
	serves := map[string]bool{"owner/demo": true, "owner/other": true}
	h := Router([]byte(testSecret), nil, func(repo string) (Wake, bool) {
		repo = strings.ToLower(repo)
		return func(pr int) { wakes <- repo }, serves[repo]
	})
	stranger := strings.ReplaceAll(otherRepo, "owner/other", "owner/stranger")
	for _, tt := range []struct {
		body string
		code int
	}{{prOpened, http.StatusNoContent}, {otherRepo, http.StatusNoContent}, {stranger, http.StatusAccepted}} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, delivery("Gitea", "pull_request", "pull_request", tt.body, sign(testSecret, tt.body)))
		if rec.Code != tt.code {
			t.Errorf("delivery for %.60s: %d, want %d", tt.body, rec.Code, tt.code)
		}
	}
	got := map[string]bool{}
	for range 2 {
		select {
		case repo := <-wakes:
			got[repo] = true
		case <-time.After(patience):
			t.Fatalf("woken for %v only", got)
		}
	}
	if !got["owner/demo"] || !got["owner/other"] {
		t.Errorf("woken for %v, want owner/demo and owner/other", got)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, delivery("Gitea", "pull_request", "pull_request", prOpened, sign("wrong", prOpened)))
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("wrongly signed delivery: %d, want 401", rec.Code)
	}
}
