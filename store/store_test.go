package store

import (
	"testing"

	"pool/lifecycle"
)

func TestStoreKeepsIdentityAndTracksAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, "acme", "widgets", nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.InstanceID("", func() string { return "first" })
	if err != nil || id != "first" {
		t.Fatalf("InstanceID = %q, %v", id, err)
	}
	want := lifecycle.Track{State: lifecycle.CIPending, HeadSHA: "abc", ReviewedSHA: "abc", Attempts: 7}
	if err := s.Save(3, want); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(4, lifecycle.Track{State: lifecycle.Merged}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(4); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(dir, "acme", "widgets", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if id, _ := s.InstanceID("", func() string { return "second" }); id != "first" {
		t.Errorf("identity after reopen = %q, want first", id)
	}
	tracks, err := s.Tracks()
	if err != nil {
		t.Fatal(err)
	}
	if len(tracks) != 1 || tracks[3] != want {
		t.Errorf("tracks = %+v", tracks)
	}
	if id, _ := s.InstanceID("configured", nil); id != "configured" {
		t.Errorf("a configured identity must win, got %q", id)
	}
}

func TestStoreRefusesASecondOpener(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, "a", "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Open(dir, "a", "b", nil); err == nil {
		t.Error("a second pool on the same state dir opened the store")
	}
}
