// Package guard starts the pool's goroutines so that a panic in one of them
// ends the process as a run-time failure (exit 1, relaunchable) rather than
// as Go's unrecovered panic (exit 2, which the pool reserves for "config
// error, do not relaunch").
//
// The process's root context carries where panics go (WithPanics). Go
// recovers a panic at the top of its goroutine, logs it with its stack, and
// cancels that root context with a *PanicError as the cause, so the pool shuts
// down the usual way; the command then finds the panic with Panicked and exits
// 1. A goroutine started under a context without WithPanics re-panics, as if
// it had not been guarded.
package guard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
)

// PanicError is a recovered panic: the goroutine's name, the value and the
// stack.
type PanicError struct {
	Where string
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("panic in %s: %v", e.Where, e.Value)
}

type sinkKey struct{}

// WithPanics returns a context that is cancelled, with a *PanicError as its
// cause, when a goroutine started by Go under it panics. onPanic, if not nil,
// is called once with the first panic (cmd/pool arms a last-resort exit there).
func WithPanics(parent context.Context, onPanic func(*PanicError)) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	report := func(p *PanicError) {
		if context.Cause(ctx) == nil && onPanic != nil {
			onPanic(p)
		}
		cancel(p)
	}
	return context.WithValue(ctx, sinkKey{}, report), func() { cancel(nil) }
}

// Panicked returns the panic that ended ctx, or nil.
func Panicked(ctx context.Context) *PanicError {
	var p *PanicError
	if errors.As(context.Cause(ctx), &p) {
		return p
	}
	return nil
}

// Go runs fn in a new goroutine named where (for the log). A panic in fn is
// recovered, logged with its stack on log (may be nil), and reported to the
// context made by WithPanics that ctx descends from. ctx is read only for that:
// fn takes the contexts it needs itself.
func Go(ctx context.Context, log *slog.Logger, where string, fn func()) {
	report, _ := ctx.Value(sinkKey{}).(func(*PanicError))
	go func() {
		defer Recover(log, where, report)
		fn()
	}()
}

// Recover is Go's deferred half, for a goroutine that cannot be started by
// Go. report nil means re-panic.
func Recover(log *slog.Logger, where string, report func(*PanicError)) {
	v := recover()
	if v == nil {
		return
	}
	p := &PanicError{Where: where, Value: v, Stack: debug.Stack()}
	if log != nil {
		log.Error("goroutine panicked; shutting down to exit 1", "where", where, "panic", fmt.Sprint(v), "stack", string(p.Stack))
	}
	if report == nil {
		panic(v)
	}
	report(p)
}
