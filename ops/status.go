// Package ops serves what an operator needs to see a running pool: health
// and readiness, Prometheus metrics, a server-rendered status page and the
// same data as JSON. It also reads that JSON back for `pool status`.
package ops

import "time"

// Status is what the pool shows of itself: the data behind the status page
// and /api/status. It holds no secret.
type Status struct {
	Instance  string    `json:"instance"`
	Version   string    `json:"version"`
	Repo      string    `json:"repo"`
	ForgeURL  string    `json:"forge_url"`
	AgentURL  string    `json:"agent_url"`
	Started   time.Time `json:"started"`
	Now       time.Time `json:"now"`
	LastCycle time.Time `json:"last_cycle"` // zero before the first cycle
	Workers   int       `json:"workers"`
	Slots     []Slot    `json:"slots"`
	PRs       []PR      `json:"prs"`
	Warnings  []Warning `json:"warnings"`
}

// Slot is one busy slot.
type Slot struct {
	PR      int       `json:"pr"`
	Title   string    `json:"title"`
	Kind    string    `json:"kind"`    // review or fix; "" while claiming
	Session string    `json:"session"` // "" until the session starts
	Since   time.Time `json:"since"`
}

// PR is one tracked pull request.
type PR struct {
	Number   int    `json:"number"`
	Title    string `json:"title"`
	URL      string `json:"url"`
	Head     string `json:"head"`
	State    string `json:"state"`    // the lifecycle state
	Attempts int    `json:"attempts"` // merge retry attempts at this head
	// LastAnswer is the forge's last answer that mattered: a merge answer or
	// the checks' state.
	LastAnswer string `json:"last_answer"`
	// Next says in plain words where the PR stands and what happens next;
	// it is also the description of the pool's commit status.
	Next string `json:"next"`
	// Done: merged (or closed); kept on the page for a while.
	Done   bool      `json:"done"`
	Merged bool      `json:"merged"`
	Seen   time.Time `json:"seen"` // last decision
}

// Warning is one logged warning or error.
type Warning struct {
	Time    time.Time `json:"time"`
	Level   string    `json:"level"`
	Message string    `json:"message"`
	Attrs   string    `json:"attrs"`
}

// Uptime is how long the pool has run, to the second.
func (s Status) Uptime() time.Duration { return s.Now.Sub(s.Started).Round(time.Second) }

// Busy is how many slots are busy.
func (s Status) Busy() int { return len(s.Slots) }
