package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"pool/internal/guard"
)

// shutdownGrace bounds how long Serve waits for deliveries in progress once
// ctx ends. Deliveries are answered at once, so this is only a backstop.
const shutdownGrace = 5 * time.Second

// Serve listens on addr (e.g. 127.0.0.1:8787) and serves h until ctx ends,
// then shuts down gracefully within a bounded time. It returns nil after a
// shutdown caused by ctx, and an error if it cannot listen or serve. On an
// address beyond loopback it warns, once, that TLS belongs in front: the
// receiver speaks plain HTTP.
func Serve(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("webhook: serve on %s: %w", addr, err)
	}
	return serve(ctx, ln, h, log)
}

// serve is Serve on a listener it owns.
func serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "webhook")
	srv := &http.Server{
		Handler: h,
		// Requests carry ctx's values (not its end): a goroutine a
		// delivery starts finds where its panic goes (see guard).
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	addr := ln.Addr().String()
	served := make(chan error, 1)
	guard.Go(ctx, log, "webhook server", func() { served <- srv.Serve(ln) })
	log.Info("listening", "addr", addr)
	if !isLoopback(ln.Addr()) {
		log.Warn("the webhook receiver listens beyond loopback over plain HTTP; put TLS (a reverse proxy) in front of it", "addr", addr)
	}
	select {
	case err := <-served:
		return fmt.Errorf("webhook: serve on %s: %w", addr, err)
	case <-ctx.Done():
	}
	return shutdown(ctx, srv, served, addr, log)
}

func shutdown(ctx context.Context, srv *http.Server, served <-chan error, addr string, log *slog.Logger) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		_ = srv.Close()
		err = fmt.Errorf("webhook: shut down %s: %w", addr, err)
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = fmt.Errorf("webhook: serve on %s: %w", addr, serr)
	}
	log.Info("stopped", "addr", addr)
	return err
}

// isLoopback reports whether a listener's address is on loopback only.
func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
