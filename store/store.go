// Package store keeps a pool's memory: the instance identity and one
// lifecycle.Track per PR, on the disk (Store, one bbolt file per
// repository under the state dir) or in memory only (Memory: a dry run).
// Everything in it can be rebuilt from the forge.
package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"pool/lifecycle"
)

// Store is the pool's crash-safe memory in the state dir: the instance
// identity and one lifecycle Track per PR. Each write is one bbolt
// transaction, so a kill at any moment leaves the last committed state.
// Everything in it can be rebuilt from the forge; it exists so that a
// relaunch keeps its identity and its retry counts.
type Store struct {
	db  *bolt.DB
	dir string
}

var (
	metaBucket   = []byte("meta")
	tracksBucket = []byte("tracks")
	instanceKey  = []byte("instance_id")
)

// Open opens (or creates) the store for one repository under dir. A
// file that cannot be opened or read as a store (garbage, truncated, a
// broken page) is moved aside to state.db.corrupt-<time> and an empty store
// made in its place: the forge is the record. log (may be nil) gets one
// warning saying so. A store locked by another process, or a file the
// pool may not open, is an error.
func Open(dir, owner, name string, log *slog.Logger) (*Store, error) {
	repoDir := filepath.Join(dir, safeName(owner)+"_"+safeName(name))
	if err := os.MkdirAll(repoDir, 0o700); err != nil {
		return nil, fmt.Errorf("state: create %s: %w", repoDir, err)
	}
	path := filepath.Join(repoDir, "state.db")
	db, err := openChecked(path)
	var bad *corruptError
	if errors.As(err, &bad) {
		aside := path + ".corrupt-" + time.Now().UTC().Format("20060102T150405.000000000Z")
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, fmt.Errorf("state: %s is unreadable (%v) and cannot be moved aside: %w", path, bad.err, rerr)
		}
		if log != nil {
			log.Warn("state database unreadable; moved it aside and starting with an empty one (the forge is the record)",
				"path", path, "moved_to", aside, "err", bad.err)
		}
		db, err = openChecked(path)
	}
	if err != nil {
		return nil, fmt.Errorf("state: open %s (another pool on the same state dir?): %w", path, err)
	}
	return &Store{db: db, dir: repoDir}, nil
}

// corruptError says the file is there but is not a readable store.
type corruptError struct{ err error }

func (e *corruptError) Error() string { return "unreadable store: " + e.err.Error() }

// openChecked opens the database, reads every page the store reaches and
// runs bbolt's consistency check, then makes the store's buckets. bbolt
// reads the file through a memory map, so a corrupt or truncated file can
// fault (SIGSEGV, SIGBUS) rather than return an error: the reads run here,
// with faults turned into panics and panics into a *corruptError.
func openChecked(path string) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			closeQuietly(db)
			db, err = nil, &corruptError{fmt.Errorf("reading it failed: %v", r)}
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		var pathErr *fs.PathError
		if errors.Is(err, bolt.ErrTimeout) || errors.As(err, &pathErr) {
			return nil, err // locked, or not ours to open: not corruption
		}
		return nil, &corruptError{err}
	}
	if err := db.View(readAll); err != nil {
		db.Close()
		return nil, &corruptError{err}
	}
	if err := db.Update(makeBuckets); err != nil {
		db.Close()
		return nil, &corruptError{err}
	}
	return db, nil
}

func closeQuietly(db *bolt.DB) {
	if db == nil {
		return
	}
	defer func() { _ = recover() }()
	_ = db.Close()
}

// readAll touches every key and value of every bucket, so that a page that
// cannot be read faults here, under openChecked's guard, and only then runs
// bbolt's check (whose own goroutine has no such guard).
func readAll(tx *bolt.Tx) error {
	var sum uint32
	var walk func(b *bolt.Bucket)
	walk = func(b *bolt.Bucket) {
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			sum = crc32.Update(crc32.Update(sum, crc32.IEEETable, k), crc32.IEEETable, v)
			if v == nil {
				if nested := b.Bucket(k); nested != nil {
					walk(nested)
				}
			}
		}
	}
	err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		sum = crc32.Update(sum, crc32.IEEETable, name)
		walk(b)
		return nil
	})
	if err != nil {
		return err
	}
	var first error
	for err := range tx.Check() {
		if first == nil {
			first = err
		}
	}
	return first
}

func makeBuckets(tx *bolt.Tx) error {
	for _, b := range [][]byte{metaBucket, tracksBucket, statusesBucket} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	return nil
}

// Dir is the store's directory for its repository. The store's lock on it
// makes it this pool's alone while the store is open.
func (s *Store) Dir() string { return s.dir }

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r == 0 {
			return '_'
		}
		return r
	}, s)
}

// Close releases the store.
func (s *Store) Close() error { return s.db.Close() }

// Check reports whether the store can still be read: an error once it is
// closed or broken.
func (s *Store) Check() error {
	if err := s.db.View(func(tx *bolt.Tx) error { return nil }); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}

// InstanceID returns the saved identity, saving want (or generating one)
// when none is saved. A configured identity always wins and is saved.
func (s *Store) InstanceID(configured string, generate func() string) (string, error) {
	var id string
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(metaBucket)
		id = configured
		if id == "" {
			id = string(b.Get(instanceKey))
		}
		if id == "" {
			id = generate()
		}
		return b.Put(instanceKey, []byte(id))
	})
	if err != nil {
		return "", fmt.Errorf("state: instance id: %w", err)
	}
	return id, nil
}

// Tracks loads every saved Track.
func (s *Store) Tracks() (map[int]lifecycle.Track, error) {
	out := map[int]lifecycle.Track{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(tracksBucket).ForEach(func(k, v []byte) error {
			n, err := strconv.Atoi(string(k))
			if err != nil {
				return nil // not ours; ignore
			}
			var t lifecycle.Track
			if err := json.Unmarshal(v, &t); err != nil {
				return nil // unreadable entry: the forge will tell us again
			}
			out[n] = t
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("state: load tracks: %w", err)
	}
	return out, nil
}

// Save writes one PR's Track.
func (s *Store) Save(n int, t lifecycle.Track) error {
	v, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("state: encode PR %d: %w", n, err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(tracksBucket).Put([]byte(strconv.Itoa(n)), v)
	})
	if err != nil {
		return fmt.Errorf("state: save PR %d: %w", n, err)
	}
	return nil
}

// Delete forgets a PR.
func (s *Store) Delete(n int) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(tracksBucket).Delete([]byte(strconv.Itoa(n)))
	})
	if err != nil {
		return fmt.Errorf("state: delete PR %d: %w", n, err)
	}
	return nil
}
