package forge

import (
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	tests := []struct {
		name string
		p    Backoff
		n    int
		r    float64
		want time.Duration
	}{
		{"no failure", Backoff{Base: time.Second, Max: time.Minute}, 0, 0, 0},
		{"negative count", Backoff{Base: time.Second, Max: time.Minute}, -3, 0, 0},
		{"no base", Backoff{Max: time.Minute}, 4, 0, 0},
		{"first failure waits base", Backoff{Base: time.Second, Max: time.Minute}, 1, 0, time.Second},
		{"doubles per failure", Backoff{Base: time.Second, Max: time.Minute}, 4, 0, 8 * time.Second},
		{"capped", Backoff{Base: time.Second, Max: time.Minute}, 7, 0, time.Minute},
		{"huge count stays capped", Backoff{Base: time.Second, Max: time.Minute}, 1 << 30, 0, time.Minute},
		{"no max: doubles without cap", Backoff{Base: time.Second}, 3, 0, 4 * time.Second},
		{"no max: stops doubling before it overflows", Backoff{Base: time.Second}, 1 << 30, 0, time.Second << 33},
		{"base above max", Backoff{Base: time.Hour, Max: time.Minute}, 1, 0, time.Minute},
		{"jitter off without r", Backoff{Base: time.Second, Max: time.Minute, Jitter: 0.5}, 1, 0, time.Second},
		{"half of the jitter", Backoff{Base: 4 * time.Second, Max: time.Minute, Jitter: 0.5}, 1, 0.5, 3 * time.Second},
		{"jitter on the capped wait", Backoff{Base: time.Second, Max: time.Minute, Jitter: 0.25}, 9, 0.5, 52500 * time.Millisecond},
		{"r near one takes almost all the jitter", Backoff{Base: 4 * time.Second, Max: time.Minute, Jitter: 0.25}, 1, 0.999999, 3*time.Second + 1000*time.Nanosecond},
		{"r out of range is clamped", Backoff{Base: 4 * time.Second, Max: time.Minute, Jitter: 0.5}, 1, 7, 2 * time.Second},
		{"jitter above one is clamped", Backoff{Base: 4 * time.Second, Max: time.Minute, Jitter: 3}, 1, 0.5, 2 * time.Second},
		{"negative jitter is none", Backoff{Base: 4 * time.Second, Max: time.Minute, Jitter: -1}, 1, 0.5, 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Delay(tt.n, tt.r); got != tt.want {
				t.Errorf("%+v.Delay(%d, %v) = %s, want %s", tt.p, tt.n, tt.r, got, tt.want)
			}
		})
	}
}

func TestDelayHonoursTheServersWait(t *testing.T) {
	p := Backoff{Base: time.Second, Max: time.Minute, Jitter: 0.25}
	tests := []struct {
		name  string
		n     int
		asked time.Duration
		want  time.Duration
	}{
		{"nothing asked: the back-off", 2, 0, 2 * time.Second},
		{"asked for less: the back-off", 3, time.Second, 4 * time.Second},
		{"asked for more: what was asked, without jitter", 1, 30 * time.Second, 30 * time.Second},
		{"asked for more than the cap: the cap", 1, time.Hour, time.Minute},
		{"a negative ask is none", 1, -time.Hour, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.DelayAtLeast(tt.n, 0, tt.asked); got != tt.want {
				t.Errorf("DelayAtLeast(%d, 0, %s) = %s, want %s", tt.n, tt.asked, got, tt.want)
			}
		})
	}
}
