package forgejo

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestErrorsSayWhetherToRetry(t *testing.T) {
	tests := []struct {
		status    int
		retryable bool
		is        error
	}{
		{0, true, nil},
		{401, false, ErrUnauthorized},
		{404, false, ErrNotFound},
		{422, false, nil},
		{429, true, nil},
		{500, true, nil},
		{503, true, nil},
	}
	for _, tt := range tests {
		err := newError("get thing", tt.status, errors.New("x"))
		if IsRetryable(err) != tt.retryable {
			t.Errorf("status %d: retryable = %v, want %v (%v)", tt.status, IsRetryable(err), tt.retryable, err)
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("status %d: %v is not %v", tt.status, err, tt.is)
		}
	}
}

// TestRetryAfterIsRead: a 429 or 503 (from a proxy in front of the forge)
// carries the wait it asks for, in seconds or as a date; the error says it,
// bounded, for the back-off to honour.
func TestRetryAfterIsRead(t *testing.T) {
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name, header string
		status       int
		min, max     time.Duration
	}{
		{"429 in seconds", "7", http.StatusTooManyRequests, 7 * time.Second, 7 * time.Second},
		{"503 as a date", date, http.StatusServiceUnavailable, 85 * time.Second, 91 * time.Second},
		{"absurd: capped", "999999999", http.StatusTooManyRequests, maxRetryAfter, maxRetryAfter},
		{"unreadable: none", "soon", http.StatusTooManyRequests, 0, 0},
		{"a 500 asks nothing", "7", http.StatusInternalServerError, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeForge(t, 50)
			f.mux.HandleFunc("/api/v1/repos/o/r/pulls/3", func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Retry-After", tt.header)
				w.WriteHeader(tt.status)
			})
			_, err := f.client(Options{}).PR(context.Background(), "o", "r", 3)
			if err == nil || !IsRetryable(err) {
				t.Fatalf("err = %v, want a retryable error", err)
			}
			if got := RetryAfter(err); got < tt.min || got > tt.max {
				t.Errorf("RetryAfter = %s, want %s to %s", got, tt.min, tt.max)
			}
		})
	}
}
