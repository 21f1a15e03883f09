// Package statuspage holds what a running pool shows of itself: the plain
// data behind the ops listener's status page and /api/status, which the
// pool fills (describe writes its PR rows), ops serves and reads back for
// `pool status`, and commitstatus publishes on each PR's head. It imports
// nothing of the project.
package statuspage

import (
	"fmt"
	"slices"
	"time"
)

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
	// Repos are the figures of each repository of a pool serving several;
	// empty for a pool of one. Slots and PRs then name their repository.
	Repos []RepoFigures `json:"repos,omitempty"`
	// AgentServers are the agent servers the sessions run on.
	AgentServers []AgentServer `json:"agent_servers,omitempty"`
}

// AgentServer is one agent server as the page shows it (fleet.ServerStatus).
type AgentServer struct {
	URL      string            `json:"url"`
	Role     string            `json:"role"` // review, fix or both
	Labels   map[string]string `json:"labels,omitempty"`
	Up       bool              `json:"up"`
	Workers  int               `json:"workers"`
	Sessions int               `json:"sessions"` // running on it now
	Started  int               `json:"started"`  // placed on it since the start
	Lost     int               `json:"lost"`     // counted lost while it was down
}

// RepoFigures are one repository's figures, on the page of a pool serving
// several.
type RepoFigures struct {
	Repo      string    `json:"repo"`
	Busy      int       `json:"busy"`   // slots it holds
	Open      int       `json:"open"`   // tracked PRs not done
	Merged    int       `json:"merged"` // merged PRs still on the page
	LastCycle time.Time `json:"last_cycle"`
}

// Total adds up the figures of every repository.
func (s Status) Total() RepoFigures {
	var t RepoFigures
	for _, r := range s.Repos {
		t.Busy += r.Busy
		t.Open += r.Open
		t.Merged += r.Merged
	}
	return t
}

// PRName names a PR as the page shows it: #<N>, or, with several
// repositories, <owner>/<name>#<N>.
func PRName(repo string, n int) string {
	if repo == "" {
		return fmt.Sprintf("#%d", n)
	}
	return fmt.Sprintf("%s#%d", repo, n)
}

// Anchor is the id of a PR's row on the status page: pr-<N>, or, on the
// page of several repositories, pr-<owner>/<name>-<N>.
func Anchor(repo string, n int) string {
	if repo == "" {
		return fmt.Sprintf("pr-%d", n)
	}
	return fmt.Sprintf("pr-%s-%d", repo, n)
}

// Slot is one busy slot.
type Slot struct {
	Repo    string    `json:"repo,omitempty"` // with several repositories
	PR      int       `json:"pr"`
	Title   string    `json:"title"`
	Kind    string    `json:"kind"`    // review or fix; "" while claiming
	Session string    `json:"session"` // "" until the session starts
	Since   time.Time `json:"since"`
}

// PR is one tracked pull request.
type PR struct {
	Repo     string `json:"repo,omitempty"` // with several repositories
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
	// it is also the description of the pool's commit status, unless Commit
	// says otherwise.
	Next string `json:"next"`
	// Commit is the description of the pool's commit status where it
	// differs from Next: without the PR's place in the merge queue, which
	// moves at every merge and would be written again on every queued head.
	Commit string `json:"-"`
	// Car is the PR's car on the merge train of the base Train (1 the
	// front car), of Cars; 0 and "" when it rides none.
	Car   int    `json:"car,omitempty"`
	Cars  int    `json:"cars,omitempty"`
	Train string `json:"train,omitempty"`
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

// Train is one base's merge train as the page shows it.
type Train struct {
	Repo string // with several repositories
	Base string
	PRs  []int // the PRs of its cars, front car first
}

// Trains are the merge trains the PRs ride, gathered from their rows
// (PR.Car, PR.Cars, PR.Train), by repository and base in order of first
// appearance.
func (s Status) Trains() []Train {
	var out []Train
	at := map[[2]string]int{}
	for _, pr := range s.PRs {
		if pr.Car <= 0 || pr.Train == "" || pr.Done {
			continue
		}
		k := [2]string{pr.Repo, pr.Train}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, Train{Repo: pr.Repo, Base: pr.Train, PRs: make([]int, max(pr.Cars, pr.Car))})
		}
		t := &out[i]
		for len(t.PRs) < pr.Car {
			t.PRs = append(t.PRs, 0)
		}
		t.PRs[pr.Car-1] = pr.Number
	}
	for i := range out { // a row shown before its train moved leaves a gap
		out[i].PRs = slices.DeleteFunc(out[i].PRs, func(n int) bool { return n == 0 })
	}
	return out
}

// Uptime is how long the pool has run, to the second.
func (s Status) Uptime() time.Duration { return s.Now.Sub(s.Started).Round(time.Second) }

// Busy is how many slots are busy.
func (s Status) Busy() int { return len(s.Slots) }
