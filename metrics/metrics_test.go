package metrics

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func TestForgeEndpoint(t *testing.T) {
	tests := []struct{ method, path, want string }{
		{"GET", "/api/v1/version", "version"},
		{"GET", "/api/v1/user", "user"},
		{"GET", "/api/v1/repos/o/r", "repo"},
		{"GET", "/api/v1/repos/o/r/pulls", "pulls.list"},
		{"GET", "/api/v1/repos/o/r/pulls/17", "pull.get"},
		{"POST", "/api/v1/repos/o/r/pulls/17/merge", "pull.merge"},
		{"DELETE", "/api/v1/repos/o/r/pulls/17/merge", "pull.merge_cancel"},
		{"GET", "/api/v1/repos/o/r/pulls/17/reviews", "reviews.list"},
		{"GET", "/api/v1/repos/o/r/pulls/17/reviews/9/comments", "reviews.comments"},
		{"GET", "/api/v1/repos/o/r/issues", "issues.list"},
		{"GET", "/api/v1/repos/o/r/issues/17/comments", "comments.list"},
		{"POST", "/api/v1/repos/o/r/issues/17/comments", "comment.create"},
		{"DELETE", "/api/v1/repos/o/r/issues/comments/4411", "comment.delete"},
		{"GET", "/api/v1/repos/o/r/commits/0123abcd/statuses", "statuses.read"},
		{"GET", "/api/v1/repos/o/r/statuses/0123abcd", "statuses.read"},
		{"POST", "/api/v1/repos/o/r/statuses/0123abcd", "status.write"},
		{"GET", "/api/v1/repos/o/r/pulls/17/files", "other"},
		{"PUT", "/api/v1/repos/o/r/pulls/17", "other"},
		{"GET", "/o/r.git/info/refs", "other"},
		{"GET", "/api/v1/users/someone/tokens/1", "other"},
	}
	for _, tt := range tests {
		if got := ForgeEndpoint(tt.method, tt.path); got != tt.want {
			t.Errorf("ForgeEndpoint(%s %s) = %q, want %q", tt.method, tt.path, got, tt.want)
		}
	}
}

func TestAgentEndpoint(t *testing.T) {
	tests := []struct{ method, path, want string }{
		{"POST", "/session", "session.create"},
		{"GET", "/session", "session.list"},
		{"GET", "/session/status", "session.status"},
		{"GET", "/session/ses_abc/message", "session.messages"},
		{"POST", "/session/ses_abc/prompt_async", "session.prompt"},
		{"POST", "/session/ses_abc/abort", "session.abort"},
		{"DELETE", "/session/ses_abc", "session.delete"},
		{"GET", "/global/event", "events"},
		{"GET", "/experimental/session", "session.list"},
		{"POST", "/instance/dispose", "instance.dispose"},
		{"GET", "/permission", "permissions"},
		{"GET", "/session/ses_abc/children", "other"},
	}
	for _, tt := range tests {
		if got := AgentEndpoint(tt.method, tt.path); got != tt.want {
			t.Errorf("AgentEndpoint(%s %s) = %q, want %q", tt.method, tt.path, got, tt.want)
		}
	}
}

func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value is the sample of name whose labels are exactly labels, or -1.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	for _, m := range fams[name].GetMetric() {
		var have []string
		for _, l := range m.GetLabel() {
			have = append(have, l.GetName(), l.GetValue())
		}
		if strings.Join(have, ",") != strings.Join(labels, ",") {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return -1
}

func TestCountersAndGauges(t *testing.T) {
	m := New(func() Gauges {
		return Gauges{SlotsBusy: 2, SlotsTotal: 4, PRsByState: map[string]int{"ci_pending": 3, "unreviewed": 0},
			AgentServers: []AgentServer{{URL: "http://a:1", Up: true, Slots: 3, Sessions: 2, Started: 9}, {URL: "http://b:2", Slots: 1, Started: 4, Lost: 1}}}
	})
	m.SessionStarted("review")
	m.SessionStarted("review")
	m.SessionStarted("fix")
	m.SessionFinished("idle")
	m.SessionFinished("timeout")
	m.MergeCalled("merged")
	m.MergeCalled("not_ready")
	m.RetryAttempted()
	m.ClaimRace(true)
	m.ClaimRace(false)
	m.ClaimRace(true)
	m.CycleDone(120 * time.Millisecond)
	m.HeadUpdated()
	m.TrainFormed()
	for range 3 {
		m.CarFormed()
	}
	m.CarEjected()
	fams := scrape(t, m)
	tests := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"pool_slots_busy", nil, 2},
		{"pool_slots_total", nil, 4},
		{"pool_prs", []string{"state", "ci_pending"}, 3},
		{"pool_prs", []string{"state", "unreviewed"}, 0},
		{"pool_sessions_started_total", []string{"kind", "review"}, 2},
		{"pool_sessions_started_total", []string{"kind", "fix"}, 1},
		{"pool_sessions_finished_total", []string{"outcome", "timeout"}, 1},
		{"pool_merge_calls_total", []string{"outcome", "not_ready"}, 1},
		{"pool_merge_retry_attempts_total", nil, 1},
		{"pool_claim_races_total", []string{"result", "won"}, 2},
		{"pool_claim_races_total", []string{"result", "lost"}, 1},
		{"pool_cycle_duration_seconds", nil, 1},
		{"pool_head_updates_total", nil, 1},
		{"pool_trains_formed_total", nil, 1},
		{"pool_train_cars_total", nil, 3},
		{"pool_train_ejections_total", nil, 1},
		{"pool_agent_event_stream_connected", nil, 0},
		{"pool_agent_server_up", []string{"server", "http://a:1"}, 1},
		{"pool_agent_server_up", []string{"server", "http://b:2"}, 0},
		{"pool_agent_server_slots", []string{"server", "http://a:1"}, 3},
		{"pool_agent_server_sessions", []string{"server", "http://a:1"}, 2},
		{"pool_agent_server_sessions_started_total", []string{"server", "http://b:2"}, 4},
		{"pool_agent_server_sessions_lost_total", []string{"server", "http://b:2"}, 1},
	}
	for _, tt := range tests {
		if got := value(fams, tt.name, tt.labels...); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
}

func TestTransportsCountByEndpointAndCode(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/merge") {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	m := New(nil)
	hc := &http.Client{Transport: m.ForgeTransport(nil)}
	for _, path := range []string{"/api/v1/repos/o/r/pulls/1", "/api/v1/repos/o/r/pulls/2", "/api/v1/repos/o/r/pulls/2/merge"} {
		method := "GET"
		if strings.HasSuffix(path, "merge") {
			method = "POST"
		}
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	dead := &http.Client{Transport: m.AgentTransport(nil)}
	if _, err := dead.Get("http://127.0.0.1:1/session/status"); err == nil {
		t.Fatal("a request to a closed port answered")
	}
	fams := scrape(t, m)
	for _, c := range []struct {
		name string
		l    []string
		want float64
	}{
		{"pool_forge_requests_total", []string{"code", "200", "endpoint", "pull.get"}, 2},
		{"pool_forge_requests_total", []string{"code", "405", "endpoint", "pull.merge"}, 1},
		{"pool_agent_requests_total", []string{"code", "error", "endpoint", "session.status"}, 1},
	} {
		if got := value(fams, c.name, c.l...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.l, got, c.want)
		}
	}
}

func TestEventStreamIsFollowed(t *testing.T) {
	lines := make(chan string)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for l := range lines {
			if l == "" {
				return // the server ends the stream
			}
			io.WriteString(w, l+"\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	defer close(lines)
	m := New(nil)
	hc := &http.Client{Transport: m.AgentTransport(nil)}
	for round := 1; round <= 2; round++ {
		resp, err := hc.Get(srv.URL + "/global/event")
		if err != nil {
			t.Fatal(err)
		}
		if !m.EventStreamConnected() {
			t.Errorf("round %d: not connected while the stream is open", round)
		}
		lines <- `data: {"type":"server.connected"}`
		if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		lines <- "" // break the stream
		io.Copy(io.Discard, resp.Body)
		if m.EventStreamConnected() {
			t.Errorf("round %d: still connected after the stream ended", round)
		}
		resp.Body.Close()
	}
	if got := value(scrape(t, m), "pool_agent_event_stream_reconnects_total"); got != 1 {
		t.Errorf("reconnects = %v after two connections, want 1", got)
	}
}

func TestWebhookVerdicts(t *testing.T) {
	m := New(nil)
	codes := []int{http.StatusNoContent, http.StatusNoContent, http.StatusUnauthorized, http.StatusAccepted, http.StatusTeapot}
	for _, code := range codes {
		h := m.WebhookHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/hook", nil))
	}
	fams := scrape(t, m)
	for verdict, want := range map[string]float64{"woke": 2, "rejected": 1, "ignored": 1, "other": 1} {
		if got := value(fams, "pool_webhook_deliveries_total", "verdict", verdict); got != want {
			t.Errorf("verdict %s = %v, want %v", verdict, got, want)
		}
	}
}
