package metrics

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Endpoint classes are a small fixed set: a path never becomes a label, so
// PR numbers, comment ids and SHAs cannot grow the label space.
var forgeEndpoints = map[string]string{
	"GET version":                    "version",
	"GET user":                       "user",
	"GET repos":                      "repo",
	"GET pulls":                      "pulls.list",
	"GET pulls/*":                    "pull.get",
	"POST pulls/*/merge":             "pull.merge",
	"GET pulls/*/merge":              "pull.merge_check",
	"DELETE pulls/*/merge":           "pull.merge_cancel",
	"GET pulls/*/reviews":            "reviews.list",
	"GET pulls/*/reviews/*/comments": "reviews.comments",
	"GET issues":                     "issues.list",
	"GET issues/*/comments":          "comments.list",
	"POST issues/*/comments":         "comment.create",
	"GET issues/comments":            "comments.list",
	"DELETE issues/comments/*":       "comment.delete",
	"GET issues/*/timeline":          "timeline",
	"GET commits/*/status":           "statuses.read",
	"GET commits/*/statuses":         "statuses.read",
	"GET statuses/*":                 "statuses.read",
	"POST statuses/*":                "status.write",
	"GET hooks":                      "hooks",
	"POST hooks":                     "hooks",
	"PATCH hooks/*":                  "hooks",
	"GET branch_protections":         "branch_protections",
	"GET branch_protections/*":       "branch_protections",
}

// ForgeEndpoint names the class of a forge API request.
func ForgeEndpoint(method, path string) string {
	_, rest, ok := strings.Cut(path, "/api/v1/")
	if !ok {
		return "other"
	}
	segs := strings.Split(strings.Trim(rest, "/"), "/")
	var key string
	switch {
	case segs[0] == "repos" && len(segs) == 3:
		key = "repos"
	case segs[0] == "repos" && len(segs) > 3:
		key = pattern(segs[3:])
	case len(segs) == 1:
		key = segs[0]
	default:
		return "other"
	}
	if name, ok := forgeEndpoints[method+" "+key]; ok {
		return name
	}
	return "other"
}

// pattern replaces the variable parts of a path (numbers, SHAs, ids) by *.
// The first segment names the resource; after it, a segment is kept only
// when it is one of the few fixed words the pool's requests use.
func pattern(segs []string) string {
	out := make([]string, len(segs))
	for i, s := range segs {
		switch {
		case i == 0, s == "merge", s == "reviews", s == "comments", s == "timeline", s == "status", s == "statuses":
			out[i] = s
		default:
			out[i] = "*"
		}
	}
	return strings.Join(out, "/")
}

var agentEndpoints = map[string]string{
	"GET experimental/session":    "session.list", // every directory's sessions
	"GET session":                 "session.list",
	"POST session":                "session.create",
	"GET session/status":          "session.status",
	"GET session/*/message":       "session.messages",
	"POST session/*/prompt_async": "session.prompt",
	"POST session/*/abort":        "session.abort",
	"DELETE session/*":            "session.delete",
	"GET session/*":               "session.get",
	"GET global/event":            "events", // every directory's events
	"GET permission":              "permissions",
	"GET agent":                   "agents",
	"POST instance/dispose":       "instance.dispose",
}

// AgentEndpoint names the class of an agent server request.
func AgentEndpoint(method, path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if segs[0] == "session" && len(segs) > 1 && segs[1] != "status" {
		segs[1] = "*" // the session id
	}
	if name, ok := agentEndpoints[method+" "+strings.Join(segs, "/")]; ok {
		return name
	}
	return "other"
}

// ForgeTransport counts every forge request by endpoint class and status.
func (m *Metrics) ForgeTransport(next http.RoundTripper) http.RoundTripper {
	return counting{next: orDefault(next), count: func(r *http.Request, code string) {
		m.forgeRequests.WithLabelValues(ForgeEndpoint(r.Method, r.URL.Path), code).Inc()
	}}
}

// AgentTransport counts every agent server request by endpoint class and
// status, and follows the event stream: open while its body is being read.
func (m *Metrics) AgentTransport(next http.RoundTripper) http.RoundTripper {
	return counting{next: orDefault(next), count: func(r *http.Request, code string) {
		m.agentRequests.WithLabelValues(AgentEndpoint(r.Method, r.URL.Path), code).Inc()
	}, stream: func(r *http.Request, resp *http.Response) {
		if AgentEndpoint(r.Method, r.URL.Path) == "events" && resp.StatusCode == http.StatusOK {
			resp.Body = m.streamOpened(resp.Body)
		}
	}}
}

func orDefault(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		return http.DefaultTransport
	}
	return rt
}

type counting struct {
	next   http.RoundTripper
	count  func(r *http.Request, code string)
	stream func(r *http.Request, resp *http.Response) // may be nil
}

func (c counting) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err != nil {
		c.count(r, "error")
		return resp, err
	}
	c.count(r, strconv.Itoa(resp.StatusCode))
	if c.stream != nil {
		c.stream(r, resp)
	}
	return resp, nil
}

// streamOpened records an open event stream and returns its body, which
// records the stream closed when it is closed or fails.
func (m *Metrics) streamOpened(body io.ReadCloser) io.ReadCloser {
	m.mu.Lock()
	m.streams++
	m.opened++
	again := m.opened > 1
	m.mu.Unlock()
	if again {
		m.reconnects.Inc()
	}
	return &streamBody{ReadCloser: body, closed: m.streamClosed}
}

func (m *Metrics) streamClosed() {
	m.mu.Lock()
	m.streams--
	m.mu.Unlock()
}

// streamBody calls closed once: at the first read error (the stream broke)
// or at Close, whichever comes first.
type streamBody struct {
	io.ReadCloser
	once   sync.Once
	closed func()
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.closed)
	}
	return n, err
}

func (b *streamBody) Close() error {
	b.once.Do(b.closed)
	return b.ReadCloser.Close()
}
