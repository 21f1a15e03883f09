package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"pool/ops"
	"pool/statuspage"
)

func TestStatusCommand(t *testing.T) {
	now := time.Now().UTC()
	st := statuspage.Status{Instance: "pool-x", Repo: "acme/widgets", Workers: 2, Now: now, Started: now.Add(-time.Minute),
		Slots: []statuspage.Slot{{PR: 4, Kind: "review", Session: "ses_1", Since: now}},
		PRs:   []statuspage.PR{{Number: 4, State: "unreviewed", Next: "reviewing since 10:00 UTC"}}}
	srv := httptest.NewServer((&ops.Server{Status: func() statuspage.Status { return st }}).Handler())
	defer srv.Close()
	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"table", []string{"status", "--ops-url", srv.URL}, 0, "SLOTS 1/2 busy"},
		{"json", []string{"status", "--ops-url", srv.URL, "--json"}, 0, `"instance": "pool-x"`},
		{"no URL", []string{"status"}, 2, ""},
		{"nothing there", []string{"status", "--ops-url", "http://127.0.0.1:1"}, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("POOL_OPS_URL", "")
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tt.args, &stdout, &stderr); code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.out) {
				t.Errorf("output lacks %q:\n%s", tt.out, stdout.String())
			}
		})
	}
}

func TestLogFormat(t *testing.T) {
	var b bytes.Buffer
	newLogger(&b, "json").Info("hello", "pr", 3)
	var line map[string]any
	if err := json.Unmarshal(b.Bytes(), &line); err != nil || line["msg"] != "hello" || line["pr"] != float64(3) {
		t.Errorf("json log line %q: %v", b.String(), err)
	}
	b.Reset()
	newLogger(&b, "text").Info("hello", "pr", 3)
	if !strings.Contains(b.String(), "msg=hello pr=3") {
		t.Errorf("text log line %q", b.String())
	}
}
