package serve

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"pool/forgejo"
)

func TestRetryStart(t *testing.T) {
	transient := &forgejo.Error{Op: "server version", Status: 502, Retryable: true, Err: errors.New("bad gateway")}
	rejected := &forgejo.Error{Op: "who am i", Status: 401, Err: forgejo.ErrUnauthorized}
	tests := []struct {
		name      string
		fails     []error // the step's answers, in order; then success
		wantCalls int
		wantErr   error
	}{
		{"succeeds at once", nil, 1, nil},
		{"a transient fault is ridden out", []error{transient, transient}, 3, nil},
		{"a rejected token stops at once", []error{rejected}, 1, rejected},
		{"a forge that stays down stops after the last attempt", slices.Repeat([]error{transient}, startAttempts+1), startAttempts, transient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := retryStart(context.Background(), slog.New(slog.DiscardHandler), "step", time.Millisecond, forgeRetryable, func() error {
				calls++
				if calls <= len(tt.fails) {
					return tt.fails[calls-1]
				}
				return nil
			})
			if calls != tt.wantCalls || !errors.Is(err, tt.wantErr) {
				t.Errorf("%d calls, err %v; want %d calls, err %v", calls, err, tt.wantCalls, tt.wantErr)
			}
		})
	}
}

func TestRetryStartStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := retryStart(ctx, slog.New(slog.DiscardHandler), "step", time.Hour, cloneRetryable, func() error {
		calls++
		cancel()
		return errors.New("clone: fetch: unexpected EOF")
	})
	if calls != 1 || err == nil {
		t.Errorf("%d calls, err %v; want one call and its error", calls, err)
	}
}
