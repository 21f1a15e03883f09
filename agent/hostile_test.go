package agent

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"pool/internal/bounded"
)

func TestAnswerOverTheCapNamesOpAndCap(t *testing.T) {
	big := `[{"info":{"id":"m","role":"user"},"parts":[{"type":"text","text":"` + strings.Repeat("x", 200000) + `"}]}]`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.(http.Flusher).Flush() // no Content-Length: caught while reading
		_, _ = w.Write([]byte(big))
	}))
	defer srv.Close()
	c := New(srv.URL, "", Options{MaxBody: 100000})
	_, err := c.Messages(context.Background(), sid)
	var tl *bounded.TooLargeError
	if !errors.As(err, &tl) || IsRetryable(err) {
		t.Fatalf("err = %v; want a permanent too-large error", err)
	}
	for _, want := range []string{"agent: messages " + sid, "100000 bytes cap"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestHostileAnswersAreErrorsNotPanics(t *testing.T) {
	tests := []struct {
		name, route, body string
		call              func(context.Context, *Client) error
	}{
		{"session null", "POST /session", `null`, func(ctx context.Context, c *Client) error { _, err := c.CreateSession(ctx, "t", ""); return err }},
		{"session without id", "POST /session", `{"title":"t"}`, func(ctx context.Context, c *Client) error { _, err := c.CreateSession(ctx, "t", ""); return err }},
		{"session truncated", "POST /session", `{"id":"ses_1","ti`, func(ctx context.Context, c *Client) error { _, err := c.CreateSession(ctx, "t", ""); return err }},
		{"messages with a null", "GET /session/" + sid + "/message", `[null]`, getMessages},
		{"message without a role", "GET /session/" + sid + "/message", `[{"info":{"id":"m"},"parts":[]}]`, getMessages},
		{"message time as text", "GET /session/" + sid + "/message", `[{"info":{"role":"user","time":{"created":"noon"}}}]`, getMessages},
		{"messages as an object", "GET /session/" + sid + "/message", `{"info":{}}`, getMessages},
		{"status null", "GET /session/status", `{"ses_1":null}`, func(ctx context.Context, c *Client) error { _, err := c.Statuses(ctx, ""); return err }},
		{"status without a type", "GET /session/status", `{"ses_1":{}}`, func(ctx context.Context, c *Client) error { _, err := c.Statuses(ctx, ""); return err }},
		{"sessions with a null", "GET /experimental/session", `[null]`, func(ctx context.Context, c *Client) error { _, err := c.Sessions(ctx); return err }},
		{"permissions with a null", "GET /permission", `[null]`, func(ctx context.Context, c *Client) error { _, err := c.Permissions(ctx, ""); return err }},
		{"agents with a null", "GET /agent", `[null]`, func(ctx context.Context, c *Client) error { _, err := c.Agents(ctx, ""); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := newFake(t, map[string]answer{tt.route: {200, tt.body}})
			err := tt.call(context.Background(), c)
			if err == nil {
				t.Fatal("no error for a hostile answer")
			}
			if !strings.HasPrefix(err.Error(), "agent: ") || IsRetryable(err) {
				t.Errorf("error %q: want a permanent agent error", err)
			}
		})
	}
}

func getMessages(ctx context.Context, c *Client) error {
	_, err := c.Messages(ctx, sid)
	return err
}

func TestErrorTextIsBoundedAndRedacted(t *testing.T) {
	_, c := newFake(t, map[string]answer{
		"GET /session/status": {500, `{"name":"UnknownError","data":{"message":"upstream http://u:hunter2@model.internal/v1 said ` + strings.Repeat("z", 100000) + `"}}`},
	})
	_, err := c.Statuses(context.Background(), "")
	if err == nil || !IsRetryable(err) {
		t.Fatalf("err = %v, want a retryable error", err)
	}
	if msg := err.Error(); len(msg) > 600 || strings.Contains(msg, "hunter2") {
		t.Errorf("error is %d bytes or shows a password: %.200q", len(msg), msg)
	}
}

// The stream as a whole is not capped: it lives for hours. One event larger
// than the cap breaks it, and it reconnects.
func TestEventStreamBoundsEachEventNotTheStream(t *testing.T) {
	f, srv := newFakeEvents(t, func(n int) sseConn {
		switch n {
		case 0: // many events, together far over the cap
			lines := []string{connectedLine}
			for range 200 {
				lines = append(lines, heartbeatLine)
			}
			return sseConn{lines: sse(append(lines, idleLine)...)}
		case 1: // one line over the cap
			return sseConn{lines: sse(connectedLine, `data: {"type":"message.part.updated","properties":{"text":"`+strings.Repeat("x", 20000)+`"}}`, idleLine)}
		case 2: // one event over the cap in many lines
			lines := []string{connectedLine, ""}
			for range 50 {
				lines = append(lines, `data: `+strings.Repeat("y", 500))
			}
			return sseConn{lines: append(lines, "", idleLine, "")}
		}
		return sseConn{lines: sse(connectedLine, idleLine), hang: true}
	})
	c := New(srv.URL, "", Options{Transport: srv.Client().Transport})
	cfg := testStream(time.Minute, 64)
	cfg.maxEvent = 10000 // the stream carries about 20 KB on the first connection
	events, _ := subscribe(t, c, cfg)
	idle := Event{Type: EventSessionIdle, SessionID: realSession}
	got := collect(t, events, 6)
	want := []Event{reconnected, idle, reconnected, reconnected, reconnected, idle}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events\n%+v\nwant\n%+v", got, want)
	}
	if n := f.connections(); n < 4 {
		t.Errorf("%d connections, want 4 (two broken by an oversized event)", n)
	}
}
