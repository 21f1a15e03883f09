// Package faultproxy is a loopback reverse proxy for tests that injects
// faults into a share of the requests it forwards: a 500, a 502, a stalled
// body, a truncated answer, a reset connection or a 5-second delay. A seeded
// random source picks the requests and the faults, and counters say what it
// did, so a test can print its figures and a failure can be replayed.
//
// Where a fault strikes decides whether the server acted on the request:
//
//	500       answered by the proxy; the server never sees the request
//	reset     the connection is reset on arrival; the server never sees it
//	502       forwarded; the server's answer is thrown away for a 502
//	truncate  forwarded; the answer is cut off in the middle, then the connection
//	stall     forwarded; part of the answer is sent, then nothing until
//	          Options.Stall has passed (or the client gives up), then the
//	          connection is cut
//	delay     forwarded; the whole answer is sent after Options.Delay
//
// So 502, truncate and stall leave a write done on the server that the
// client believes failed, as a lost answer does in life.
//
// Server-sent event streams (an answer of type text/event-stream, such as
// the agent server's GET /event) pass through unbuffered, every chunk
// flushed as it comes. A stream picked for a fault gets a 500, a 502 or,
// standing for the others, a reset after it has run for a while: the stream
// breaks, as a stream does when a connection drops.
//
// An optional Forgejo mode (Options.Forgejo) rewrites the test forge's
// answers into those of Forgejo where the two differ; see forgejo.go.
package faultproxy

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Kind names a fault.
type Kind string

// The faults, in the order Stats lists them.
const (
	Status500 Kind = "500"
	Status502 Kind = "502"
	Stall     Kind = "stall"
	Truncate  Kind = "truncate"
	Reset     Kind = "reset"
	Delay     Kind = "delay"
)

// Kinds are all the faults.
var Kinds = []Kind{Status500, Status502, Stall, Truncate, Reset, Delay}

// StreamReset is what a stall, truncate, reset or delay picked for an event
// stream becomes: the stream runs for a while, then its connection is reset.
const StreamReset Kind = "stream-reset"

// Options configure a proxy.
type Options struct {
	// Upstream is the server's base URL, e.g. http://127.0.0.1:3000.
	Upstream string
	// Share is the fraction of requests, 0 to 1, that get a fault.
	Share float64
	// Kinds are the faults to pick from, evenly; empty means all.
	Kinds []Kind
	// Seed seeds the random source that picks requests and faults.
	Seed uint64
	// Delay is how long a delayed answer waits; default 5 s.
	Delay time.Duration
	// Stall is how long a stalled answer hangs before the connection is
	// cut; default 2 minutes, longer than any sane client timeout.
	Stall time.Duration
	// StreamCut bounds how long a stream picked for a reset runs first;
	// default 10 s. The time is drawn evenly below it.
	StreamCut time.Duration
	// StreamShare, when above 0, is the share of event streams (once they
	// are known to be streams) that are reset after a while, in place of
	// the fault Share picked: a test that wants its one long-lived stream
	// broken again and again sets 1.
	StreamShare float64
	// Forgejo, when set, rewrites answers as Forgejo gives them.
	Forgejo *ForgejoOptions
}

// Stats are a proxy's counters.
type Stats struct {
	Requests int          // requests received
	Streams  int          // of which event streams
	Faults   map[Kind]int // faults injected, by kind
	// Retries counts requests that repeat one that got a fault: the same
	// method and path (with query), arriving after it.
	Retries  int
	Rewrites map[string]int // Forgejo-mode rewrites, by name
}

// Injected is the number of faults of all kinds.
func (s Stats) Injected() int {
	n := 0
	for _, c := range s.Faults {
		n += c
	}
	return n
}

// Fault is one fault the proxy carried out, for a test to print when it
// fails.
type Fault struct {
	At     time.Time
	Kind   Kind
	Method string
	Path   string // with the query
}

func (f Fault) String() string {
	return fmt.Sprintf("%s %s %s %s", f.At.UTC().Format("15:04:05.000"), f.Kind, f.Method, f.Path)
}

// maxFaultLog bounds the faults kept for Faults.
const maxFaultLog = 10000

// Proxy is a running fault-injecting proxy.
type Proxy struct {
	URL string // where clients connect: http://127.0.0.1:PORT

	opts      Options
	upstream  *url.URL
	transport *http.Transport
	srv       *http.Server
	forgejo   *forgejoMode
	stop      chan struct{} // closed by Close: stalls end at once
	closing   sync.Once

	mu       sync.Mutex // guards rnd, stats, faulted, faultLog
	rnd      *rand.Rand
	stats    Stats
	faulted  map[string]bool // method and path of requests that got a fault, not yet repeated
	faultLog []Fault
}

// Start listens on a free loopback port and serves until Close.
func Start(opts Options) (*Proxy, error) {
	up, err := url.Parse(opts.Upstream)
	if err != nil || up.Host == "" {
		return nil, fmt.Errorf("faultproxy: bad upstream %q", opts.Upstream)
	}
	if opts.Share < 0 || opts.Share > 1 {
		return nil, fmt.Errorf("faultproxy: share %v is not between 0 and 1", opts.Share)
	}
	if len(opts.Kinds) == 0 {
		opts.Kinds = Kinds
	}
	opts.Delay = orDefault(opts.Delay, 5*time.Second)
	opts.Stall = orDefault(opts.Stall, 2*time.Minute)
	opts.StreamCut = orDefault(opts.StreamCut, 10*time.Second)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{URL: "http://" + ln.Addr().String(), opts: opts, upstream: up,
		transport: &http.Transport{Proxy: nil, DisableCompression: true, MaxIdleConnsPerHost: 16},
		stop:      make(chan struct{}), rnd: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		stats:   Stats{Faults: map[Kind]int{}, Rewrites: map[string]int{}},
		faulted: map[string]bool{}}
	if opts.Forgejo != nil {
		p.forgejo = newForgejoMode(*opts.Forgejo, opts.Seed)
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Close stops the proxy: stalls end, open connections are closed, and it
// returns when every handler has. Calls after the first do nothing.
func (p *Proxy) Close() error {
	var err error
	p.closing.Do(func() {
		close(p.stop)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p.srv.SetKeepAlivesEnabled(false)
		if err = p.srv.Shutdown(ctx); err != nil {
			err = p.srv.Close()
		}
		p.transport.CloseIdleConnections()
	})
	return err
}

// Faults lists the faults carried out, oldest first (the first 10,000).
func (p *Proxy) Faults() []Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Fault(nil), p.faultLog...)
}

// Stats returns a copy of the counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Faults, s.Rewrites = map[Kind]int{}, map[string]int{}
	for k, v := range p.stats.Faults {
		s.Faults[k] = v
	}
	for k, v := range p.stats.Rewrites {
		s.Rewrites[k] = v
	}
	return s
}

// ServeHTTP picks the request's fate and carries it out.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fault := p.pick(r)
	if p.forgejo != nil && fault == "" && p.forgejo.serve(w, r, p) {
		return
	}
	switch fault {
	case Status500:
		p.count(Status500, r)
		http.Error(w, "fault injected: internal server error", http.StatusInternalServerError)
		return
	case Reset:
		p.count(Reset, r)
		resetConn(w)
		return
	}
	resp, err := p.roundTrip(r)
	if err != nil {
		http.Error(w, "faultproxy: upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if isStream(resp) {
		p.serveStream(w, r, resp, fault)
		return
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, "faultproxy: upstream body: "+err.Error(), http.StatusBadGateway)
		return
	}
	p.answer(w, r, resp, body, fault)
}

// answer sends an upstream answer, with the fault picked for it.
func (p *Proxy) answer(w http.ResponseWriter, r *http.Request, resp *http.Response, body []byte, fault Kind) {
	if fault != "" {
		p.count(fault, r)
	}
	switch fault {
	case Status502:
		http.Error(w, "fault injected: bad gateway", http.StatusBadGateway)
	case Truncate:
		p.cut(w, resp, body, 0)
	case Stall:
		p.cut(w, resp, body, p.opts.Stall)
	case Delay:
		if p.wait(r.Context(), p.opts.Delay) {
			send(w, resp, body)
		}
	default:
		send(w, resp, body)
	}
}

// send passes an upstream answer on whole.
func send(w http.ResponseWriter, resp *http.Response, body []byte) {
	copyHeader(w.Header(), resp.Header)
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}

// pick decides whether the request gets a fault, and which, and counts it.
func (p *Proxy) pick(r *http.Request) Kind {
	key := r.Method + " " + r.URL.RequestURI()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Requests++
	if p.faulted[key] {
		p.stats.Retries++
		delete(p.faulted, key)
	}
	if p.rnd.Float64() >= p.opts.Share {
		return ""
	}
	k := p.opts.Kinds[p.rnd.IntN(len(p.opts.Kinds))]
	p.faulted[key] = true
	return k
}

// count records a fault carried out on r.
func (p *Proxy) count(k Kind, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Faults[k]++
	if len(p.faultLog) < maxFaultLog {
		p.faultLog = append(p.faultLog, Fault{At: time.Now(), Kind: k, Method: r.Method, Path: r.URL.RequestURI()})
	}
}

func (p *Proxy) noteRewrite(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Rewrites[name]++
}

// roundTrip forwards the request upstream.
func (p *Proxy) roundTrip(r *http.Request) (*http.Response, error) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.upstream.Scheme, p.upstream.Host
	out.URL.Path = strings.TrimRight(p.upstream.Path, "/") + r.URL.Path
	out.Host = p.upstream.Host
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	return p.transport.RoundTrip(out)
}

// hopHeaders belong to one connection and are not forwarded.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		if !slices.ContainsFunc(hopHeaders, func(h string) bool { return strings.EqualFold(k, h) }) {
			dst[k] = append([]string(nil), vs...)
		}
	}
}
