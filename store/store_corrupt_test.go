package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"pool/lifecycle"
)

// healthyStore writes a store with enough tracks to span many pages and
// returns the path of its file.
func healthyStore(t *testing.T, dir string) string {
	t.Helper()
	s, err := Open(dir, "acme", "widgets", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.InstanceID("before", nil); err != nil {
		t.Fatal(err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error { // one transaction: Save syncs each
		for n := 1; n <= 2000; n++ {
			v, _ := json.Marshal(lifecycle.Track{State: lifecycle.CIPending, HeadSHA: strings.Repeat("a", 40), Attempts: n})
			if err := tx.Bucket(tracksBucket).Put([]byte(strconv.Itoa(n)), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "acme_widgets", "state.db")
}

const pageSize = 4096 // bbolt's page size on this platform (the OS page size)

// The meta page layout (bbolt internal/common/meta.go): a 16-byte page
// header, then magic, version, page size, flags (4 bytes each), root
// bucket page and sequence, freelist page, high-water page, txid (8 bytes
// each), and an FNV-64a checksum of the meta bytes before it.
const (
	metaStart     = 16
	metaRootPage  = metaStart + 16
	metaHighWater = metaStart + 40
	metaChecksum  = metaStart + 56
)

// setMeta rewrites a field of both meta pages and fixes their checksums, so
// that bbolt trusts the lie and reads where it points.
func setMeta(b []byte, offset int, v uint64) {
	for _, page := range []int{0, pageSize} {
		binary.LittleEndian.PutUint64(b[page+offset:], v)
		h := fnv.New64a()
		h.Write(b[page+metaStart : page+metaChecksum])
		binary.LittleEndian.PutUint64(b[page+metaChecksum:], h.Sum64())
	}
}

func TestCorruptStoreIsMovedAsideAndRebuilt(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(b []byte) []byte
	}{
		{"garbage", func(b []byte) []byte {
			r := rand.New(rand.NewPCG(1, 2))
			g := make([]byte, 64<<10)
			for i := range g {
				g[i] = byte(r.Uint32())
			}
			return g
		}},
		{"text", func([]byte) []byte { return []byte("this is not a database\n") }},
		{"truncated to 100 bytes", func(b []byte) []byte { return b[:100] }},
		{"truncated after the meta pages", func(b []byte) []byte { return b[:2*pageSize+10] }},
		{"truncated to half", func(b []byte) []byte { return b[:len(b)/2] }},
		{"meta pages zeroed", func(b []byte) []byte { clear(b[:2*pageSize]); return b }},
		{"data pages overwritten", func(b []byte) []byte {
			for i := 2 * pageSize; i < len(b); i++ {
				b[i] = 0xff
			}
			return b
		}},
		{"root page far beyond the file", func(b []byte) []byte {
			setMeta(b, metaHighWater, 1<<40)
			setMeta(b, metaRootPage, 1<<40-1)
			return b
		}},
		{"root page in unmapped memory", func(b []byte) []byte {
			setMeta(b, metaHighWater, 1<<30)
			setMeta(b, metaRootPage, 1<<30-1)
			return b
		}},
		{"root page just beyond the file", func(b []byte) []byte {
			pages := uint64(len(b) / pageSize)
			setMeta(b, metaHighWater, pages+64)
			setMeta(b, metaRootPage, pages+8)
			return b
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := healthyStore(t, dir)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			bad := tt.corrupt(b)
			if err := os.WriteFile(path, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			s, err := Open(dir, "acme", "widgets", slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatalf("OpenStore on a corrupt file: %v", err)
			}
			defer s.Close()

			if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), "moved it aside") {
				t.Errorf("want one warning that the file was moved aside, got:\n%s", logs.String())
			}
			aside, _ := filepath.Glob(path + ".corrupt-*")
			if len(aside) != 1 {
				t.Fatalf("moved-aside files: %v", aside)
			}
			if kept, _ := os.ReadFile(aside[0]); !bytes.Equal(kept, bad) {
				t.Error("the moved-aside file is not the corrupt one, byte for byte")
			}
			// the rebuilt store is empty and works
			tracks, err := s.Tracks()
			if err != nil || len(tracks) != 0 {
				t.Errorf("rebuilt store holds %d tracks, %v", len(tracks), err)
			}
			if id, err := s.InstanceID("", func() string { return "after" }); err != nil || id != "after" {
				t.Errorf("identity in the rebuilt store = %q, %v", id, err)
			}
			if err := s.Save(7, lifecycle.Track{State: lifecycle.Merged}); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestHealthyStoreIsNotMovedAside(t *testing.T) {
	dir := t.TempDir()
	path := healthyStore(t, dir)
	var logs bytes.Buffer
	s, err := Open(dir, "acme", "widgets", slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if tracks, err := s.Tracks(); err != nil || len(tracks) != 2000 {
		t.Errorf("tracks = %d, %v", len(tracks), err)
	}
	if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 0 || logs.Len() != 0 {
		t.Errorf("a healthy store was moved aside (%v) or logged:\n%s", aside, logs.String())
	}
}

func TestUnopenableStoreIsAnErrorNotMovedAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "acme_widgets", "state.db")
	if err := os.MkdirAll(path, 0o700); err != nil { // a directory where the file belongs
		t.Fatal(err)
	}
	if _, err := Open(dir, "acme", "widgets", nil); err == nil {
		t.Fatal("OpenStore over a directory succeeded")
	}
	if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 0 {
		t.Errorf("moved aside: %v", aside)
	}
}
