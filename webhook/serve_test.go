package webhook

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pool/internal/syncbuf"
)

// TestServeCapsConnections: with the cap at 2, a third request does not
// reach the handler while two are held, and does once one ends.
func TestServeCapsConnections(t *testing.T) {
	saved := options
	defer func() { options = saved }()
	options.MaxConns = 2
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var active atomic.Int32
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		active.Add(1)
		<-release
		w.WriteHeader(http.StatusNoContent)
	})
	go serve(t.Context(), ln, h, nil)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	done := make(chan error, 3)
	for range 3 {
		go func() {
			resp, err := client.Get("http://" + ln.Addr().String() + "/")
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
	}
	waitUntil(t, time.Minute, func() bool { return active.Load() >= 2 })
	// A third connection past the cap would reach the handler meanwhile.
	if heldWithin(2*time.Second, func() bool { return active.Load() > 2 }) {
		t.Fatalf("%d requests in the handler at once, want at most 2", active.Load())
	}
	release <- struct{}{}
	waitUntil(t, time.Minute, func() bool { return active.Load() == 3 })
	close(release)
	for range 3 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// heldWithin reports whether cond held within d.
func heldWithin(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func waitUntil(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	if !heldWithin(d, cond) {
		t.Fatalf("condition not met within %s", d)
	}
}

func TestServeAnswersThenStopsWithContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, h, nil) }()

	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Errorf("status %d, want %d", resp.StatusCode, http.StatusTeapot)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve after cancel: %v", err)
		}
	case <-time.After(shutdownGrace + patience):
		t.Fatal("serve did not return after its context ended")
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil {
		t.Error("still answering after shutdown")
	}
}

func TestServeCannotListen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = Serve(t.Context(), ln.Addr().String(), http.NotFoundHandler(), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "webhook: serve on 127.0.0.1:") {
		t.Errorf("Serve on a taken port: %v", err)
	}
}

// publicAddr is a loopback listener that reports a public address, so the
// warning can be seen without listening beyond loopback.
type publicAddr struct{ net.Listener }

func (publicAddr) Addr() net.Addr { return &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 8787} }

func TestServeWarnsOnceBeyondLoopback(t *testing.T) {
	for _, tt := range []struct {
		name     string
		public   bool
		warnings int
	}{{"loopback", false, 0}, {"beyond loopback", true, 1}} {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			if tt.public {
				ln = publicAddr{ln}
			}
			var logs syncbuf.Buffer
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- serve(ctx, ln, http.NotFoundHandler(), slog.New(slog.NewTextHandler(&logs, nil))) }()
			for range 3 {
				if resp, err := http.Get("http://" + addr + "/"); err == nil {
					resp.Body.Close()
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(logs.String(), "put TLS"); n != tt.warnings {
				t.Errorf("%d TLS warnings, want %d:\n%s", n, tt.warnings, logs.String())
			}
		})
	}
}
