package faultproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const guard = 10 * time.Second

// upstream is a test server that counts the requests it sees.
type upstream struct {
	*httptest.Server
	hits atomic.Int64
	// events feeds GET /event: each string is sent as one event.
	events chan string
}

const jsonBody = `{"items":[1,2,3],"note":"a body long enough to cut in the middle"}`

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{events: make(chan string)}
	mux := http.NewServeMux()
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", r.Method+" "+r.URL.RawQuery+" "+string(body))
		io.WriteString(w, jsonBody)
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/event", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case ev := <-u.events:
				fmt.Fprintf(w, "data: %s\n\n", ev)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	})
	u.Server = httptest.NewServer(mux)
	t.Cleanup(u.Close)
	return u
}

func startProxy(t *testing.T, opts Options) *Proxy {
	t.Helper()
	p, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// get makes one request with a fresh connection and reads the whole body.
func get(t *testing.T, method, url string, timeout time.Duration) (*http.Response, string, error) {
	t.Helper()
	c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	req, err := http.NewRequest(method, url, strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func TestPassThrough(t *testing.T) {
	u := newUpstream(t)
	p := startProxy(t, Options{Upstream: u.URL})
	resp, body, err := get(t, http.MethodPost, p.URL+"/json?page=2&limit=50", guard)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || body != jsonBody {
		t.Errorf("got %d %q, want 200 and the upstream body", resp.StatusCode, body)
	}
	if got, want := resp.Header.Get("X-Echo"), "POST page=2&limit=50 payload"; got != want {
		t.Errorf("upstream saw %q, want %q (method, query and body forwarded)", got, want)
	}
	if s := p.Stats(); s.Requests != 1 || s.Injected() != 0 {
		t.Errorf("stats %+v, want one request and no fault", s)
	}
}

// TestEachFault: what the client sees for each fault, and whether the
// server saw the request.
func TestEachFault(t *testing.T) {
	tests := []struct {
		kind         Kind
		path         string
		wantStatus   int  // 0: the client gets an error
		upstreamSeen bool // the server acted on the request
	}{
		{Status500, "/json", http.StatusInternalServerError, false},
		{Status502, "/json", http.StatusBadGateway, true},
		{Truncate, "/json", 0, true},
		{Truncate, "/empty", 0, true},
		{Reset, "/json", 0, false},
		{Delay, "/json", http.StatusOK, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind)+tt.path, func(t *testing.T) {
			u := newUpstream(t)
			p := startProxy(t, Options{Upstream: u.URL, Share: 1, Kinds: []Kind{tt.kind}, Delay: 50 * time.Millisecond})
			start := time.Now()
			resp, body, err := get(t, http.MethodPost, p.URL+tt.path, guard)
			switch {
			case tt.wantStatus == 0 && err == nil:
				t.Fatalf("got %d %q, want a transport error", resp.StatusCode, body)
			case tt.wantStatus != 0 && err != nil:
				t.Fatalf("got error %v, want %d", err, tt.wantStatus)
			case tt.wantStatus != 0 && resp.StatusCode != tt.wantStatus:
				t.Fatalf("got %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if tt.kind == Delay && (body != jsonBody || time.Since(start) < 50*time.Millisecond) {
				t.Errorf("delayed answer: %q after %s, want the whole body after at least 50ms", body, time.Since(start))
			}
			if seen := u.hits.Load() > 0; seen != tt.upstreamSeen {
				t.Errorf("upstream saw the request: %v, want %v", seen, tt.upstreamSeen)
			}
			if s := p.Stats(); s.Faults[tt.kind] != 1 || s.Injected() != 1 {
				t.Errorf("stats %+v, want one %s", s, tt.kind)
			}
			if f := p.Faults(); len(f) != 1 || f[0].Kind != tt.kind || f[0].Method != http.MethodPost || f[0].Path != tt.path {
				t.Errorf("fault log %v, want one %s on POST %s", f, tt.kind, tt.path)
			}
			p.Close() // twice, with the cleanup: the second does nothing
		})
	}
}

// TestStallHoldsUntilTheClientGivesUp: a stalled answer sends its headers
// and part of the body, then nothing: a client with a timeout times out.
func TestStallHoldsUntilTheClientGivesUp(t *testing.T) {
	u := newUpstream(t)
	p := startProxy(t, Options{Upstream: u.URL, Share: 1, Kinds: []Kind{Stall}, Stall: time.Hour})
	c := &http.Client{Timeout: 300 * time.Millisecond}
	resp, err := c.Get(p.URL + "/json")
	if err != nil {
		t.Fatalf("headers did not arrive: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	var ne interface{ Timeout() bool }
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read %q, %v; want part of the body, then a timeout", b, err)
	}
	if len(b) == 0 || len(b) >= len(jsonBody) {
		t.Errorf("read %d bytes before the stall, want part of %d", len(b), len(jsonBody))
	}
	if u.hits.Load() != 1 {
		t.Errorf("upstream saw %d requests, want 1", u.hits.Load())
	}
}

// TestStallEnds: after Options.Stall the connection is cut.
func TestStallEnds(t *testing.T) {
	u := newUpstream(t)
	p := startProxy(t, Options{Upstream: u.URL, Share: 1, Kinds: []Kind{Stall}, Stall: 50 * time.Millisecond})
	if _, body, err := get(t, http.MethodGet, p.URL+"/json", guard); err == nil {
		t.Fatalf("read %q without error, want the connection cut", body)
	}
}

// TestCloseEndsStalls: Close does not wait out a stall.
func TestCloseEndsStalls(t *testing.T) {
	u := newUpstream(t)
	p, err := Start(Options{Upstream: u.URL, Share: 1, Kinds: []Kind{Stall}, Stall: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	go func() {
		_, _, err := get(t, http.MethodGet, p.URL+"/json", 0)
		errs <- err
	}()
	for p.Stats().Faults[Stall] == 0 {
		time.Sleep(time.Millisecond)
	}
	p.Close()
	select {
	case err := <-errs:
		if err == nil {
			t.Errorf("the stalled request succeeded")
		}
	case <-time.After(guard):
		t.Fatalf("the stalled request still hangs after Close")
	}
}

// TestShareIsSeeded: the same seed faults the same requests; the share is
// about what was asked.
func TestShareIsSeeded(t *testing.T) {
	u := newUpstream(t)
	run := func() (string, Stats) {
		p := startProxy(t, Options{Upstream: u.URL, Share: 0.2, Seed: 7, Kinds: []Kind{Status500}})
		var pattern strings.Builder
		for range 500 {
			resp, _, err := get(t, http.MethodGet, p.URL+"/json", guard)
			if err != nil {
				t.Fatal(err)
			}
			pattern.WriteString(map[bool]string{true: "x", false: "."}[resp.StatusCode == 500])
		}
		return pattern.String(), p.Stats()
	}
	a, stats := run()
	b, _ := run()
	if a != b {
		t.Errorf("two runs with one seed faulted different requests")
	}
	if n := stats.Faults[Status500]; n < 70 || n > 130 {
		t.Errorf("%d faults in 500 requests at share 0.2", n)
	}
	if stats.Retries == 0 || stats.Retries > stats.Faults[Status500] {
		t.Errorf("retries %d for %d faults: every faulted request was repeated", stats.Retries, stats.Faults[Status500])
	}
}

// readEvent reads one "data:" line from an event stream.
func readEvent(t *testing.T, br *bufio.Reader) (string, error) {
	t.Helper()
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			return data, nil
		}
	}
}

// TestStreamIsNotBuffered: each event reaches the client before the server
// sends the next one.
func TestStreamIsNotBuffered(t *testing.T) {
	u := newUpstream(t)
	p := startProxy(t, Options{Upstream: u.URL})
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/event", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		want := fmt.Sprintf(`{"n":%d}`, i)
		select {
		case u.events <- want:
		case <-ctx.Done():
			t.Fatalf("upstream could not send event %d", i)
		}
		got, err := readEvent(t, br)
		if err != nil || got != want {
			t.Fatalf("event %d: %q, %v", i, got, err)
		}
	}
	if s := p.Stats(); s.Streams != 1 {
		t.Errorf("stats %+v, want one stream", s)
	}
}

// TestStreamReset: a stream picked for a fault runs, then breaks; with
// StreamShare, whatever Share says.
func TestStreamReset(t *testing.T) {
	for _, opts := range []Options{
		{Share: 1, Kinds: []Kind{Truncate}},
		{Share: 0, StreamShare: 1},
	} {
		t.Run(fmt.Sprintf("share %v, stream share %v", opts.Share, opts.StreamShare), func(t *testing.T) {
			testStreamReset(t, opts)
		})
	}
}

func testStreamReset(t *testing.T, opts Options) {
	u := newUpstream(t)
	opts.Upstream, opts.StreamCut = u.URL, 50*time.Millisecond
	p := startProxy(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/event", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want the stream to start", resp.StatusCode)
	}
	if _, err := readEvent(t, bufio.NewReader(resp.Body)); err == nil || ctx.Err() != nil {
		t.Fatalf("the stream did not break (err %v, ctx %v)", err, ctx.Err())
	}
	if s := p.Stats(); s.Faults[StreamReset] != 1 {
		t.Errorf("stats %+v, want one stream reset", s)
	}
}
