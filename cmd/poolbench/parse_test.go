package main

import (
	"net/url"
	"slices"
	"testing"
	"time"
)

func TestParseLogLine(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		ok      bool
		msg     string
		pr      string
		session string
	}{
		{
			name: "session started",
			line: `time=2026-11-29T21:04:20.253Z level=INFO msg="session started" instance=pr-reviewer-pool-1-2 pr=2 session=ses_abc kind=review head=4c21`,
			ok:   true, msg: "session started", pr: "2", session: "ses_abc",
		},
		{
			name: "quoted value with escapes",
			line: `time=2026-11-29T21:04:20.253+01:00 level=INFO msg="merge answered" pr=1 message="{\"message\":\"already merged\"}"`,
			ok:   true, msg: "merge answered", pr: "1",
		},
		{name: "not a log line", line: "pool: config: flags: bad", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, ok := parseLogLine(tt.line)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if l.msg != tt.msg || l.attrs["pr"] != tt.pr || l.attrs["session"] != tt.session {
				t.Errorf("got msg=%q pr=%q session=%q, want %q %q %q", l.msg, l.attrs["pr"], l.attrs["session"], tt.msg, tt.pr, tt.session)
			}
		})
	}
}

func TestParseLogLineKeepsMilliseconds(t *testing.T) {
	l, _ := parseLogLine(`time=2026-11-29T21:04:20.253Z level=INFO msg=x`)
	if want := time.Date(2026, 11, 29, 21, 4, 20, 253e6, time.UTC); !l.time.Equal(want) {
		t.Errorf("time = %v, want %v", l.time, want)
	}
}

func TestSplitCycles(t *testing.T) {
	paths := []string{
		"/api/v1/version",
		"/api/v1/user",
		"/api/v1/repos/owner/demo",
		"/api/v1/repos/owner/demo/pulls?limit=50&page=1&state=open", // cycle 1: full list
		"/api/v1/repos/owner/demo/pulls?limit=50&page=2&state=open",
		"/api/v1/repos/owner/demo/pulls/1/reviews?limit=50&page=1",
		"/api/v1/repos/owner/demo/issues?limit=50&page=1&since=2026-11-29T21%3A00%3A09Z&state=all&type=pulls", // cycle 2: delta
		"/api/v1/repos/owner/demo/issues?limit=50&page=1&since=2026-11-29T21%3A00%3A09Z&state=all&type=pulls", // cycle 3
		"/api/v1/repos/owner/demo/issues/1/comments?limit=0&page=1",
	}
	var reqs []*url.URL
	for _, p := range paths {
		u, err := url.Parse(p)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, u)
	}
	if got, want := splitCycles(reqs, "owner", "demo"), []int{3, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("splitCycles = %v, want %v", got, want)
	}
}

func TestMedianAndP95(t *testing.T) {
	tests := []struct {
		name        string
		xs          []int
		median, p95 float64
	}{
		{name: "odd", xs: []int{5, 1, 3}, median: 3, p95: 5},
		{name: "even", xs: []int{4, 1, 3, 2}, median: 2.5, p95: 4},
		{name: "twenty", xs: []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 10, 1}, median: 1, p95: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if m := median(tt.xs); m != tt.median {
				t.Errorf("median = %g, want %g", m, tt.median)
			}
			if p := p95(tt.xs); p != tt.p95 {
				t.Errorf("p95 = %g, want %g", p, tt.p95)
			}
		})
	}
}

// TestSessionsByServer reads the exit report's lines per agent server, and
// none from a report without them.
func TestSessionsByServer(t *testing.T) {
	report := "TOTAL_PRS_REVIEWED: 3\nSESSIONS_BY_AGENT_SERVER:\n  - http://a: 2 started, 0 lost\n  - http://b: 1 started, 1 lost\nBY_REPOSITORY:\n  - o/r: reviewed 3\n"
	got := sessionsByServer(report)
	want := []string{"http://a: 2 started, 0 lost", "http://b: 1 started, 1 lost"}
	if !slices.Equal(got, want) {
		t.Errorf("sessionsByServer = %q, want %q", got, want)
	}
	if got := sessionsByServer("TOTAL_PRS_REVIEWED: 3\nBY_REPOSITORY:\n  - o/r: reviewed 3\n"); got != nil {
		t.Errorf("without the servers' lines: %q, want none", got)
	}
}
