package webhook

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzHandler sends arbitrary deliveries, signed well, badly or not at all,
// to the webhook handler through its http.Handler. Seeds are in
// testdata/fuzz/FuzzHandler.
func FuzzHandler(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte, event, eventType string, forgejo bool, sigMode uint8, rawSig string) {
		wakes := make(chan int, 16)
		h := Handler([]byte(testSecret), "Owner", "Demo", slog.New(slog.DiscardHandler), func(pr int) { wakes <- pr })
		vendor := map[bool]string{false: "Gitea", true: "Forgejo"}[forgejo]
		signed := sigMode%4 == 0
		sig := map[uint8]string{0: sign(testSecret, string(body)), 1: sign("not-the-secret", string(body)), 2: "", 3: rawSig}[sigMode%4]
		if sigMode%4 == 3 && rawSig == sign(testSecret, string(body)) {
			signed = true
		}
		r := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(string(body)))
		r.Header.Set("X-"+vendor+"-Delivery", "fuzz-delivery")
		r.Header.Set("X-"+vendor+"-Event", event)
		r.Header.Set("X-"+vendor+"-Event-Type", eventType)
		r.Header.Set("X-"+vendor+"-Signature", sig)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		code := w.Code

		switch {
		case !signed && code != http.StatusUnauthorized:
			t.Fatalf("a delivery not signed with the secret got %d, want 401", code)
		case signed && !json.Valid(body) && code != http.StatusBadRequest:
			t.Fatalf("a signed delivery that is not JSON got %d, want 400", code)
		case code != http.StatusNoContent && code != http.StatusAccepted && code != http.StatusBadRequest && code != http.StatusUnauthorized:
			t.Fatalf("status %d is not one the handler documents", code)
		}
		woken := wakesBefore(t, h, wakes)
		if code != http.StatusNoContent {
			if len(woken) > 0 {
				t.Fatalf("status %d, yet woke %v", code, woken)
			}
			return
		}
		if !sameRepo(body, "owner/demo") {
			t.Fatalf("woke for a delivery that does not name owner/demo: %q", body)
		}
		if len(woken) > 1 || (len(woken) == 1 && woken[0] < 0) {
			t.Fatalf("one delivery woke %v, want one PR number ≥ 0", woken)
		}
	})
}

// wakesBefore sends a good delivery for the largest PR number and returns
// the wakes that came out before it: wakes are made in order of arrival,
// lowest PR first within a batch, so an earlier delivery's wake precedes it.
func wakesBefore(t *testing.T, h http.Handler, wakes <-chan int) []int {
	t.Helper()
	body := fmt.Sprintf(`{"action":"opened","number":%d,"repository":{"full_name":"owner/demo"}}`, math.MaxInt)
	r := delivery("Gitea", "pull_request", "pull_request", body, sign(testSecret, body))
	r.Header.Set("X-Gitea-Delivery", "sentinel")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusNoContent {
		t.Fatalf("sentinel delivery: status %d", w.Code)
	}
	var before []int
	for {
		select {
		case pr := <-wakes:
			if pr == math.MaxInt {
				return before
			}
			before = append(before, pr)
		case <-time.After(guard):
			t.Fatalf("no sentinel wake after %s", guard)
		}
	}
}

func sameRepo(body []byte, repo string) bool {
	var p struct {
		Repository struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
	}
	return json.Unmarshal(body, &p) == nil && strings.EqualFold(p.Repository.FullName, repo)
}
