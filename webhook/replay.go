package webhook

import (
	"crypto/sha256"
	"sync"
	"time"
)

// A delivery id seen within replayWindow is answered 200 and ignored. At
// most maxRemembered ids are kept (the oldest go first), each as a fixed-size
// digest, so memory stays bounded whatever the ids and their number.
const (
	replayWindow  = 10 * time.Minute
	maxRemembered = 10000
)

type deliveryKey [16]byte

type remembered struct {
	key deliveryKey
	at  time.Time
}

// deliveries remembers recent delivery ids.
type deliveries struct {
	mu    sync.Mutex
	seen  map[deliveryKey]bool // guarded by mu
	order []remembered         // guarded by mu: the keys of seen, oldest first
}

func newDeliveries() *deliveries { return &deliveries{seen: map[deliveryKey]bool{}} }

// firstTime reports whether id was not seen in the window before now, and
// remembers it.
func (d *deliveries) firstTime(id string, now time.Time) bool {
	sum := sha256.Sum256([]byte(id))
	var key deliveryKey
	copy(key[:], sum[:])
	d.mu.Lock()
	defer d.mu.Unlock()
	for len(d.order) > 0 && (now.Sub(d.order[0].at) >= replayWindow || len(d.order) >= maxRemembered) {
		delete(d.seen, d.order[0].key)
		d.order = d.order[1:]
	}
	if d.seen[key] {
		return false
	}
	d.seen[key] = true
	d.order = append(d.order, remembered{key: key, at: now})
	return true
}
