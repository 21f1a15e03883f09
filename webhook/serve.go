package webhook

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"pool/internal/httpserve"
)

// shutdownGrace bounds how long Serve waits for deliveries in progress once
// ctx ends. Deliveries are answered at once, so this is only a backstop.
const shutdownGrace = httpserve.ShutdownGrace

// maxConns caps the receiver's open connections: the forge delivers one
// event at a time, and anyone who reaches the port can open many.
const maxConns = 64

var options = httpserve.Options{Name: "webhook", ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, MaxConns: maxConns,
	BeyondLoopback: "the webhook receiver listens beyond loopback over plain HTTP; put TLS (a reverse proxy) in front of it"}

// Serve listens on addr (e.g. 127.0.0.1:8787) and serves h until ctx ends,
// then shuts down gracefully within a bounded time. It returns nil after a
// shutdown caused by ctx, and an error if it cannot listen or serve. On an
// address beyond loopback it warns, once, that TLS belongs in front: the
// receiver speaks plain HTTP.
func Serve(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	return httpserve.Listen(ctx, addr, h, options, component(log))
}

// serve is Serve on a listener it owns.
func serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	return httpserve.Serve(ctx, ln, h, options, component(log))
}

func component(log *slog.Logger) *slog.Logger {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return log.With("component", "webhook")
}
