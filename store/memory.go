package store

import (
	"maps"
	"sync"

	"pool/lifecycle"
)

// Memory keeps what a Store keeps, and writes nothing to the disk: what it holds
// ends with the process.
type Memory struct {
	mu     sync.Mutex
	id     string
	tracks map[int]lifecycle.Track
}

// NewMemory returns an empty memory-only store.
func NewMemory() *Memory { return &Memory{tracks: map[int]lifecycle.Track{}} }

// InstanceID returns the configured identity, else the one generated first.
func (m *Memory) InstanceID(configured string, generate func() string) (string, error) {
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
func (m *Memory) Tracks() (map[int]lifecycle.Track, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.tracks), nil
}

// Save holds one PR's Track.
func (m *Memory) Save(n int, t lifecycle.Track) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tracks[n] = t
	return nil
}

// Delete forgets a PR.
func (m *Memory) Delete(n int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tracks, n)
	return nil
}
