package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pool/internal/syncbuf"
)

const (
	testSecret = "s3cret-for-tests"
	sentinelPR = 99999 // larger than any PR in these tests: see expectNoWake
	patience   = 10 * time.Second
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

// deliveryCount numbers the deliveries the tests make, each its own id.
var deliveryCount atomic.Int64

// delivery builds a POST as Gitea (vendor "Gitea") or Forgejo sends it.
func delivery(vendor, event, eventType, body, signature string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-"+vendor+"-Delivery", fmt.Sprintf("8c1f0e4e-0000-4000-8000-%012d", deliveryCount.Add(1)))
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

type fixture struct {
	h     http.Handler
	wakes chan int
	log   *syncbuf.Buffer
}

func newFixture(wake Wake) *fixture {
	f := &fixture{wakes: make(chan int, 100), log: &syncbuf.Buffer{}}
	if wake == nil {
		wake = func(pr int) { f.wakes <- pr }
	}
	logger := slog.New(slog.NewTextHandler(f.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.h = Handler([]byte(testSecret), "Owner", "Demo", logger, wake)
	f.h.(*handler).single.every = time.Millisecond // the rate limit has its own test
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
	case <-time.After(patience):
		t.Fatalf("no wake(%d) after %s", want, patience)
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
// merged into one wake, made once the blocked one returns.
func TestHandlerNeverBlocksOnWake(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var woken []int
	f := newFixture(func(pr int) {
		<-release
		mu.Lock()
		woken = append(woken, pr)
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
	case <-time.After(patience):
		t.Fatal("deliveries blocked behind a blocked wake")
	}
	close(release)
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(woken, 0)
	})
	time.Sleep(20 * time.Millisecond) // room for a wrong extra wake
	mu.Lock()
	defer mu.Unlock()
	// The blocked wake took what was pending when it started (PR 1, or a
	// few PRs merged into 0); everything after it came as one wake(0).
	if len(woken) > 2 || woken[len(woken)-1] != 0 {
		t.Errorf("wakes %v, want at most two, the last a merged wake(0)", woken)
	}
}

// A flood of valid deliveries wakes the loop once per interval: the first at
// once, everything that came during the pause in one merged wake after it.
func TestWakesAreRateLimited(t *testing.T) {
	wakes := make(chan int, 100)
	pauses := make(chan time.Duration)
	resume := make(chan struct{})
	w := newWaker(func(pr int) { wakes <- pr }, nil)
	w.pause = func(d time.Duration) {
		pauses <- d
		<-resume
	}
	ctx := context.Background()
	w.add(ctx, 3)
	if got := <-wakes; got != 3 {
		t.Fatalf("first wake(%d), want wake(3) at once", got)
	}
	if d := <-pauses; d != time.Second {
		t.Errorf("paused %s after a wake, want 1s", d)
	}
	for pr := 1; pr <= 50; pr++ { // the flood, during the pause
		w.add(ctx, pr)
	}
	select {
	case got := <-wakes:
		t.Fatalf("wake(%d) during the pause", got)
	case <-time.After(20 * time.Millisecond):
	}
	resume <- struct{}{}
	if got := <-wakes; got != 0 {
		t.Errorf("wake(%d) after the pause, want one merged wake(0)", got)
	}
	<-pauses
	w.add(ctx, 7) // one more during the second pause: not lost
	resume <- struct{}{}
	if got := <-wakes; got != 7 {
		t.Errorf("wake(%d), want wake(7)", got)
	}
	<-pauses
	resume <- struct{}{} // nothing pending: the goroutine ends
	waitFor(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return !w.running
	})
	if len(wakes) != 0 {
		t.Errorf("%d extra wakes", len(wakes))
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
	}, nil)
	w.every = time.Millisecond
	ctx := context.Background()
	w.add(ctx, 1) // taken at once by the run goroutine, which blocks in wake
	waitFor(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.pending) == 0
	})
	for pr := 2; pr <= maxPending+2; pr++ {
		w.add(ctx, pr)
	}
	w.mu.Lock()
	pending := len(w.pending)
	w.mu.Unlock()
	if pending > maxPending {
		t.Errorf("%d PRs pending, want at most %d", pending, maxPending)
	}
	close(release)
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("no wake(0) after overflow")
	}
	if got[0] != 1 || got[1] != 0 {
		t.Errorf("wakes start %v, want [1 0 ...]", got[:2])
	}
}

func TestReplayedDeliveryIsIgnored(t *testing.T) {
	f := newFixture(nil)
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	f.h.(*handler).now = func() time.Time { return now }
	send := func(id string) int {
		r := delivery("Gitea", "pull_request", "pull_request", prOpened, sign(testSecret, prOpened))
		r.Header.Set("X-Gitea-Delivery", id)
		return f.serve(r)
	}
	if code := send("d-1"); code != http.StatusNoContent {
		t.Fatalf("first delivery: %d", code)
	}
	f.expectWake(t, 3)
	now = now.Add(9 * time.Minute)
	if code := send("d-1"); code != http.StatusOK {
		t.Errorf("replay after 9m: status %d, want 200", code)
	}
	f.expectNoWake(t)
	now = now.Add(2 * time.Minute) // 11 minutes after the first
	if code := send("d-1"); code != http.StatusNoContent {
		t.Errorf("replay after 11m: status %d, want 204 (out of the window)", code)
	}
	f.expectWake(t, 3)
	if !strings.Contains(f.log.String(), "replayed delivery ignored") {
		t.Errorf("replay not logged:\n%s", f.log.String())
	}
	// an unsigned request with a seen id is still refused, and does not
	// consume ids
	r := delivery("Gitea", "pull_request", "pull_request", prOpened, "")
	r.Header.Set("X-Gitea-Delivery", "d-2")
	if code := f.serve(r); code != http.StatusUnauthorized {
		t.Errorf("unsigned: %d", code)
	}
	if code := send("d-2"); code != http.StatusNoContent {
		t.Errorf("first signed d-2: status %d, want 204", code)
	}
	f.expectWake(t, 3)
}

func TestRememberedDeliveriesAreBounded(t *testing.T) {
	d := newDeliveries()
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	for i := range 3 * maxRemembered {
		if !d.firstTime(fmt.Sprintf("id-%d-%s", i, strings.Repeat("x", 1000)), now) {
			t.Fatalf("id %d seen before", i)
		}
	}
	if len(d.seen) > maxRemembered || len(d.order) > maxRemembered {
		t.Errorf("remembers %d ids (%d in order), want at most %d", len(d.seen), len(d.order), maxRemembered)
	}
	if d.firstTime(fmt.Sprintf("id-%d-%s", 3*maxRemembered-1, strings.Repeat("x", 1000)), now) {
		t.Error("the newest id was forgotten")
	}
}

// TestRejectedRequestsAreLoggedOncePerSecond: a flood of wrongly signed
// requests makes one log line a second, which counts those rejected since
// the last line.
func TestRejectedRequestsAreLoggedOncePerSecond(t *testing.T) {
	f := newFixture(nil)
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	f.h.(*handler).now = func() time.Time { return now }
	flood := func(n int) {
		for range n {
			r := delivery("Gitea", "pull_request", "pull_request", prOpened, sign("wrong", prOpened))
			if code := f.serve(r); code != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", code)
			}
			now = now.Add(time.Millisecond)
		}
	}
	flood(500) // half a second
	now = now.Add(time.Second)
	flood(10)
	lines := strings.Count(f.log.String(), "rejected delivery")
	if lines != 2 {
		t.Fatalf("%d log lines for 510 rejected requests in 1.5 s, want 2:\n%s", lines, f.log.String())
	}
	if !strings.Contains(f.log.String(), "rejected=1 ") || !strings.Contains(f.log.String(), "rejected=500 ") {
		t.Errorf("the lines do not count 1 and then the 500 rejected since:\n%s", f.log.String())
	}
}

func TestRejectedHeadersAreLoggedBounded(t *testing.T) {
	f := newFixture(nil)
	r := delivery("Gitea", "pull_request", "pull_request", prOpened, sign("wrong", prOpened))
	r.Header.Set("X-Junk", strings.Repeat("j", 100000))
	r.Header.Set("Authorization", "Bearer let-me-in")
	for i := range 50 {
		r.Header.Set(fmt.Sprintf("X-Pad-%02d", i), strings.Repeat("p", 50))
	}
	if code := f.serve(r); code != http.StatusUnauthorized {
		t.Fatalf("status %d", code)
	}
	line := f.log.String()
	_, after, ok := strings.Cut(line, "headers=")
	if !ok {
		t.Fatalf("no headers in the log line: %s", line)
	}
	logged, err := strconv.Unquote(strings.TrimSpace(after))
	if err != nil {
		logged = strings.TrimSpace(after)
	}
	if len(logged) > maxLoggedHeaders {
		t.Errorf("logged %d bytes of headers, want at most %d: %q", len(logged), maxLoggedHeaders, logged)
	}
	if !strings.Contains(logged, "Content-Type: application/json") {
		t.Errorf("headers %q lack the first ones", logged)
	}
	if strings.Contains(line, "let-me-in") {
		t.Errorf("log shows the Authorization header: %s", line)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
