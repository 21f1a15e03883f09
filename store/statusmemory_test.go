package store

import (
	"testing"

	"pool/commitstatus"
	"pool/forgejo"
)

// TestStoreKeepsWrittenStatusesAcrossAReopen: the commit statuses the
// publisher wrote are there after the store is closed and opened again,
// and a forgotten one is gone.
func TestStoreKeepsWrittenStatusesAcrossAReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, "o", "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	kept := forgejo.NewStatus{Context: "pool", State: "pending", Description: "humans only"}
	a, b := commitstatus.Head{PR: 1, SHA: "abc"}, commitstatus.Head{PR: 2, SHA: "def"}
	if err := s.Remember(a, kept); err != nil {
		t.Fatal(err)
	}
	if err := s.Remember(b, kept); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(b); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(dir, "o", "r", nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Written()
	if err != nil || len(got) != 1 || got[a] != kept {
		t.Errorf("Written = %v, %v; want only %v: %v", got, err, a, kept)
	}
}
