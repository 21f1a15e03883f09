// Package bounded caps the answers the pool reads over HTTP. The forge and
// the agent server each get one http.Client from Client; every response body
// read through it stops with a *TooLargeError past the cap, so a hostile or
// broken server cannot make the pool hold an answer of any size.
package bounded

import (
	"fmt"
	"io"
	"net/http"
	"time"
)

// DefaultMaxBody is the cap on one answer when none is configured
// (limits.max_body).
const DefaultMaxBody int64 = 16 << 20

// TooLargeError says an answer was larger than the cap.
type TooLargeError struct {
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("answer larger than the %s cap (limits.max_body)", Size(e.Limit))
}

// Size renders a byte count the way the limit is configured: 16 MiB, 512 KiB.
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Client returns an http.Client that sends through base (nil:
// http.DefaultTransport), gives up on a call after timeout (the body's read
// included), and caps every answer's body at maxBody (0: DefaultMaxBody).
func Client(base http.RoundTripper, maxBody int64, timeout time.Duration) *http.Client {
	return &http.Client{Transport: Transport(base, maxBody), Timeout: timeout}
}

// Transport wraps base (nil: http.DefaultTransport) so that every answer's
// body is capped at maxBody (0: DefaultMaxBody). An answer that declares a
// longer Content-Length fails at once, without its body being read.
func Transport(base http.RoundTripper, maxBody int64) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	return &transport{base: base, max: maxBody}
}

type transport struct {
	base http.RoundTripper
	max  int64
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > t.max {
		resp.Body.Close()
		return nil, &TooLargeError{Limit: t.max}
	}
	resp.Body = &cappedBody{rc: resp.Body, left: t.max, limit: t.max}
	return resp, nil
}

// cappedBody reads at most limit bytes, then fails with a *TooLargeError if
// more follow.
type cappedBody struct {
	rc    io.ReadCloser
	left  int64 // bytes that may still be read
	limit int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var probe [1]byte
		n, err := b.rc.Read(probe[:])
		if n > 0 {
			return 0, &TooLargeError{Limit: b.limit}
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }
