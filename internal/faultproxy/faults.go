package faultproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// cut writes the answer up to the middle of its body (or of its headers,
// when the body is empty), then waits hold, then drops the connection.
func (p *Proxy) cut(w http.ResponseWriter, resp *http.Response, body []byte, hold time.Duration) {
	raw := rawAnswer(resp, body)
	end := len(raw) - len(body) + len(body)/2
	if len(body) == 0 {
		end = len(raw) / 2
	}
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	buf.Write(raw[:end])
	buf.Flush()
	if hold > 0 {
		p.waitConn(conn, hold)
	}
}

// rawAnswer is the answer as it goes on the wire, with a Content-Length.
func rawAnswer(resp *http.Response, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", resp.StatusCode, http.StatusText(resp.StatusCode))
	h := http.Header{}
	copyHeader(h, resp.Header)
	h.Set("Content-Length", fmt.Sprint(len(body)))
	h.Write(&b)
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}

// waitConn waits d, or until the client closes the connection or the proxy
// closes.
func (p *Proxy) waitConn(conn net.Conn, d time.Duration) {
	gone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, conn) // returns when the client closes
		close(gone)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-gone:
	case <-p.stop:
	}
}

// wait waits d unless the client goes or the proxy closes first.
func (p *Proxy) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-p.stop:
	}
	return false
}

// resetConn drops the client's connection with a TCP reset.
func resetConn(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0) // close sends RST, not FIN
	}
	conn.Close()
}
