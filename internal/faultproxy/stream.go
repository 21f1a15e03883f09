package faultproxy

import (
	"io"
	"net/http"
	"strings"
	"time"
)

func isStream(resp *http.Response) bool {
	return strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
}

// serveStream passes an event stream through, flushing every chunk. A
// stream picked for a fault other than a 502 runs for a while and is then
// reset.
func (p *Proxy) serveStream(w http.ResponseWriter, r *http.Request, resp *http.Response, fault Kind) {
	p.mu.Lock()
	p.stats.Streams++
	if p.opts.StreamShare > 0 {
		fault = ""
		if p.rnd.Float64() < p.opts.StreamShare {
			fault = StreamReset
		}
	}
	after := time.Duration(p.rnd.Int64N(int64(p.opts.StreamCut))) + time.Millisecond
	p.mu.Unlock()
	if fault == Status502 {
		p.count(Status502, r)
		http.Error(w, "fault injected: bad gateway", http.StatusBadGateway)
		return
	}
	var cutAt <-chan time.Time
	if fault != "" {
		t := time.NewTimer(after)
		defer t.Stop()
		cutAt = t.C
	}
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	flusher := w.(http.Flusher)
	flusher.Flush()
	chunks, done := make(chan []byte), make(chan struct{})
	defer close(done)
	go readChunks(resp.Body, chunks, done)
	for {
		select {
		case b, ok := <-chunks:
			if !ok {
				return
			}
			if _, err := w.Write(b); err != nil {
				return
			}
			flusher.Flush()
		case <-cutAt:
			p.count(StreamReset, r)
			resetConn(w)
			return
		case <-r.Context().Done():
			return
		case <-p.stop:
			return
		}
	}
}

// readChunks sends what the body yields, as it comes, until the body ends
// or done is closed; then it closes the body and chunks.
func readChunks(body io.ReadCloser, chunks chan<- []byte, done <-chan struct{}) {
	defer close(chunks)
	go func() { <-done; body.Close() }() // unblocks a Read in progress
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			select {
			case chunks <- append([]byte(nil), buf[:n]...):
			case <-done:
				return
			}
		}
		if err != nil {
			return
		}
	}
}
