package webhook

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"pool/forgejo"
	"pool/internal/sandbox"
	"pool/internal/syncbuf"
)

// forgeGuard bounds each wait for the real forge; deliveries normally take
// milliseconds.
const forgeGuard = 60 * time.Second

// seen is one delivery as the forge sent it and as the handler answered it.
type seen struct {
	event, eventType, delivery string
	signed                     bool
	status                     int
}

func (s seen) String() string {
	return fmt.Sprintf("X-Gitea-Event=%s X-Gitea-Event-Type=%s signed=%t -> %d",
		s.event, s.eventType, s.signed, s.status)
}

// recorder passes deliveries to the handler and reports them on a channel.
type recorder struct {
	h    http.Handler
	seen chan seen
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	rc.h.ServeHTTP(sw, r)
	s := seen{
		event:     r.Header.Get("X-Gitea-Event"),
		eventType: r.Header.Get("X-Gitea-Event-Type"),
		delivery:  r.Header.Get("X-Gitea-Delivery"),
		signed:    r.Header.Get("X-Gitea-Signature") != "",
		status:    sw.status,
	}
	select {
	case rc.seen <- s:
	default: // the test stopped listening
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// forgeRun is a forge with owner/demo, a reviewer, and the handler under
// test behind a loopback server.
type forgeRun struct {
	t          *testing.T
	ctx        context.Context
	forge      *sandbox.Forge
	ownerToken string
	revToken   string
	srv        *httptest.Server
	wakes      chan int
	seen       chan seen
	log        *syncbuf.Buffer
}

func startForgeRun(t *testing.T) *forgeRun {
	f := sandbox.ForgeForTest(t)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	t.Cleanup(cancel)
	r := &forgeRun{t: t, ctx: ctx, forge: f, wakes: make(chan int, 100),
		seen: make(chan seen, 100), log: &syncbuf.Buffer{}}
	r.seedRepo()
	logger := slog.New(slog.NewTextHandler(r.log, nil))
	h := Handler([]byte(testSecret), "owner", "demo", logger, func(pr int) { r.wakes <- pr })
	r.srv = httptest.NewServer(&recorder{h: h, seen: r.seen})
	t.Cleanup(r.srv.Close)
	return r
}

func (r *forgeRun) seedRepo() {
	var err error
	if r.ownerToken, err = r.forge.CreateUser(r.ctx, "owner"); err != nil {
		r.t.Fatal(err)
	}
	if err = r.forge.CreateRepo(r.ctx, r.ownerToken, "demo"); err != nil {
		r.t.Fatal(err)
	}
	if r.revToken, err = r.forge.CreateUser(r.ctx, "reviewer"); err != nil {
		r.t.Fatal(err)
	}
	if err = r.forge.AddCollaborator(r.ctx, r.ownerToken, "owner", "demo", "reviewer", "write"); err != nil {
		r.t.Fatal(err)
	}
}

func (r *forgeRun) install(path, secret string) {
	r.t.Helper()
	fc, err := forgejo.New(r.ctx, r.forge.URL, r.ownerToken, forgejo.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	if err := Install(r.ctx, fc, "owner", "demo", r.srv.URL+path, []byte(secret)); err != nil {
		r.t.Fatal(err)
	}
}

type apiHook struct {
	ID     int64             `json:"id"`
	Type   string            `json:"type"`
	Active bool              `json:"active"`
	Config map[string]string `json:"config"`
	Events []string          `json:"events"`
}

func (r *forgeRun) hooks() []apiHook {
	r.t.Helper()
	var hooks []apiHook
	if _, err := r.forge.Do(r.ctx, r.ownerToken, http.MethodGet, "/repos/owner/demo/hooks", nil, &hooks); err != nil {
		r.t.Fatal(err)
	}
	return hooks
}

// do calls the forge API as token and fails the test on error.
func (r *forgeRun) do(token, method, path string, body any) {
	r.t.Helper()
	if _, err := r.forge.Do(r.ctx, token, method, path, body, nil); err != nil {
		r.t.Fatal(err)
	}
}

// expectDelivery waits for a delivery of eventType answered with status,
// logging every delivery seen on the way.
func (r *forgeRun) expectDelivery(eventType string, status int) {
	r.t.Helper()
	timeout := time.After(forgeGuard)
	for {
		select {
		case s := <-r.seen:
			r.t.Logf("delivery: %s", s)
			if s.eventType == eventType && s.status == status {
				return
			}
		case <-timeout:
			r.t.Fatalf("no %s delivery answered %d after %s", eventType, status, forgeGuard)
		}
	}
}

// expectWake waits for wake(pr), skipping wakes for other PRs.
func (r *forgeRun) expectWake(pr int) {
	r.t.Helper()
	timeout := time.After(forgeGuard)
	for {
		select {
		case got := <-r.wakes:
			if got == pr {
				return
			}
			r.t.Logf("wake(%d) while waiting for wake(%d)", got, pr)
		case <-timeout:
			r.t.Fatalf("no wake(%d) after %s", pr, forgeGuard)
		}
	}
}

// barrier delivers a good event for PR n itself and returns the wakes that
// came before wake(n): those queued by earlier deliveries (see expectNoWake).
func (r *forgeRun) barrier(n int) []int {
	r.t.Helper()
	body := fmt.Sprintf(`{"action":"opened","number":%d,"repository":{"full_name":"owner/demo"}}`, n)
	req, _ := http.NewRequestWithContext(r.ctx, http.MethodPost, r.srv.URL+"/hook", strings.NewReader(body))
	req.Header.Set("X-Gitea-Event", "pull_request")
	req.Header.Set("X-Gitea-Event-Type", "pull_request")
	req.Header.Set("X-Gitea-Delivery", "barrier")
	req.Header.Set("X-Gitea-Signature", sign(testSecret, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	var before []int
	timeout := time.After(forgeGuard)
	for {
		select {
		case got := <-r.wakes:
			if got == n {
				return before
			}
			before = append(before, got)
		case <-timeout:
			r.t.Fatalf("no wake(%d) after %s", n, forgeGuard)
		}
	}
}

func TestForgeDeliveriesWake(t *testing.T) {
	r := startForgeRun(t)
	r.install("/hook", testSecret)
	r.install("/hook", testSecret) // idempotent
	hooks := r.hooks()
	if len(hooks) != 1 || hooks[0].Config["url"] != r.srv.URL+"/hook" || !hooks[0].Active {
		t.Fatalf("hooks after installing twice: %+v", hooks)
	}
	t.Logf("installed hook: type %s, events %v", hooks[0].Type, hooks[0].Events)

	const repo = "/repos/owner/demo"
	if err := r.forge.CreateBranchWithFile(r.ctx, r.ownerToken, "owner", "demo", "feature-1", "a.txt", "one\n"); err != nil {
		t.Fatal(err)
	}
	pr, _, err := r.forge.CreatePR(r.ctx, r.ownerToken, "owner", "demo", "feature-1", "main", "add a", "")
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name, eventType string
		act             func()
		wake            int
	}{
		{"open", "pull_request", func() {}, pr},
		{"push to head", "pull_request_sync", func() {
			if _, err := r.forge.PushFile(r.ctx, r.ownerToken, "owner", "demo", "feature-1", "a.txt", "two\n", "more"); err != nil {
				t.Fatal(err)
			}
		}, pr},
		{"comment", "pull_request_comment", func() {
			r.do(r.revToken, http.MethodPost, fmt.Sprintf("%s/issues/%d/comments", repo, pr), map[string]any{"body": "a question"})
		}, pr},
		{"approve", "pull_request_review_approved", func() {
			r.do(r.revToken, http.MethodPost, fmt.Sprintf("%s/pulls/%d/reviews", repo, pr), map[string]any{"event": "APPROVED", "body": "lgtm"})
		}, pr},
		{"request changes", "pull_request_review_rejected", func() {
			r.do(r.revToken, http.MethodPost, fmt.Sprintf("%s/pulls/%d/reviews", repo, pr), map[string]any{"event": "REQUEST_CHANGES", "body": "fix it"})
		}, pr},
		{"review comment", "pull_request_review_comment", func() {
			r.do(r.revToken, http.MethodPost, fmt.Sprintf("%s/pulls/%d/reviews", repo, pr), map[string]any{"event": "COMMENT", "body": "a note"})
		}, pr},
		{"commit status", "status", func() {
			if err := r.forge.PostStatus(r.ctx, r.ownerToken, "owner", "demo", "feature-1", "ci/test", "success", "", "ok"); err != nil {
				t.Fatal(err)
			}
		}, 0},
	}
	for _, s := range steps {
		t.Logf("step %s", s.name)
		s.act()
		r.expectDelivery(s.eventType, http.StatusNoContent)
		r.expectWake(s.wake)
	}
	if strings.Contains(r.log.String(), "rejected") {
		t.Errorf("good deliveries were rejected:\n%s", r.log.String())
	}
}

func TestForgeWrongSecretRejected(t *testing.T) {
	r := startForgeRun(t)
	// A hook signing with another secret, delivering to the same handler. It
	// is the only hook, so any wake would be its doing.
	r.install("/hook?wrong", "another-secret")
	if err := r.forge.CreateBranchWithFile(r.ctx, r.ownerToken, "owner", "demo", "feature-1", "a.txt", "one\n"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.forge.CreatePR(r.ctx, r.ownerToken, "owner", "demo", "feature-1", "main", "add a", ""); err != nil {
		t.Fatal(err)
	}
	r.expectDelivery("pull_request", http.StatusUnauthorized)
	if before := r.barrier(sentinelPR); len(before) > 0 {
		t.Errorf("wrongly signed delivery woke %v", before)
	}
	logged := r.log.String()
	if !strings.Contains(logged, "rejected delivery") || !strings.Contains(logged, "wrong signature") {
		t.Errorf("rejection not logged:\n%s", logged)
	}
	if strings.Contains(logged, "another-secret") || strings.Contains(logged, testSecret) {
		t.Errorf("log shows a secret:\n%s", logged)
	}
	t.Logf("log: %s", logged)
}
