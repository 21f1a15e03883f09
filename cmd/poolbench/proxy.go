package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
)

// call is one request the counting proxy carried.
type call struct {
	start, end time.Time
	method     string
	uri        string // the request URI: path and query
	status     int
	mergeable  bool // for a read of one PR: what the forge answered
}

// countingProxy is a loopback reverse proxy to the forge that records the
// requests it carries: when, what, the status, and for a read of one PR
// whether the forge answered it mergeable.
type countingProxy struct {
	*httptest.Server
	mu    sync.Mutex
	calls []call // guarded by mu, in the order they started
}

// onePR matches the read of one PR: /api/v1/repos/{owner}/{repo}/pulls/{n}.
var onePR = regexp.MustCompile(`^/api/v1/repos/[^/]+/[^/]+/pulls/\d+$`)

func newCountingProxy(target string) (*countingProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("counting proxy: %w", err)
	}
	c := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		i := len(c.calls)
		c.calls = append(c.calls, call{start: time.Now(), method: r.Method, uri: r.URL.RequestURI()})
		c.mu.Unlock()
		rec := &recorder{ResponseWriter: w, status: http.StatusOK, keep: r.Method == http.MethodGet && onePR.MatchString(r.URL.Path)}
		rp.ServeHTTP(rec, r)
		var pr struct {
			Mergeable bool `json:"mergeable"`
		}
		if rec.keep {
			_ = json.Unmarshal(rec.body.Bytes(), &pr) // a body that is no PR reads not mergeable
		}
		c.mu.Lock()
		c.calls[i].end, c.calls[i].status, c.calls[i].mergeable = time.Now(), rec.status, pr.Mergeable
		c.mu.Unlock()
	}))
	return c, nil
}

// recorder passes an answer on and keeps its status, and its body if keep.
type recorder struct {
	http.ResponseWriter
	status int
	keep   bool
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.keep && r.body.Len() < 1<<20 {
		r.body.Write(p)
	}
	return r.ResponseWriter.Write(p)
}

// recorded returns a copy of the calls so far.
func (c *countingProxy) recorded() []call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]call(nil), c.calls...)
}

// requests lists the calls as "METHOD /uri".
func (c *countingProxy) requests() []string {
	var out []string
	for _, k := range c.recorded() {
		out = append(out, k.method+" "+k.uri)
	}
	return out
}

func (c *countingProxy) count() int { return c.countSince(time.Time{}) }

// countSince counts the requests made at or after from.
func (c *countingProxy) countSince(from time.Time) int {
	n := 0
	for _, k := range c.recorded() {
		if !k.start.Before(from) {
			n++
		}
	}
	return n
}

// writeCalls lists the calls, one a line: start, duration, status, method,
// URI, and "mergeable" for a read of a PR that answered so.
func writeCalls(path string, calls []call) error {
	var b strings.Builder
	for _, k := range calls {
		fmt.Fprintf(&b, "%s %6dms %d %s %s", k.start.UTC().Format("15:04:05.000"), k.end.Sub(k.start).Milliseconds(), k.status, k.method, k.uri)
		if k.mergeable {
			b.WriteString(" mergeable")
		}
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write the request list: %w", err)
	}
	return nil
}
