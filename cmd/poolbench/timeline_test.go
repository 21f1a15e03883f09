package main

import (
	"testing"
	"time"
)

func TestTimelineSplitsTheTimeBetweenMerges(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	events := []event{
		{pr: 1, merge: true, start: at(0), end: at(500), ok: true},
		{pr: 2, start: at(100), end: at(150), ok: true}, // before the merge answered: not counted
		{pr: 2, start: at(700), end: at(750)},           // first read: still checking
		{pr: 2, start: at(950), end: at(1000)},
		{pr: 2, start: at(1150), end: at(1200), ok: true},
		{pr: 2, merge: true, start: at(1500), end: at(1600)}, // refused
		{pr: 2, merge: true, start: at(1800), end: at(2300), ok: true},
	}
	got := timelineOf(events)
	want := []mergeGaps{{read: 250 * time.Millisecond, ready: 450 * time.Millisecond, call: 300 * time.Millisecond, merge: 800 * time.Millisecond}}
	if len(got) != 1 || got[0] != want[0] {
		t.Fatalf("timeline = %+v, want %+v", got, want)
	}
	if got[0].total() != 1800*time.Millisecond {
		t.Errorf("total = %s, want 1.8s", got[0].total())
	}
}

func TestTimelineOfAMergeWithoutARead(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	events := []event{
		{pr: 1, merge: true, start: t0, end: t0.Add(time.Second), ok: true},
		{pr: 2, merge: true, start: t0.Add(1200 * time.Millisecond), end: t0.Add(2 * time.Second), ok: true},
	}
	got := timelineOf(events)
	if len(got) != 1 || got[0].read != 0 || got[0].ready != 0 || got[0].call != 200*time.Millisecond {
		t.Fatalf("timeline = %+v, want the whole wait as the caller's own (mergeable → call)", got)
	}
}

func TestRequestKind(t *testing.T) {
	tests := []struct{ method, uri, want string }{
		{"GET", "/api/v1/repos/owner/demo/pulls/12", "GET pulls/{n}"},
		{"POST", "/api/v1/repos/owner/demo/pulls/12/merge", "POST pulls/{n}/merge"},
		{"GET", "/api/v1/repos/owner/demo/pulls/12/reviews?page=1&limit=50", "GET pulls/{n}/reviews"},
		{"POST", "/api/v1/repos/owner/demo/statuses/0123456789abcdef0123456789abcdef01234567", "POST statuses/{sha}"},
		{"GET", "/api/v1/repos/owner/demo/commits/0123456789abcdef0123456789abcdef01234567/statuses?page=2", "GET commits/{sha}/statuses"},
		{"GET", "/api/v1/repos/issues/search?state=open&page=1", "GET repos/issues/search"},
		{"GET", "/api/v1/user", "GET user"},
	}
	for _, tt := range tests {
		if got := requestKind(tt.method, tt.uri); got != tt.want {
			t.Errorf("requestKind(%s %s) = %q, want %q", tt.method, tt.uri, got, tt.want)
		}
	}
}

// A run's time ends at its last merge the forge answered 200: not at a
// refused call after it, nor at a read.
func TestLastMergeAnswered(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	events := []event{
		{pr: 1, merge: true, start: at(1), end: at(2), ok: true},
		{pr: 2, merge: true, start: at(5), end: at(7), ok: true},
		{pr: 3, merge: true, start: at(8), end: at(9), ok: false},
		{pr: 3, start: at(10), end: at(11), ok: true},
	}
	if got := lastMergeAnswered(events, t0); !got.Equal(at(7)) {
		t.Fatalf("lastMergeAnswered = %s, want %s", got.Sub(t0), 7*time.Second)
	}
	if got := medianFloat([]float64{1.3, 0.9, 1.1, 1.0}); got != 1.05 {
		t.Fatalf("medianFloat = %v, want 1.05", got)
	}
}
