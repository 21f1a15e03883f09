package webhook

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

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
	case <-time.After(shutdownGrace + guard):
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
