package clone

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestTrainLease: two pools' clones of one repository share the train
// lease of main. Taking it on "no lease" succeeds once; the other's take
// on the same old value is refused, and reads the holder; a renewal on the
// commit read succeeds, a takeover on an old commit is refused, one on the
// commit read succeeds; the old holder then can neither renew nor give it
// back; the new holder gives it back, and no lease is left.
func TestTrainLease(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src")
	twoPRForge(t, src)
	open := func() *Clone {
		c, err := Open(ctx, Options{Dir: filepath.Join(t.TempDir(), "clone"), URL: src, Token: "tok", Branch: "main"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := open(), open()
	now := time.Date(2026, 12, 2, 21, 0, 0, 0, time.UTC)
	if commit, holder, err := b.Lease(ctx, "main"); err != nil || commit != "" || holder != "" {
		t.Fatalf("Lease before any: %q, %q, %v; want none", commit, holder, err)
	}
	l1, err := a.TakeLease(ctx, "main", "pool-a", "", now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TakeLease(ctx, "main", "pool-b", "", now); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("b takes a held lease as free: %v, want ErrLeaseLost", err)
	}
	if commit, holder, err := b.Lease(ctx, "main"); err != nil || commit != l1 || holder != "pool-a" {
		t.Errorf("b reads %q, %q, %v; want %s held by pool-a", commit, holder, err, l1)
	}
	l2, err := a.TakeLease(ctx, "main", "pool-a", l1, now.Add(time.Minute)) // renewed
	if err != nil || l2 == l1 {
		t.Fatalf("renewal: %s, %v; want a new lease commit", l2, err)
	}
	if _, err := b.TakeLease(ctx, "main", "pool-b", l1, now); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("b takes over on the lease before the renewal: %v, want ErrLeaseLost", err)
	}
	l3, err := b.TakeLease(ctx, "main", "pool-b", l2, now.Add(time.Hour)) // taken over
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.TakeLease(ctx, "main", "pool-a", l2, now); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("a renews a lease taken over: %v, want ErrLeaseLost", err)
	}
	if err := a.DropLease(ctx, "main", l2); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("a gives back a lease taken over: %v, want ErrLeaseLost", err)
	}
	if commit, holder, _ := a.Lease(ctx, "main"); commit != l3 || holder != "pool-b" {
		t.Errorf("a reads %q, %q; want %s held by pool-b", commit, holder, l3)
	}
	if err := b.DropLease(ctx, "main", l3); err != nil {
		t.Fatal(err)
	}
	if commit, _, err := a.Lease(ctx, "main"); err != nil || commit != "" {
		t.Errorf("after the give-back a reads %q, %v; want no lease", commit, err)
	}
	if got := gitIn(t, src, "for-each-ref", "refs/heads/"); got == "" || len(gitIn(t, src, "for-each-ref", "refs/heads/pool-train-lease")) > 0 {
		t.Errorf("the lease shows as a branch: %q", got)
	}
}
