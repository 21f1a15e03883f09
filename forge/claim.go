package forge

// ClaimVerdict is a pool's reading of the claims on a PR's head
// (claims.Judge), the plain value a decision reads.
type ClaimVerdict int

const (
	// ClaimFree: no live claim; the pool may claim.
	ClaimFree ClaimVerdict = iota
	// ClaimOurs: this instance holds the winning live claim.
	ClaimOurs
	// ClaimTaken: another instance holds the winning live claim.
	ClaimTaken
)

func (v ClaimVerdict) String() string {
	return [...]string{"free", "ours", "taken"}[v]
}
