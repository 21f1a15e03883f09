// Package httpserve runs one plain HTTP listener of the pool (the webhook
// receiver, the ops listener) until its context ends, then shuts it down
// within a bounded time.
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"

	"pool/internal/guard"
)

// ShutdownGrace bounds how long Serve waits for requests in progress once
// its context ends.
const ShutdownGrace = 5 * time.Second

// Options shape one listener.
type Options struct {
	Name                      string // names its errors ("webhook: serve on ...") and its goroutine
	ReadTimeout, WriteTimeout time.Duration
	// BeyondLoopback, when set, is warned once when the listener is not
	// on loopback.
	BeyondLoopback string
	// MaxConns, when set, caps the connections open at once: the next
	// waits in the kernel's queue until one closes.
	MaxConns int
}

// Listen listens on addr (e.g. 127.0.0.1:8787) and serves h as Serve does.
func Listen(ctx context.Context, addr string, h http.Handler, opt Options, log *slog.Logger) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: serve on %s: %w", opt.Name, addr, err)
	}
	return Serve(ctx, ln, h, opt, log)
}

// Serve serves h on ln until ctx ends. It returns nil after a shutdown
// caused by ctx, and an error if it cannot serve or shut down.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, opt Options, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opt.MaxConns > 0 {
		ln = netutil.LimitListener(ln, opt.MaxConns)
	}
	srv := &http.Server{
		Handler: h,
		// Requests carry ctx's values (not its end): a goroutine a
		// request starts finds where its panic goes (see guard).
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       opt.ReadTimeout,
		WriteTimeout:      opt.WriteTimeout,
		IdleTimeout:       time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	addr := ln.Addr().String()
	served := make(chan error, 1)
	guard.Go(ctx, log, opt.Name+" server", func() { served <- srv.Serve(ln) })
	log.Info("listening", "addr", addr)
	if opt.BeyondLoopback != "" && !loopback(ln.Addr()) {
		log.Warn(opt.BeyondLoopback, "addr", addr)
	}
	select {
	case err := <-served:
		return fmt.Errorf("%s: serve on %s: %w", opt.Name, addr, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		_ = srv.Close()
		err = fmt.Errorf("%s: shut down %s: %w", opt.Name, addr, err)
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = fmt.Errorf("%s: serve on %s: %w", opt.Name, addr, serr)
	}
	log.Info("stopped", "addr", addr)
	return err
}

func loopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
