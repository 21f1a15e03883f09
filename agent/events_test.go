package agent

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"pool/internal/sandbox"
)

// Event lines as opencode 1.18.33 sent them on GET /event (captured from
// the test agent server; session.error is shaped after its /doc).
const (
	connectedLine  = `data: {"id":"evt_229076181001tpjDvJOeo7n6Ij","type":"server.connected","properties":{}}`
	heartbeatLine  = `data: {"id":"evt_229078898001q27SQcSnslqkZj","type":"server.heartbeat","properties":{}}`
	busyLine       = `data: {"id":"evt_2290761cf001cHbBMajPFQyoGY","type":"session.status","properties":{"sessionID":"ses_dd6f89e6affeX9Dpderwd48l57","status":{"type":"busy"}}}`
	idleStatusLine = `data: {"id":"evt_2290767de001QUjZJgJyW2zpDw","type":"session.status","properties":{"sessionID":"ses_dd6f89e6affeX9Dpderwd48l57","status":{"type":"idle"}}}`
	idleLine       = `data: {"id":"evt_2290767de002IA3p31szZa3vUt","type":"session.idle","properties":{"sessionID":"ses_dd6f89e6affeX9Dpderwd48l57"}}`
	messageLine    = `data: {"id":"evt_2290761b4001BJ0BDR3HB9FKqF","type":"message.updated","properties":{"sessionID":"ses_dd6f89e6affeX9Dpderwd48l57","info":{"id":"msg_2290761ac001BtRtgvpyZE08z2","role":"user","sessionID":"ses_dd6f89e6affeX9Dpderwd48l57","time":{"created":1795984679340},"agent":"ca-pr-self-reviewer","model":{"providerID":"fake","modelID":"fake-model"}}}}`
	pluginLine     = `data: {"id":"evt_2290764f700174svK6e5lV4zEE","type":"plugin.added","properties":{"id":"core/config-reference"}}`
	errorLine      = `data: {"id":"evt_1","type":"session.error","properties":{"sessionID":"ses_1","error":{"name":"UnknownError","data":{"message":"boom"}}}}`
	brokenLine     = `data: {"id":"evt_2","type":"session.idle","properties":`

	// As GET /global/event wraps them (opencode 1.18.33).
	globalConnectedLine = `data: {"payload":{"id":"evt_22c93e56a001BKcFDhXczcgUcx","type":"server.connected","properties":{}}}`
	globalBusyLine      = `data: {"directory":"/tmp/explore-git/trees/pr-1","project":"1a89a6847325a8ce2b47f8fad670980aa62a0ddf","payload":{"id":"evt_22c93ea77001FyYZa5WyH4RqQ1","type":"session.status","properties":{"sessionID":"ses_dd36c22c0ffeS4e2DXN283h7JN","status":{"type":"busy"}}}}`
	globalSyncLine      = `data: {"directory":"/tmp/explore-git/trees/pr-1","project":"1a89a6847325a8ce2b47f8fad670980aa62a0ddf","payload":{"type":"sync","syncEvent":{"id":"evt_22c93ea10001HNLTZ69HFEtv0b","type":"session.updated.1","seq":1}}}`
)

const realSession = "ses_dd6f89e6affeX9Dpderwd48l57"

var reconnected = Event{Type: EventReconnected}

func TestDecodeEvent(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    Event
		wantErr bool
	}{
		{"connected", connectedLine, Event{Type: "server.connected"}, false},
		{"heartbeat", heartbeatLine, Event{Type: "server.heartbeat"}, false},
		{"busy", busyLine, Event{Type: EventSessionStatus, SessionID: realSession, Status: "busy"}, false},
		{"idle status", idleStatusLine, Event{Type: EventSessionStatus, SessionID: realSession, Status: "idle"}, false},
		{"idle", idleLine, Event{Type: EventSessionIdle, SessionID: realSession}, false},
		{"error", errorLine, Event{Type: EventSessionError, SessionID: "ses_1"}, false},
		{"other type, not decoded further", messageLine, Event{Type: "message.updated"}, false},
		{"plugin", pluginLine, Event{Type: "plugin.added"}, false},
		{"global: connected", globalConnectedLine, Event{Type: "server.connected"}, false},
		{"global: busy", globalBusyLine, Event{Type: EventSessionStatus, SessionID: "ses_dd36c22c0ffeS4e2DXN283h7JN", Status: "busy"}, false},
		{"global: sync copy, not decoded further", globalSyncLine, Event{Type: "sync"}, false},
		{"global: empty payload", `data: {"directory":"/d","payload":{}}`, Event{}, true},
		{"truncated JSON", brokenLine, Event{}, true},
		{"no type", `data: {"properties":{}}`, Event{}, true},
		{"status without status", `data: {"type":"session.status","properties":{"sessionID":"ses_1"}}`, Event{}, true},
		{"status of the wrong shape", `data: {"type":"session.status","properties":{"sessionID":"ses_1","status":"busy"}}`, Event{}, true},
		{"not JSON", `data: hello`, Event{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeEvent(strings.TrimPrefix(tt.line, "data: "))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("decodeEvent = %+v, %v; want %+v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestSSEData(t *testing.T) {
	lines := []string{
		"data: a", "",
		": a comment", "",
		"", // stray blank line
		"data:b", "data: c", "",
		"event: message", "id: 7", "retry: 100", "data: d", "",
		"data: unfinished",
	}
	var d sseData
	var got []string
	for _, l := range lines {
		if p, ok, _ := d.add(l); ok {
			got = append(got, p)
		}
	}
	if want := []string{"a", "b\nc", "d"}; !reflect.DeepEqual(got, want) {
		t.Errorf("payloads %q, want %q", got, want)
	}
}

func TestReconnectDelay(t *testing.T) {
	tests := []struct {
		name     string
		failures int
		jitter   float64
		want     time.Duration
	}{
		{"first, no jitter", 0, 0, 250 * time.Millisecond},
		{"first, half jitter", 0, 0.5, 187500 * time.Microsecond},
		{"second", 1, 0, 500 * time.Millisecond},
		{"fifth", 4, 0, 4 * time.Second},
		{"capped", 5, 0, 5 * time.Second},
		{"capped, most jitter", 5, 0.999999, 2500*time.Millisecond + 2500*time.Nanosecond},
		{"far beyond the cap", 200, 0, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reconnectDelay(tt.failures, tt.jitter); got != tt.want {
				t.Errorf("reconnectDelay(%d, %v) = %s, want %s", tt.failures, tt.jitter, got, tt.want)
			}
		})
	}
}

// pauseLine makes fakeEvents pause 300 ms before the next line.
const pauseLine = "PAUSE"

// sseConn is what fakeEvents answers to one connection: status (0 for 200)
// and, for 200, lines, then either close or hang until the client leaves.
type sseConn struct {
	status int
	lines  []string
	hang   bool
}

// fakeEvents serves GET /global/event, answering connection n (from 0) with
// script(n). It sends each connection's number on arrived once it has
// written that connection's lines.
type fakeEvents struct {
	script  func(n int) sseConn
	arrived chan int
	done    chan struct{} // closed at the end of the test, to free hanging handlers

	mu      sync.Mutex // guards conns, headers and paths
	conns   int
	headers []http.Header
	paths   []string
}

func newFakeEvents(t *testing.T, script func(n int) sseConn) (*fakeEvents, *httptest.Server) {
	t.Helper()
	f := &fakeEvents{script: script, arrived: make(chan int, 100), done: make(chan struct{})}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(f.done) }) // runs first
	return f, srv
}

func (f *fakeEvents) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	n := f.conns
	f.conns++
	f.headers = append(f.headers, r.Header.Clone())
	f.paths = append(f.paths, r.URL.RequestURI())
	f.mu.Unlock()
	c := f.script(n)
	if c.status != 0 {
		http.Error(w, "unavailable", c.status)
		f.announce(n)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, l := range c.lines {
		if l == pauseLine {
			w.(http.Flusher).Flush()
			time.Sleep(300 * time.Millisecond)
			continue
		}
		_, _ = io.WriteString(w, l+"\n")
	}
	w.(http.Flusher).Flush()
	f.announce(n)
	if c.hang {
		select {
		case <-r.Context().Done():
		case <-f.done:
		}
	}
}

// announce says connection n got its lines, unless nobody listens.
func (f *fakeEvents) announce(n int) {
	select {
	case f.arrived <- n:
	default:
	}
}

func (f *fakeEvents) connections() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns
}

// sse frames data lines as the server does: each followed by a blank line.
func sse(lines ...string) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l, "")
	}
	return out
}

// testStream reconnects at once and declares the stream dead after idle.
func testStream(idle time.Duration, buffer int) streamConfig {
	return streamConfig{buffer: buffer, idle: idle, backoff: func(int) time.Duration { return time.Millisecond }, maxEvent: 1 << 20}
}

// subscribe starts events for the test; the cleanup stops them and checks
// the channel gets closed.
func subscribe(t *testing.T, c *Client, cfg streamConfig) (<-chan Event, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	events := c.events(ctx, cfg)
	t.Cleanup(func() {
		cancel()
		expectClosed(t, events)
	})
	return events, cancel
}

// collect reads n events, failing after a generous wait.
func collect(t *testing.T, events <-chan Event, n int) []Event {
	t.Helper()
	var got []Event
	for len(got) < n {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("channel closed after %+v", got)
			}
			got = append(got, ev)
		case <-time.After(10 * time.Second):
			t.Fatalf("got %+v, still waiting for %d more", got, n-len(got))
		}
	}
	return got
}

// expectClosed drains events until the channel is closed.
func expectClosed(t *testing.T, events <-chan Event) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("the event channel was not closed after its context ended")
		}
	}
}

func TestEventsDeliverAndReconnect(t *testing.T) {
	f, srv := newFakeEvents(t, func(n int) sseConn {
		if n == 0 { // the server ends the stream after these
			return sseConn{lines: sse(connectedLine, heartbeatLine, busyLine, brokenLine, messageLine, pluginLine,
				idleStatusLine, idleLine, errorLine, globalSyncLine, globalBusyLine)}
		}
		return sseConn{lines: sse(connectedLine), hang: true}
	})
	events, _ := subscribe(t, New(srv.URL, "secret", Options{Transport: srv.Client().Transport}), testStream(time.Minute, 16))

	got := collect(t, events, 7)
	want := []Event{
		reconnected,
		{Type: EventSessionStatus, SessionID: realSession, Status: "busy"},
		{Type: EventSessionStatus, SessionID: realSession, Status: "idle"},
		{Type: EventSessionIdle, SessionID: realSession},
		{Type: EventSessionError, SessionID: "ses_1"},
		{Type: EventSessionStatus, SessionID: "ses_dd36c22c0ffeS4e2DXN283h7JN", Status: "busy"},
		reconnected,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events\n%+v\nwant\n%+v", got, want)
	}
	f.mu.Lock()
	h, path := f.headers[0], f.paths[0]
	f.mu.Unlock()
	if path != "/global/event" {
		t.Errorf("subscribed to %s, want /global/event (every directory's events)", path)
	}
	if user, pass, _ := (&http.Request{Header: h}).BasicAuth(); user != "opencode" || pass != "secret" || h.Get("Accept") != "text/event-stream" {
		t.Errorf("request auth %s:%s, Accept %q", user, pass, h.Get("Accept"))
	}
}

func TestEventsRetryAfterErrorAnswer(t *testing.T) {
	_, srv := newFakeEvents(t, func(n int) sseConn {
		if n < 2 {
			return sseConn{status: http.StatusServiceUnavailable}
		}
		return sseConn{lines: sse(connectedLine, idleLine), hang: true}
	})
	events, _ := subscribe(t, New(srv.URL, "", Options{Transport: srv.Client().Transport}), testStream(time.Minute, 16))
	got := collect(t, events, 2)
	if want := []Event{reconnected, {Type: EventSessionIdle, SessionID: realSession}}; !reflect.DeepEqual(got, want) {
		t.Errorf("events %+v, want %+v", got, want)
	}
}

func TestEventsWatchdogReconnectsASilentStream(t *testing.T) {
	f, srv := newFakeEvents(t, func(int) sseConn {
		return sseConn{lines: sse(connectedLine), hang: true} // then silence, not even a heartbeat
	})
	var logs bytes.Buffer // written by the stream's goroutine only, read once it ended
	c := New(srv.URL, "", Options{Transport: srv.Client().Transport}).WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	events, cancel := subscribe(t, c, testStream(100*time.Millisecond, 16))

	got := collect(t, events, 3)
	if want := []Event{reconnected, reconnected, reconnected}; !reflect.DeepEqual(got, want) {
		t.Errorf("events %+v, want %+v", got, want)
	}
	if n := f.connections(); n < 3 {
		t.Errorf("%d connections, want at least 3", n)
	}
	cancel()
	expectClosed(t, events)
	if !strings.Contains(logs.String(), "no data for 100ms") {
		t.Errorf("log does not name the silence:\n%s", logs.String())
	}
}

func TestEventsCancelClosesTheChannel(t *testing.T) {
	_, srv := newFakeEvents(t, func(int) sseConn { return sseConn{lines: sse(connectedLine), hang: true} })
	events, cancel := subscribe(t, New(srv.URL, "", Options{Transport: srv.Client().Transport}), testStream(time.Minute, 16))
	collect(t, events, 1)
	cancel()
	expectClosed(t, events)
}

func TestEventsCancelWhileServerIsDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens there now
	events, cancel := subscribe(t, New(srv.URL, "", Options{}), testStream(time.Minute, 16))
	cancel()
	expectClosed(t, events)
}

func TestEventsSlowConsumerGetsReconnectedForDrops(t *testing.T) {
	f, srv := newFakeEvents(t, func(n int) sseConn {
		if n == 0 {
			var lines []string
			for _, id := range []string{"ses_1", "ses_2", "ses_3", "ses_4", "ses_5"} {
				lines = append(lines, `data: {"type":"session.idle","properties":{"sessionID":"`+id+`"}}`)
			}
			return sseConn{lines: sse(append([]string{connectedLine}, lines...)...)}
		}
		return sseConn{hang: true} // says nothing, so owes no "reconnected" of its own
	})
	events, _ := subscribe(t, New(srv.URL, "", Options{Transport: srv.Client().Transport}), testStream(time.Minute, 2))

	// The second connection means the stream read all of the first one
	// while nobody consumed.
	waitConnection(t, f, 1)
	got := collect(t, events, 3)
	want := []Event{reconnected, {Type: EventSessionIdle, SessionID: "ses_1"}, reconnected}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events %+v, want %+v", got, want)
	}
	select {
	case ev := <-events:
		t.Errorf("unexpected event %+v after the reconnect", ev)
	case <-time.After(100 * time.Millisecond):
	}
}

// waitConnection waits until connection n has got its lines.
func waitConnection(t *testing.T, f *fakeEvents, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-f.arrived:
			if got == n {
				return
			}
		case <-timeout:
			t.Fatalf("connection %d did not come", n)
		}
	}
}

func TestEventsIgnoreTheClientTimeout(t *testing.T) {
	f, srv := newFakeEvents(t, func(int) sseConn {
		return sseConn{lines: append(sse(connectedLine), pauseLine, idleLine, ""), hang: true}
	})
	c := New(srv.URL, "", Options{Transport: srv.Client().Transport})
	c.hc.Timeout = 50 * time.Millisecond // the calls' timeout, shorter than the pause
	events, _ := subscribe(t, c, testStream(time.Minute, 16))
	got := collect(t, events, 2)
	if want := []Event{reconnected, {Type: EventSessionIdle, SessionID: realSession}}; !reflect.DeepEqual(got, want) {
		t.Errorf("events %+v, want %+v", got, want)
	}
	if n := f.connections(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// eventsAgent is the agent the real server knows.
const eventsAgent = "ca-pr-self-reviewer"

// TestRealServerEvents subscribes to a real agent server, sees a session go
// idle, and reconnects across a restart of the server.
func TestRealServerEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("agent: the real opencode server is skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	srv := startEventsServer(ctx, t)
	t.Cleanup(func() { stopEventsServer(t, srv) }) // the server running by then
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := New(srv.URL, "pw", Options{}).WithLogger(log)
	evCtx, stop := context.WithCancel(ctx)
	events := c.Events(evCtx)
	t.Cleanup(func() { stop(); expectClosed(t, events) })

	waitEvent(t, events, func(ev Event) bool { return ev.Type == EventReconnected })
	promptUntilIdle(ctx, t, c, events, "first")

	restartAt := time.Now()
	srv2, err := srv.Restart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv = srv2
	restartTook := time.Since(restartAt)
	waitEvent(t, events, func(ev Event) bool { return ev.Type == EventReconnected })
	// The stream may reconnect while Restart still waits for the server
	// to know its agent, so this is an upper bound.
	t.Logf("reconnected read %s after the restart began; the restart (stop, start, ready) took %s",
		time.Since(restartAt).Round(time.Millisecond), restartTook.Round(time.Millisecond))
	promptUntilIdle(ctx, t, c, events, "after restart")
}

// startEventsServer starts a model that answers at once and an agent server
// for it.
func startEventsServer(ctx context.Context, t *testing.T) *sandbox.AgentServer {
	t.Helper()
	m, err := sandbox.StartModel(func(string, []string) sandbox.Turn { return sandbox.Turn{Text: "Looks good."} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	srv, err := sandbox.StartAgentServer(ctx, t.TempDir(), sandbox.AgentOptions{
		ModelURL: m.URL, AgentName: eventsAgent, Password: "pw",
	})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func stopEventsServer(t *testing.T, srv *sandbox.AgentServer) {
	if t.Failed() {
		t.Logf("opencode log tail:\n%s", srv.LogTail())
	}
	if err := srv.Stop(); err != nil {
		t.Error(err)
	}
}

// promptUntilIdle prompts a new session and waits for its session.idle
// event, logging how long after prompt_async answered the idle status and
// the idle event came.
func promptUntilIdle(ctx context.Context, t *testing.T, c *Client, events <-chan Event, name string) {
	t.Helper()
	// In a directory of its own, as the pool's sessions are: the stream
	// carries every directory's events.
	s, err := c.CreateSession(ctx, "events "+name, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PromptAsync(ctx, s.ID, eventsAgent, "Review PR #1"); err != nil {
		t.Fatal(err)
	}
	accepted := time.Now()
	var busy, idleStatus time.Time
	waitEvent(t, events, func(ev Event) bool {
		if ev.SessionID == s.ID && ev.Type == EventSessionStatus && ev.Status == "busy" && busy.IsZero() {
			busy = time.Now()
		}
		if ev.SessionID == s.ID && ev.Type == EventSessionStatus && ev.Status == "idle" {
			idleStatus = time.Now()
		}
		return ev.SessionID == s.ID && ev.Type == EventSessionIdle
	})
	idle := time.Now()
	if busy.IsZero() || idleStatus.IsZero() {
		t.Errorf("%s: no busy or no idle status event before session.idle", name)
	}
	t.Logf("%s: after prompt_async answered: first busy %s, idle status %s, session.idle %s", name,
		busy.Sub(accepted).Round(time.Millisecond), idleStatus.Sub(accepted).Round(time.Millisecond),
		idle.Sub(accepted).Round(time.Millisecond))
}

// waitEvent reads events until match says yes, for at most
// sandbox.EndToEndLimit: a restarted server may take minutes to answer on
// a loaded machine.
func waitEvent(t *testing.T, events <-chan Event, match func(Event) bool) {
	t.Helper()
	timeout := time.After(sandbox.EndToEndLimit)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("event channel closed")
			}
			t.Logf("event %+v", ev)
			if match(ev) {
				return
			}
		case <-timeout:
			t.Fatal("no matching event within a minute")
		}
	}
}
