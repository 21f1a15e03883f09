package store

import (
	"testing"

	bolt "go.etcd.io/bbolt"

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

// TestTracksOfAnOlderOrNewerPoolLoad: a track saved without the fields a
// later pool added (train_solo) loads with them empty, one with a field
// this pool does not know loads without it, and the solo decision a pool
// keeps (train_solo, train_solo_why) comes back after a reopen.
func TestTracksOfAnOlderOrNewerPoolLoad(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, "acme", "widgets", nil)
	if err != nil {
		t.Fatal(err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(tracksBucket)
		if err := b.Put([]byte("5"), []byte(`{"state":"merge_queued","head_sha":"abc","train_left":"abc"}`)); err != nil {
			return err
		}
		return b.Put([]byte("6"), []byte(`{"state":"merge_queued","head_sha":"def","a_later_field":{"x":1}}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	solo := lifecycle.RideAlone(lifecycle.Track{State: lifecycle.MergeQueued, HeadSHA: "ghi"}, "ghi", lifecycle.SoloConflict)
	if err := s.Save(7, solo); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(dir, "acme", "widgets", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tracks, err := s.Tracks()
	if err != nil {
		t.Fatal(err)
	}
	if tr := tracks[5]; tr.HeadSHA != "abc" || tr.TrainLeft != "abc" || tr.TrainSolo != "" || tr.Alone("abc") {
		t.Errorf("an older track loaded as %+v", tr)
	}
	if tr := tracks[6]; tr.HeadSHA != "def" || tr.State != lifecycle.MergeQueued {
		t.Errorf("a newer track loaded as %+v", tr)
	}
	if tr := tracks[7]; tr != solo || !tr.Alone("ghi") || tr.TrainSoloWhy != lifecycle.SoloConflict {
		t.Errorf("the solo decision came back as %+v, want %+v", tr, solo)
	}
}
