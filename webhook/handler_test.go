package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	testSecret = "s3cret-for-tests"
	sentinelPR = 99999 // larger than any PR in these tests: see expectNoWake
	guard      = 10 * time.Second
)

// Payloads shaped like Gitea 1.26's, trimmed to a few fields.
const (
	prOpened = `{"action":"opened","number":3,"pull_request":{"id":7,"number":3,"state":"open",` +
		`"title":"add x","head":{"ref":"feature-1","sha":"0123abcd"},"base":{"ref":"main"}},` +
		`"requested_reviewer":null,"repository":{"id":1,"name":"demo","full_name":"owner/demo"},` +
		`"sender":{"login":"owner"},"commit_id":"","review":null}`
	prSynced = `{"action":"synchronized","number":4,"pull_request":{"number":4,"state":"open"},` +
		`"repository":{"full_name":"owner/demo"},"sender":{"login":"owner"}}`
	reviewApproved = `{"action":"reviewed","number":5,"pull_request":{"number":5},` +
		`"requested_reviewer":{"login":"reviewer"},"repository":{"full_name":"owner/demo"},` +
		`"review":{"type":"pull_request_review_approved","content":"lgtm"}}`
	prComment = `{"action":"created","issue":{"id":9,"number":6,"title":"add x",` +
		`"pull_request":{"merged":false,"merged_at":null}},"pull_request":{"number":6},` +
		`"comment":{"id":12,"body":"please look"},"repository":{"full_name":"owner/demo"},"is_pull":true}`
	issueComment = `{"action":"created","issue":{"id":10,"number":7,"title":"a bug","pull_request":null},` +
		`"comment":{"id":13,"body":"me too"},"repository":{"full_name":"owner/demo"},"is_pull":false}`
	commitStatus = `{"id":4,"sha":"0123abcd","context":"ci/test","state":"success",` +
		`"repository":{"full_name":"owner/demo"},"commit":{"id":"0123abcd"}}`
	otherRepo = `{"action":"opened","number":3,"pull_request":{"number":3},` +
		`"repository":{"full_name":"owner/other"}}`
	pushEvent = `{"ref":"refs/heads/main","before":"a","after":"b","repository":{"full_name":"owner/demo"}}`
)

func sign(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return hex.EncodeToString(mac.Sum(nil))
}

// delivery builds a POST as Gitea (vendor "Gitea") or Forgejo sends it.
func delivery(vendor, event, eventType, body, signature string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-"+vendor+"-Delivery", "8c1f0e4e-0000-4000-8000-000000000001")
	if event != "" {
		r.Header.Set("X-"+vendor+"-Event", event)
	}
	if eventType != "" {
		r.Header.Set("X-"+vendor+"-Event-Type", eventType)
	}
	if signature != "" {
		r.Header.Set("X-"+vendor+"-Signature", signature)
	}
	return r
}

// lockedBuffer collects log output written from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type fixture struct {
	h     http.Handler
	wakes chan int
	log   *lockedBuffer
}

func newFixture(wake Wake) *fixture {
	f := &fixture{wakes: make(chan int, 100), log: &lockedBuffer{}}
	if wake == nil {
		wake = func(pr int) { f.wakes <- pr }
	}
	logger := slog.New(slog.NewTextHandler(f.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.h = Handler([]byte(testSecret), "Owner", "Demo", logger, wake)
	return f
}

func (f *fixture) serve(r *http.Request) int {
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w.Code
}

func (f *fixture) expectWake(t *testing.T, want int) {
	t.Helper()
	select {
	case got := <-f.wakes:
		if got != want {
			t.Errorf("wake(%d), want wake(%d)", got, want)
		}
	case <-time.After(guard):
		t.Fatalf("no wake(%d) after %s", want, guard)
	}
}

// expectNoWake sends a good delivery for sentinelPR and expects it to be the
// next wake. Wakes are made one at a time, lowest PR first within a batch, so
// a wake queued by an earlier delivery would come out before the sentinel.
func (f *fixture) expectNoWake(t *testing.T) {
	t.Helper()
	body := fmt.Sprintf(`{"action":"opened","number":%d,"repository":{"full_name":"owner/demo"}}`, sentinelPR)
	if code := f.serve(delivery("Gitea", "pull_request", "pull_request", body, sign(testSecret, body))); code != http.StatusNoContent {
		t.Fatalf("sentinel delivery: status %d", code)
	}
	f.expectWake(t, sentinelPR)
}

func TestHandlerWakes(t *testing.T) {
	tests := []struct {
		name, vendor, event, eventType, body string
		want                                 int
	}{
		{"PR opened, Gitea", "Gitea", "pull_request", "pull_request", prOpened, 3},
		{"PR opened, Forgejo", "Forgejo", "pull_request", "pull_request", prOpened, 3},
		{"PR synchronized", "Gitea", "pull_request", "pull_request_sync", prSynced, 4},
		{"review approved", "Gitea", "pull_request_approved", "pull_request_review_approved", reviewApproved, 5},
		{"review rejected, Forgejo", "Forgejo", "pull_request_rejected", "pull_request_review_rejected", reviewApproved, 5},
		{"review comment", "Gitea", "pull_request_comment", "pull_request_review_comment", reviewApproved, 5},
		{"review, group name only", "Gitea", "pull_request_review", "", reviewApproved, 5},
		{"comment on a PR", "Gitea", "issue_comment", "pull_request_comment", prComment, 6},
		{"comment on a PR, coarse name only", "Forgejo", "issue_comment", "", prComment, 6},
		{"commit status names no PR", "Gitea", "status", "status", commitStatus, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(nil)
			r := delivery(tt.vendor, tt.event, tt.eventType, tt.body, sign(testSecret, tt.body))
			if code := f.serve(r); code != http.StatusNoContent {
				t.Fatalf("status %d, want %d", code, http.StatusNoContent)
			}
			f.expectWake(t, tt.want)
		})
	}
}

func TestHandlerRefuses(t *testing.T) {
	tests := []struct {
		name       string
		req        func() *http.Request
		wantStatus int
		wantLog    string // in the log, if not ""
	}{
		{"missing signature", func() *http.Request {
			return delivery("Gitea", "pull_request", "pull_request", prOpened, "")
		}, http.StatusUnauthorized, "missing signature"},
		{"wrong secret", func() *http.Request {
			return delivery("Gitea", "pull_request", "pull_request", prOpened, sign("not-the-secret", prOpened))
		}, http.StatusUnauthorized, "wrong signature"},
		{"signature of another body", func() *http.Request {
			return delivery("Forgejo", "pull_request", "pull_request", prOpened, sign(testSecret, prSynced))
		}, http.StatusUnauthorized, "wrong signature"},
		{"signature not hex", func() *http.Request {
			return delivery("Gitea", "pull_request", "pull_request", prOpened, "sha256=zz")
		}, http.StatusUnauthorized, "malformed signature"},
		{"GET", func() *http.Request {
			return httptest.NewRequest(http.MethodGet, "/hook", nil)
		}, http.StatusMethodNotAllowed, ""},
		{"oversized body", func() *http.Request {
			big := `{"pad":"` + strings.Repeat("x", maxBody) + `"}`
			return delivery("Gitea", "pull_request", "pull_request", big, sign(testSecret, big))
		}, http.StatusRequestEntityTooLarge, "oversized"},
		{"malformed JSON, good signature", func() *http.Request {
			return delivery("Gitea", "pull_request", "pull_request", `{"number":`, sign(testSecret, `{"number":`))
		}, http.StatusBadRequest, "undecodable"},
		{"other repository", func() *http.Request {
			return delivery("Gitea", "pull_request", "pull_request", otherRepo, sign(testSecret, otherRepo))
		}, http.StatusAccepted, ""},
		{"comment on a plain issue", func() *http.Request {
			return delivery("Gitea", "issue_comment", "issue_comment", issueComment, sign(testSecret, issueComment))
		}, http.StatusAccepted, ""},
		{"push", func() *http.Request {
			return delivery("Gitea", "push", "push", pushEvent, sign(testSecret, pushEvent))
		}, http.StatusAccepted, ""},
		{"no event header", func() *http.Request {
			return delivery("Gitea", "", "", prOpened, sign(testSecret, prOpened))
		}, http.StatusAccepted, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(nil)
			if code := f.serve(tt.req()); code != tt.wantStatus {
				t.Errorf("status %d, want %d", code, tt.wantStatus)
			}
			f.expectNoWake(t)
			logged := f.log.String()
			if tt.wantLog != "" && !strings.Contains(logged, tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, logged)
			}
			if strings.Contains(logged, testSecret) || strings.Contains(logged, `"action"`) {
				t.Errorf("log shows the secret or the body:\n%s", logged)
			}
		})
	}
}

func TestHandlerEmptySecretRejectsAll(t *testing.T) {
	var woke bool
	h := Handler(nil, "owner", "demo", nil, func(int) { woke = true })
	w := httptest.NewRecorder()
	h.ServeHTTP(w, delivery("Gitea", "pull_request", "pull_request", prOpened, sign("", prOpened)))
	if w.Code != http.StatusUnauthorized {
		t.Errorf("status %d, want 401", w.Code)
	}
	if woke {
		t.Error("woke with an empty secret")
	}
}

// A wake that blocks must not hold up deliveries; what piles up meanwhile is
// merged and delivered once wake returns.
func TestHandlerNeverBlocksOnWake(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	woken := map[int]int{}
	f := newFixture(func(pr int) {
		<-release
		mu.Lock()
		woken[pr]++
		mu.Unlock()
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			pr := 1 + i%20
			body := fmt.Sprintf(`{"action":"synchronized","number":%d,"repository":{"full_name":"owner/demo"}}`, pr)
			if code := f.serve(delivery("Gitea", "pull_request", "pull_request_sync", body, sign(testSecret, body))); code != http.StatusNoContent {
				t.Errorf("PR %d: status %d", pr, code)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("deliveries blocked behind a blocked wake")
	}
	close(release)
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(woken) == 20
	})
	mu.Lock()
	defer mu.Unlock()
	for pr, n := range woken {
		if n > 2 { // one in the blocked batch, at most one after
			t.Errorf("PR %d woken %d times, want merged wakes", pr, n)
		}
	}
}

func TestWakerOverflowBecomesFullLook(t *testing.T) {
	release := make(chan struct{})
	var got []int
	done := make(chan struct{})
	w := newWaker(func(pr int) {
		<-release
		got = append(got, pr)
		if pr == 0 {
			close(done)
		}
	})
	w.add(1) // taken at once by the run goroutine, which blocks in wake
	waitFor(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.pending) == 0
	})
	for pr := 2; pr <= maxPending+2; pr++ {
		w.add(pr)
	}
	close(release)
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("no wake(0) after overflow")
	}
	if got[0] != 1 || got[1] != 0 {
		t.Errorf("wakes start %v, want [1 0 ...]", got[:2])
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
