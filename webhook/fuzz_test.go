package webhook

import (
	"encoding/json"
	"log/slog"
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
		h := newSingle([]byte(testSecret), "Owner/Demo", slog.New(slog.DiscardHandler), func(pr int) { wakes <- pr })
		h.single.pause = func(time.Duration) {} // wake at once: the test waits for the waker to go idle
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
		woken := wakesOf(t, h, wakes)
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

// wakesOf waits for the handler's waker to go idle and returns the wakes
// it made.
func wakesOf(t *testing.T, h *handler, wakes <-chan int) []int {
	t.Helper()
	deadline := time.Now().Add(wakeWait)
	for {
		h.single.mu.Lock()
		idle := !h.single.running
		h.single.mu.Unlock()
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waker still runs after %s", wakeWait)
		}
		time.Sleep(time.Millisecond)
	}
	var out []int
	for {
		select {
		case pr := <-wakes:
			out = append(out, pr)
		default:
			return out
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

// wakeWait bounds the wait for the waker to go idle.
const wakeWait = 10 * time.Second
