package retry

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

type marked bool

func (m marked) Error() string    { return "marked" }
func (m marked) RetryLater() bool { return bool(m) }

func TestLater(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"marked retryable", marked(true), true},
		{"marked permanent", marked(false), false},
		{"wrapped", fmt.Errorf("op: %w", marked(true)), true},
		{"plain error: the default is no", errors.New("boom"), false},
		{"cancelled", context.Canceled, false},
	}
	for _, tt := range tests {
		if got := Later(tt.err); got != tt.want {
			t.Errorf("%s: Later(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
