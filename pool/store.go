package pool

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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

// OpenStore opens (or creates) the store for one repository under dir.
func OpenStore(dir, owner, name string) (*Store, error) {
	repoDir := filepath.Join(dir, safeName(owner)+"_"+safeName(name))
	if err := os.MkdirAll(repoDir, 0o700); err != nil {
		return nil, fmt.Errorf("state: create %s: %w", repoDir, err)
	}
	path := filepath.Join(repoDir, "state.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("state: open %s (another pool on the same state dir?): %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{metaBucket, tracksBucket} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("state: init %s: %w", path, err)
	}
	return &Store{db: db, dir: repoDir}, nil
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
