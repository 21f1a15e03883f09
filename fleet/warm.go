package fleet

import (
	"context"
	"errors"
	"fmt"
)

// Warming. A server starts its instance for a directory (config, tools,
// the project's snapshot) at the first session there, which made each
// slot's first session after a start slow: 1.6–6.7 s to the first model
// request on an idle machine, 60–155 s on a loaded one. A pool has the
// work trees of its slots made before any PR needs them and asks Warm to
// start each one's instance on a server, as many per server as it has
// slots; Place then sends a session in that tree to that server (warmer).

// ErrNoServerUp: no server that runs reviews answers.
var ErrNoServerUp = errors.New("fleet: no agent server that runs reviews is up")

// Warm starts the instance for work tree dir on the up server that runs
// reviews with the fewest warm trees for its slots, and returns its name.
// No session may work in dir meanwhile: the tree's next session goes to
// that server.
func (f *Fleet) Warm(ctx context.Context, dir string) (string, error) {
	f.mu.Lock()
	s := f.coolest(dir)
	if s == nil {
		f.mu.Unlock()
		return "", ErrNoServerUp
	}
	f.startsIn(dir, s)
	f.mu.Unlock()
	err := s.Agent.Warm(ctx, dir)
	if err != nil {
		f.mu.Lock()
		if f.warm[dir].s == s {
			delete(f.warm, dir)
		}
		f.mu.Unlock()
		return s.Name, fmt.Errorf("on %s: %w", s.Name, err)
	}
	return s.Name, nil
}

// coolest is the up server that runs reviews with the fewest trees warm
// in its present life for each of its slots, dir left out; the first
// among equals. The caller holds mu.
func (f *Fleet) coolest(dir string) *server {
	count := map[*server]int{}
	for d, w := range f.warm {
		if d != dir && w.life == w.s.life {
			count[w.s]++
		}
	}
	var best *server
	for _, s := range f.servers {
		if s.down || !s.Review {
			continue
		}
		if best == nil || count[s]*best.Workers < count[best]*s.Workers {
			best = s
		}
	}
	return best
}

// Cold reports whether no up server is known to have its instance for
// work tree dir started: none was, or its server went down since.
func (f *Fleet) Cold(dir string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.warm[dir]
	return !ok || w.s.down || w.life != w.s.life
}

// ReviewSlots is how many sessions the up servers that run reviews run
// at once.
func (f *Fleet) ReviewSlots() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range f.servers {
		if !s.down && s.Review {
			n += s.Workers
		}
	}
	return n
}

// Revived is closed when a server that was down answers again: the
// instances it had started are gone.
func (f *Fleet) Revived() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.revived
}
