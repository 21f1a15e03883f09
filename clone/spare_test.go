package clone

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestSpareTreesAreAtTheBaseAndLentWhileWarmed: spare trees are made at
// the default branch's head, lent, up to the number asked for (trees a
// session has count); given back they are free, and the next TakeTree
// takes one. A free tree a PR's session left is lent back at the base.
func TestSpareTreesAreAtTheBaseAndLentWhileWarmed(t *testing.T) {
	ctx := context.Background()
	c, head1, head2 := openTwoPRs(t)
	base := gitIn(t, c.repoDir(), "rev-parse", "refs/remotes/origin/main")
	busy, err := c.TakeTree(ctx, 1, head1)
	if err != nil {
		t.Fatal(err)
	}
	var spares []string
	for {
		dir, err := c.SpareTree(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		if dir == "" {
			break
		}
		spares = append(spares, dir)
		if got := gitIn(t, dir, "rev-parse", "HEAD"); got != base {
			t.Errorf("spare tree at %s, want the base %s", got, base)
		}
	}
	if len(spares) != 2 || len(c.FreeTrees()) != 0 {
		t.Fatalf("spares %v, free %v; want two spares (three trees with the busy one), none free while lent", spares, c.FreeTrees())
	}
	for _, dir := range spares {
		if kept, err := c.GiveTree(ctx, dir, 3); !kept || err != nil {
			t.Fatalf("giving back spare %s: kept %v, %v", dir, kept, err)
		}
	}
	if free := c.FreeTrees(); !slices.Equal(free, slices.Sorted(slices.Values(spares))) {
		t.Fatalf("free trees %v, want the spares %v", free, spares)
	}
	dir, err := c.TakeTree(ctx, 2, head2)
	if err != nil || !slices.Contains(spares, dir) {
		t.Fatalf("TakeTree after the spares: %s, %v; want one of %v", dir, err, spares)
	}
	if _, err := c.GiveTree(ctx, dir, 3); err != nil {
		t.Fatal(err)
	}
	if lent, err := c.LendTree(ctx, busy); lent || err != nil {
		t.Errorf("lent a busy tree: %v, %v", lent, err)
	}
	if lent, err := c.LendTree(ctx, dir); !lent || err != nil {
		t.Fatalf("lending %s, free at #2's head: %v, %v", dir, lent, err)
	}
	if got := gitIn(t, dir, "rev-parse", "HEAD"); got != base {
		t.Errorf("lent tree at %s, want the base %s", got, base)
	}
	if _, err := os.Stat(filepath.Join(dir, "two.txt")); !os.IsNotExist(err) {
		t.Errorf("lent tree still has #2's file: %v", err)
	}
}

// TestAStalledFetchHoldsNoTreeBack: while one TakeTree waits on a fetch
// from a remote that does not answer, another slot gives its tree back
// and a spare is made: the fetch holds no lock they need. (With the
// clone's lock held across the fetch, slots given PRs at once started
// their sessions 4–5 s apart on a loaded machine.)
func TestAStalledFetchHoldsNoTreeBack(t *testing.T) {
	ctx := context.Background()
	c, head1, head2 := openTwoPRs(t)
	dir, err := c.TakeTree(ctx, 1, head1)
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{})
	var once sync.Once
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(asked) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c.url = srv.URL + "/alice/demo.git" // the remote stalls from now on
	fetching, stop := context.WithCancel(ctx)
	defer stop()
	taken := make(chan error, 1)
	go func() {
		_, err := c.TakeTree(fetching, 2, head2)
		taken <- err
	}()
	select {
	case <-asked:
	case <-time.After(time.Minute):
		t.Fatal("the second TakeTree never asked the remote")
	}
	done := make(chan error, 1)
	go func() {
		if _, err := c.GiveTree(ctx, dir, 2); err != nil {
			done <- err
			return
		}
		_, err := c.SpareTree(ctx, 2)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("giving a tree back and making a spare waited for another TakeTree's fetch")
	}
	stop()
	if err := <-taken; err == nil {
		t.Error("the stalled TakeTree succeeded")
	}
}
