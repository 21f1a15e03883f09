package pool

import (
	"maps"
	"sync"

	"pool/lifecycle"
)

// State is where the pool keeps its memory: the instance identity and one
// lifecycle Track per PR. Store keeps it on disk; MemoryStore in memory
// only (a dry run, a test).
type State interface {
	InstanceID(configured string, generate func() string) (string, error)
	Tracks() (map[int]lifecycle.Track, error)
	Save(n int, t lifecycle.Track) error
	Delete(n int) error
}

// MemoryStore is a State that writes nothing to the disk: what it holds
// ends with the process.
type MemoryStore struct {
	mu     sync.Mutex
	id     string
	tracks map[int]lifecycle.Track
}

// NewMemoryStore returns an empty memory-only store.
func NewMemoryStore() *MemoryStore { return &MemoryStore{tracks: map[int]lifecycle.Track{}} }

// InstanceID returns the configured identity, else the one generated first.
func (m *MemoryStore) InstanceID(configured string, generate func() string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case configured != "":
		m.id = configured
	case m.id == "":
		m.id = generate()
	}
	return m.id, nil
}

// Tracks returns a copy of every Track held.
func (m *MemoryStore) Tracks() (map[int]lifecycle.Track, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.tracks), nil
}

// Save holds one PR's Track.
func (m *MemoryStore) Save(n int, t lifecycle.Track) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tracks[n] = t
	return nil
}

// Delete forgets a PR.
func (m *MemoryStore) Delete(n int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tracks, n)
	return nil
}
