package serve

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"pool/forgejo"
)

// fakeSearch answers searches from a list of changes and records the calls
// as plain strings.
type fakeSearch struct {
	mu      sync.Mutex
	changes []forgejo.RepoPRChange
	clock   time.Time
	calls   []string
}

func (f *fakeSearch) SearchChangedPRs(_ context.Context, owner string, since time.Time) ([]forgejo.RepoPRChange, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("search %s since %s", owner, since.Format("15:04:05")))
	var out []forgejo.RepoPRChange
	for _, ch := range f.changes {
		if !ch.Updated.Before(since) {
			out = append(out, ch)
		}
	}
	return out, f.clock, nil
}

func (f *fakeSearch) ChangedPRs(_ context.Context, owner, repo string, since time.Time) ([]forgejo.PRChange, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("changed %s/%s", owner, repo))
	return nil, f.clock, nil
}

// TestChangeFeedOneSearchARound: the quiet cycles of three repositories of
// one owner cost one search a round, and each gets only its own changes.
func TestChangeFeedOneSearchARound(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	fs := &fakeSearch{clock: t0.Add(10 * time.Second), changes: []forgejo.RepoPRChange{
		{Repo: "acme/a", PRChange: forgejo.PRChange{Number: 1, State: "open", Updated: t0.Add(5 * time.Second)}},
		{Repo: "Acme/B", PRChange: forgejo.PRChange{Number: 1, State: "closed", Updated: t0.Add(6 * time.Second)}},
	}}
	feed := newChangeFeed(fs, func() time.Time { return t0.Add(time.Minute) })
	ctx := context.Background()
	got := map[string][]forgejo.PRChange{}
	for _, repo := range []string{"a", "b", "c"} {
		changes, served, err := feed.changed(ctx, "acme", repo, t0)
		if err != nil || !served.Equal(fs.clock) {
			t.Fatalf("%s: served %v, %v", repo, served, err)
		}
		got[repo] = changes
	}
	if len(got["a"]) != 1 || got["a"][0].State != "open" || len(got["b"]) != 1 || got["b"][0].State != "closed" || len(got["c"]) != 0 {
		t.Errorf("changes by repository: %v", got)
	}
	// The next round: the first to ask searches again, from a second
	// before the last answer; the others share it.
	for _, repo := range []string{"b", "a", "c"} {
		if _, _, err := feed.changed(ctx, "acme", repo, fs.clock.Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"search acme since 12:00:00", "search acme since 12:00:09"}
	if !slices.Equal(fs.calls, want) {
		t.Errorf("calls %v, want %v", fs.calls, want)
	}
}

// TestChangeFeedSearchesAgainForAnOlderSince: a pool asking from before the
// latest search's start gets a search of its own; one asking from the
// future (reading the forge's clock before a full listing) asks its
// repository before any search, and takes the latest search's answer time
// after, with no request.
func TestChangeFeedSearchesAgainForAnOlderSince(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	fs := &fakeSearch{clock: t0}
	feed := newChangeFeed(fs, func() time.Time { return t0 })
	ctx := context.Background()
	future := t0.Add(24 * time.Hour)
	for _, since := range []time.Time{future, t0.Add(-time.Minute), t0.Add(-time.Hour), future} {
		if _, _, err := feed.changed(ctx, "acme", "a", since); err != nil {
			t.Fatal(err)
		}
		changes, served, err := feed.changed(ctx, "acme", "b", since)
		if err != nil {
			t.Fatal(err)
		}
		if since == future && (len(changes) != 0 || !served.Equal(fs.clock)) {
			t.Errorf("reading the clock: changes %v, served %v; want none, at %v", changes, served, fs.clock)
		}
	}
	want := []string{"changed acme/a", "changed acme/b", "search acme since 11:59:00", "search acme since 11:00:00"}
	if !slices.Equal(fs.calls, want) {
		t.Errorf("calls %v, want %v", fs.calls, want)
	}
}

// TestChangeFeedGatesFullListings: one full listing of an owner's
// repositories between two searches, and any before the first.
func TestChangeFeedGatesFullListings(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	fs := &fakeSearch{clock: t0}
	feed := newChangeFeed(fs, func() time.Time { return fs.clock.Add(time.Hour) })
	ctx := context.Background()
	var got []bool
	take := func() { got = append(got, feed.takeListing("acme")) }
	search := func() {
		fs.clock = fs.clock.Add(time.Minute)
		if _, _, err := feed.changed(ctx, "acme", "a", fs.clock.Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	take()
	take() // before any search: the start, every pool lists
	search()
	take()
	take()
	got = append(got, feed.takeListing("other")) // another owner has its own
	search()
	take()
	if want := []bool{true, true, true, false, true, true}; !slices.Equal(got, want) {
		t.Errorf("listings allowed %v, want %v", got, want)
	}
}
