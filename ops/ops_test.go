package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pool/statuspage"
)

var now = time.Date(2026, 12, 1, 10, 42, 0, 0, time.UTC)

func sample() statuspage.Status {
	return statuspage.Status{Instance: "pool-1", Version: "v1.2.3", Repo: "acme/widgets", ForgeURL: "https://forge.test",
		AgentURL: "http://127.0.0.1:4096", Started: now.Add(-3 * time.Hour), Now: now, LastCycle: now.Add(-4 * time.Second),
		Workers: 2,
		Slots:   []statuspage.Slot{{PR: 7, Title: "Add <script>alert(1)</script>", Kind: "review", Session: "ses_a", Since: now.Add(-90 * time.Second)}},
		PRs: []statuspage.PR{
			{Number: 7, Title: "Add <script>alert(1)</script>", Head: "0123456789abcdef", State: "unreviewed", Next: "reviewing since 10:40 UTC"},
			{Number: 8, Title: "Fix it", State: "ci_pending", Attempts: 3, LastAnswer: "pending", Next: "approved; waiting for ci/test"},
			{Number: 9, Title: "Old", State: "merged", Next: "merged", Done: true, Merged: true},
		},
		Warnings: []statuspage.Warning{{Time: now, Level: "WARN", Message: "cycle failed; backing off", Attrs: "err=boom"}}}
}

func get(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec
}

func TestPageShowsSlotsPRsAndWarnings(t *testing.T) {
	srv := &Server{Status: sample}
	rec := get(t, srv.Handler(), "/")
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("GET / = %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	page := rec.Body.String()
	for _, want := range []string{
		`<meta http-equiv="refresh" content="5">`,
		"instance <b>pool-1</b>", "version v1.2.3", "up 3h00m", "slots 1/2 busy", "last cycle 4s ago",
		"ses_a", "1m30s", `<tr id="pr-8">`, "approved; waiting for ci/test", "0123456789<",
		`<tr id="pr-9" class="done">`, "cycle failed; backing off", "err=boom",
		"Add &lt;script&gt;alert(1)&lt;/script&gt;",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") {
		t.Error("a PR title's markup reached the page unescaped")
	}
}

// TestPageShowsTheTrain: PRs riding a merge train show their car and
// train in their rows, and the train is listed, front car first.
func TestPageShowsTheTrain(t *testing.T) {
	st := sample()
	ride := func(n, car int) statuspage.PR {
		return statuspage.PR{Number: n, State: "merge_queued", Car: car, Cars: 2, Train: "main",
			Next: fmt.Sprintf("approved, checks green; car %d of 2 on main's merge train", car)}
	}
	st.PRs = append(st.PRs, ride(12, 2), ride(11, 1))
	srv := &Server{Status: func() statuspage.Status { return st }}
	page := get(t, srv.Handler(), "/").Body.String()
	for _, want := range []string{
		"<h2>Merge trains</h2>", `<td>main</td><td><a href="#pr-11">#11</a>, <a href="#pr-12">#12</a></td>`,
		"car 1 of 2 on main&#39;s merge train", "car 2 of 2 on main&#39;s merge train",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if page := get(t, (&Server{Status: sample}).Handler(), "/").Body.String(); strings.Contains(page, "Merge trains") {
		t.Errorf("a page with no train lists trains")
	}
}

func TestPageWhenIdle(t *testing.T) {
	srv := &Server{Status: func() statuspage.Status { return statuspage.Status{Repo: "a/b", Workers: 3, Now: now, Started: now} }}
	page := get(t, srv.Handler(), "/").Body.String()
	for _, want := range []string{"all slots free", "no pull requests tracked", "last cycle none yet", "slots 0/3 busy"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestAPIStatusRoundTripsThroughFetch(t *testing.T) {
	srv := httptest.NewServer((&Server{Status: sample}).Handler())
	defer srv.Close()
	got, err := Fetch(context.Background(), srv.Client(), srv.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	want := sample()
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	if !bytes.Equal(a, b) {
		t.Errorf("fetched status differs:\n got %s\nwant %s", a, b)
	}
	if _, err := Fetch(context.Background(), srv.Client(), srv.URL+"/nowhere"); err == nil {
		t.Error("Fetch of a path that is no ops listener did not fail")
	}
}

func TestHealthAndReadiness(t *testing.T) {
	var agentDown atomic.Bool
	probes := 0
	srv := &Server{Status: sample, CacheFor: time.Nanosecond, Checks: []Check{
		{Name: "forge", Probe: func(context.Context) error { probes++; return nil }},
		{Name: "agent", Probe: func(context.Context) error {
			if agentDown.Load() {
				return errors.New("dial tcp 127.0.0.1:4096: connection refused")
			}
			return nil
		}},
		CycleFresh(sample, 30*time.Second),
	}}
	h := srv.Handler()
	if rec := get(t, h, "/healthz"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"alive"`) {
		t.Errorf("/healthz = %d %s", rec.Code, rec.Body.String())
	}
	if rec := get(t, h, "/readyz"); rec.Code != http.StatusOK {
		t.Errorf("/readyz = %d %s, want 200", rec.Code, rec.Body.String())
	}
	agentDown.Store(true)
	time.Sleep(time.Millisecond)
	rec := get(t, h, "/readyz")
	var rd readiness
	if err := json.Unmarshal(rec.Body.Bytes(), &rd); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusServiceUnavailable || rd.Ready || rd.Checks[1].OK || !strings.Contains(rd.Checks[1].Reason, "connection refused") || !rd.Checks[0].OK {
		t.Errorf("/readyz with the agent down = %d %+v", rec.Code, rd)
	}
}

func TestReadinessIsCached(t *testing.T) {
	probes := 0
	srv := &Server{Status: sample, CacheFor: time.Hour, Checks: []Check{{Name: "forge", Probe: func(context.Context) error { probes++; return nil }}}}
	h := srv.Handler()
	for range 5 {
		get(t, h, "/readyz")
	}
	if probes != 1 {
		t.Errorf("5 readiness requests within the cache time probed the forge %d times, want 1", probes)
	}
}

func TestCycleFresh(t *testing.T) {
	tests := []struct {
		name string
		last time.Time
		ok   bool
	}{
		{"recent", now.Add(-10 * time.Second), true},
		{"stale", now.Add(-2 * time.Minute), false},
		{"never", time.Time{}, false},
	}
	for _, tt := range tests {
		c := CycleFresh(func() statuspage.Status { return statuspage.Status{Now: now, LastCycle: tt.last} }, 90*time.Second)
		if err := c.Probe(context.Background()); (err == nil) != tt.ok {
			t.Errorf("%s: probe = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

func TestWarningsKeepTheLastFewNewestFirst(t *testing.T) {
	var out bytes.Buffer
	w := NewWarnings(3)
	log := slog.New(w.Wrap(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelError}))).With("component", "pool")
	log.Info("not kept")
	for i := range 5 {
		log.Warn("warning", "n", i)
	}
	log.WithGroup("g").Error("broken", "err", strings.Repeat("x", 1000))
	got := w.List()
	if len(got) != 3 {
		t.Fatalf("kept %d warnings, want 3", len(got))
	}
	if got[0].Message != "broken" || got[0].Level != "ERROR" || !strings.HasPrefix(got[0].Attrs, "component=pool g.err=xxx") || len(got[0].Attrs) > 400 {
		t.Errorf("newest = %+v", got[0])
	}
	if got[1].Attrs != "component=pool n=4" || got[2].Attrs != "component=pool n=3" {
		t.Errorf("order: %+v", got)
	}
	if strings.Contains(out.String(), "warning") || !strings.Contains(out.String(), "broken") {
		t.Errorf("the wrapped handler's own level was not kept:\n%s", out.String())
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	st := sample()
	st.PRs[1].Title = "multi\nline\ttitle"
	if err := WriteTable(&b, st); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"pool pool-1 on acme/widgets (version v1.2.3, up 3h00m)", "SLOTS 1/2 busy",
		"#7  review", "ses_a", "#8  ci_pending", "approved; waiting for ci/test", "WARNINGS 1", "cycle failed; backing off"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 42 * time.Second: "42s", 185 * time.Second: "3m05s",
		2*time.Hour + 7*time.Minute: "2h07m", 76 * time.Hour: "3d04h",
	} {
		if got := Age(d); got != want {
			t.Errorf("Age(%s) = %q, want %q", d, got, want)
		}
	}
}
