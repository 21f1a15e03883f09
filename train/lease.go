package train

import "time"

// Lease is what a pool read of the train lease of a base (README, "Merge
// trains"): at most one pool runs the train of a base at a time, the one
// whose instance the lease names.
type Lease struct {
	Commit string // the lease commit; "" when no pool holds the lease
	Holder string // the instance it names
	// Since is when this pool first read Commit. The holder renews its
	// lease with a new commit while it runs the train; one that stays at
	// a commit for the TTL is stale. Staleness is measured on the
	// reader's own clock from its own reads, never from a time the lease
	// states, so a lease written with a time in the future holds no
	// longer than any other.
	Since time.Time
}

// LeaseVerdict is what a pool may do with the train of a base.
type LeaseVerdict string

const (
	LeaseFree  LeaseVerdict = "free"  // no pool holds it: take it
	LeaseOurs  LeaseVerdict = "ours"  // it names this instance (a relaunch resumes its train): renew it
	LeaseHeld  LeaseVerdict = "held"  // another pool runs the train: wait
	LeaseStale LeaseVerdict = "stale" // its holder made no progress for the TTL: take it over
)

// JudgeLease judges lease l for instance at now: a lease is held while
// less than ttl has passed since the reader first saw its commit.
func JudgeLease(l Lease, instance string, now time.Time, ttl time.Duration) LeaseVerdict {
	switch {
	case l.Commit == "":
		return LeaseFree
	case l.Holder == instance:
		return LeaseOurs
	case now.Sub(l.Since) < ttl:
		return LeaseHeld
	}
	return LeaseStale
}

// Seen folds a new read of the lease (commit, holder) into what the
// reader knew: the same commit keeps the time it was first seen.
func (l Lease) Seen(commit, holder string, now time.Time) Lease {
	if commit == l.Commit && commit != "" {
		return l
	}
	return Lease{Commit: commit, Holder: holder, Since: now}
}
