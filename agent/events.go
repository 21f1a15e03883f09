package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"pool/forge"
	"pool/internal/bounded"
	"pool/internal/guard"
)

// Event is one server event the pool cares about.
type Event struct {
	Type      string // one of the Event* constants
	SessionID string // when the event names one
	Status    string // for session.status: busy, idle, retry
}

// The event types Events delivers. The server sends many more (message parts
// token by token, plugins, heartbeats); the pool needs only these.
const (
	// EventReconnected is not the server's: Events sends it after every
	// (re)connect, the first included, and after it had to drop events for a
	// slow consumer. The stream has no replay, so the consumer should then
	// reconcile from Statuses and Messages.
	EventReconnected     = "reconnected"
	EventSessionStatus   = "session.status" // Status says busy, idle or retry
	EventSessionIdle     = "session.idle"   // the session's work is over
	EventSessionError    = "session.error"  // the session's work failed; SessionID may be empty
	EventSessionDeleted  = "session.deleted"
	EventPermissionAsked = "permission.asked" // the session waits for an answer
)

// delivered lists the server's event types Events passes on.
var delivered = map[string]bool{
	EventSessionStatus: true, EventSessionIdle: true, EventSessionError: true,
	EventSessionDeleted: true, EventPermissionAsked: true,
}

// streamConfig tunes Events; tests shorten its times.
type streamConfig struct {
	buffer   int                              // events held for a slow consumer
	idle     time.Duration                    // no bytes for this long (the server beats every 10 s): reconnect
	backoff  func(failures int) time.Duration // the wait before reconnecting
	maxEvent int                              // the largest event (its lines together); a larger one breaks the stream
}

func defaultStreamConfig(maxBody int64) streamConfig {
	return streamConfig{
		buffer:   256,
		idle:     30 * time.Second,
		backoff:  func(n int) time.Duration { return reconnectDelay(n, rand.Float64()) },
		maxEvent: int(maxBody), // a message part can carry a whole tool output
	}
}

// Events subscribes to GET /global/event, the events of sessions in every
// directory, and delivers them on the returned channel until ctx ends, then
// closes it. It reconnects by itself when the stream
// breaks or stays silent for 30 s, and sends EventReconnected after every
// connect. It never waits for the consumer: when the channel's buffer is
// full it drops the event and sends EventReconnected as soon as there is
// room. The stream has no overall timeout (its silence watchdog guards it)
// and no cap on its length; an event larger than the client's body cap breaks
// it, and it reconnects.
func (c *Client) Events(ctx context.Context) <-chan Event {
	return c.events(ctx, defaultStreamConfig(c.maxBody))
}

func (c *Client) events(ctx context.Context, cfg streamConfig) <-chan Event {
	log := c.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &stream{c: c, hc: c.stream, cfg: cfg, log: log, out: make(chan Event, cfg.buffer)}
	guard.Go(ctx, log, "agent event stream", func() { s.run(ctx) })
	return s.out
}

// stream is one subscription. Its fields belong to the goroutine running run.
type stream struct {
	c   *Client
	hc  *http.Client
	cfg streamConfig
	log *slog.Logger
	out chan Event
	// owed says the consumer is owed an EventReconnected: after a connect,
	// or after an event was dropped.
	owed bool
}

// run connects, reads, and reconnects after a backoff, until ctx ends.
func (s *stream) run(ctx context.Context) {
	defer close(s.out)
	failures := 0
	for ctx.Err() == nil {
		connected, err := s.connect(ctx)
		if ctx.Err() != nil {
			return
		}
		if connected {
			failures = 0
		}
		s.logBreak(err, failures)
		if !s.wait(ctx, s.cfg.backoff(failures)) {
			return
		}
		failures++
	}
}

// logBreak logs a broken stream, once per run of failures.
func (s *stream) logBreak(err error, failures int) {
	level := slog.LevelWarn
	if failures > 0 {
		level = slog.LevelDebug
	}
	s.log.Log(context.Background(), level, "agent event stream broke; reconnecting", "failures", failures, "err", err)
}

// wait sleeps for d, paying an owed EventReconnected if the consumer makes
// room. It reports false if ctx ended first.
func (s *stream) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		case s.owedTo() <- Event{Type: EventReconnected}:
			s.owed = false
		}
	}
}

// owedTo is the channel to send an owed EventReconnected on, or nil (a send
// that is never ready) when none is owed.
func (s *stream) owedTo() chan<- Event {
	if s.owed {
		return s.out
	}
	return nil
}

// connect reads one connection until it breaks. connected says whether the
// server sent at least one event.
func (s *stream) connect(ctx context.Context) (connected bool, err error) {
	connCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errIdle := fmt.Errorf("no data for %s", s.cfg.idle)
	watchdog := time.AfterFunc(s.cfg.idle, func() { cancel(errIdle) })
	defer watchdog.Stop()

	resp, err := s.open(connCtx)
	if err != nil {
		return false, brokenBy(connCtx, err)
	}
	defer resp.Body.Close()
	lines := readLines(connCtx, s.log, resp.Body, s.cfg.maxEvent)
	defer func() {
		cancel(nil)
		resp.Body.Close()
		for range lines.c { // let the reader finish
		}
	}()
	connected, tooLarge := s.pump(lines, func() { watchdog.Reset(s.cfg.idle) })
	if tooLarge != nil {
		return connected, &Error{Op: "events", Retryable: true, Err: tooLarge}
	}
	return connected, brokenBy(connCtx, &Error{Op: "events", Retryable: true, Err: lines.err})
}

// brokenBy names the watchdog as the cause of err when it fired.
func brokenBy(connCtx context.Context, err error) error {
	if cause := context.Cause(connCtx); cause != nil && !errors.Is(cause, context.Canceled) {
		return &Error{Op: "events", Retryable: true, Err: cause}
	}
	return err
}

// open sends GET /global/event and checks that an event stream answers.
func (s *stream) open(ctx context.Context) (*http.Response, error) {
	const op = "events"
	req, err := s.c.newRequest(ctx, http.MethodGet, "/global/event", nil)
	if err != nil {
		return nil, &Error{Op: op, Err: err}
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, transportError(ctx, op, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, statusError(op, resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		return nil, &Error{Op: op, Status: resp.StatusCode, Err: fmt.Errorf("not an event stream: content type %q", ct)}
	}
	return resp, nil
}

// pump turns lines into events until the lines end, or an event grows past
// the cap (tooLarge says so). alive is called for every line, heartbeats
// included. It reports whether any event came.
func (s *stream) pump(lines *lineReader, alive func()) (connected bool, tooLarge error) {
	data := sseData{max: s.cfg.maxEvent}
	for {
		select {
		case line, ok := <-lines.c:
			if !ok {
				return connected, nil
			}
			alive()
			payload, complete, err := data.add(line)
			if err != nil {
				return connected, err
			}
			if !complete {
				continue
			}
			ev, err := decodeEvent(payload)
			if err != nil {
				s.log.Debug("agent event skipped", "err", err, "data", clip(payload, 200))
				continue
			}
			if !connected {
				// Ask for a reconcile only once events flow: one done
				// before the server subscribed this stream could miss
				// what happened in between.
				connected, s.owed = true, true
			}
			if delivered[ev.Type] {
				s.emit(ev)
			}
		case s.owedTo() <- Event{Type: EventReconnected}:
			s.owed = false
		}
	}
}

// emit hands ev to the consumer without waiting (see Offer), and logs an
// event dropped for a slow consumer.
func (s *stream) emit(ev Event) {
	var dropped bool
	if s.owed, dropped = Offer(s.out, s.owed, ev); dropped {
		s.log.Info("agent event consumer is behind; dropping events until it catches up", "dropped", ev.Type)
	}
}

// Offer hands ev to out without waiting, an owed EventReconnected first.
// When out is full, ev is dropped and an EventReconnected owed instead: the
// consumer reconciles from the server, so it needs nothing it missed. It
// returns whether one is owed now, and whether ev was the one dropped (not
// held back behind an owed EventReconnected that did not fit either).
func Offer(out chan<- Event, owed bool, ev Event) (nowOwed, dropped bool) {
	if owed {
		select {
		case out <- Event{Type: EventReconnected}:
		default:
			return true, false
		}
	}
	select {
	case out <- ev:
		return false, false
	default:
		return true, true
	}
}

// lineReader reads a stream's lines in a goroutine of its own, so that the
// stream can wait for a line and for room in the consumer's channel at once.
type lineReader struct {
	c   chan string
	err error // why the lines ended; read it only once c is closed
}

// readLines reads r's lines, none longer than maxLine, in a goroutine of its
// own until r ends or ctx does.
func readLines(ctx context.Context, log *slog.Logger, r io.Reader, maxLine int) *lineReader {
	lr := &lineReader{c: make(chan string)}
	guard.Go(ctx, log, "agent event reader", func() {
		defer close(lr.c)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, min(64<<10, maxLine)), maxLine)
		for sc.Scan() {
			select {
			case lr.c <- sc.Text():
			case <-ctx.Done():
				lr.err = ctx.Err()
				return
			}
		}
		lr.err = sc.Err()
		switch {
		case errors.Is(lr.err, bufio.ErrTooLong):
			lr.err = fmt.Errorf("an event line: %w", &bounded.TooLargeError{Limit: int64(maxLine)})
		case lr.err == nil:
			lr.err = errors.New("the server ended the stream")
		}
	})
	return lr
}

// sseData gathers the data lines of one server-sent event, at most max
// bytes of them. The server sends one "data:" line per event and a blank line
// after it; other fields and comments carry nothing the pool needs.
type sseData struct {
	lines []string
	size  int
	max   int
}

// add takes one line and, at the blank line that ends an event, returns the
// event's data. An event growing past max is an error.
func (d *sseData) add(line string) (payload string, complete bool, err error) {
	if line == "" {
		if len(d.lines) == 0 {
			return "", false, nil
		}
		payload = strings.Join(d.lines, "\n")
		d.lines, d.size = d.lines[:0], 0
		return payload, true, nil
	}
	field, value, _ := strings.Cut(line, ":")
	if field == "data" {
		value = strings.TrimPrefix(value, " ")
		if d.size += len(value) + 1; d.max > 0 && d.size > d.max {
			d.lines, d.size = d.lines[:0], 0
			return "", false, fmt.Errorf("an event: %w", &bounded.TooLargeError{Limit: int64(d.max)})
		}
		d.lines = append(d.lines, value)
	}
	return "", false, nil
}

// eventJSON is an event as the server sends it. Properties are decoded only
// for the types Events delivers: other types have other shapes. On
// /global/event the event is the Payload of a wrapper that names its
// directory; on /event it comes bare.
type eventJSON struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
	Payload    *eventJSON      `json:"payload"`
}

type eventPropertiesJSON struct {
	SessionID string `json:"sessionID"`
	Status    struct {
		Type string `json:"type"`
	} `json:"status"`
}

// decodeEvent reads one event's data.
func decodeEvent(payload string) (Event, error) {
	var raw eventJSON
	if err := json.Unmarshal([]byte(payload), &raw); err != nil {
		return Event{}, fmt.Errorf("decode event: %w", err)
	}
	if raw.Payload != nil {
		raw = *raw.Payload
	}
	if raw.Type == "" {
		return Event{}, errors.New("decode event: no type")
	}
	ev := Event{Type: raw.Type}
	if !delivered[raw.Type] {
		return ev, nil
	}
	var p eventPropertiesJSON
	if err := json.Unmarshal(raw.Properties, &p); err != nil {
		return Event{}, fmt.Errorf("decode %s event: %w", raw.Type, err)
	}
	ev.SessionID, ev.Status = p.SessionID, p.Status.Type
	if raw.Type == EventSessionStatus && ev.Status == "" {
		return Event{}, fmt.Errorf("decode %s event: no status", raw.Type)
	}
	return ev, nil
}

// reconnectBackoff is the wait before reconnecting: from 250 ms, doubled per
// failed attempt in a row, capped at 5 s, less up to half at random so that
// many clients do not reconnect in step.
var reconnectBackoff = forge.Backoff{Base: 250 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.5}

// reconnectDelay is the wait after failures failed reconnects in a row (0
// after a stream that was up broke), with r in [0, 1) from rand.Float64.
func reconnectDelay(failures int, r float64) time.Duration {
	return reconnectBackoff.Delay(failures+1, r)
}

// clip shortens s for a log line.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
