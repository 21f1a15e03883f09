package pool

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"pool/clone"
	"pool/commitstatus"
	"pool/configs"
	"pool/forge"
	"pool/forgejo"
	"pool/statuspage"
	"pool/store"
)

// The simulation: the real pool (loop, merge queue, sessions, claims, a
// store kept across restarts) against the fake forge and agent servers,
// under testing/synctest's clock, which moves only when every goroutine of
// the test waits: a month of a busy repository costs seconds. A seeded
// schedule opens (some from forks), pushes, force-pushes back, retargets,
// closes and reopens, labels, marks WIP and merges PRs by hand, and has
// forks' authors toggle maintainer edits; CI passes, fails, warns, flakes
// and stays pending; humans and outsiders review; fixers push fixes; the
// forge fails requests, loses answers, answers late and refuses merges
// (409, 405, 413); pools are killed and restarted. After every
// step the invariants are checked; the first one broken fails the run with
// the seed and the trace. The seed fixes the schedule; the goroutines'
// interleaving is the runtime's, so a seed replays the same world, not
// always the same run.
//
//	go test ./pool -run TestSim -count=1 -v        # seeds 1-3, 30 days, 200 PRs, 3 pools each
//	go test ./pool -run TestSim -count=1 -v -timeout 0 -sim.seeds=1000 -sim.days=30 -sim.prs=200
//	go test ./pool -run TestSim -count=1 -v -sim.first=6 -sim.seeds=6 -sim.days=10 -sim.prs=70   # seed 6 alone
var (
	simSeeds = flag.Int("sim.seeds", 0, "run the simulation on seeds 1..N instead of the fixed ones")
	simFirst = flag.Int("sim.first", 1, "with -sim.seeds: the first seed (-sim.first=6 -sim.seeds=6 replays seed 6)")
	simDays  = flag.Int("sim.days", 30, "simulated days per seed (-short: 2)")
	simPRs   = flag.Int("sim.prs", 200, "PRs opened per seed (-short: 15)")
	simPools = flag.Int("sim.pools", 3, "pools on the one forge")
)

const (
	simReviewer = "reviewer" // the account the sessions review as
	simHuman    = "alice"    // a human whose reviews count
	simOutsider = "mallory"  // no collaborator: no sessions, reviews that do not count
	simCheck    = "ci"       // the required status context
	simSkip     = "needs feedback"

	// The bounds the invariants hold the pools to.
	simSilence       = time.Hour // longest wait with no note saying why
	simRequestsPerHr = 500       // forge requests of one pool naming one PR in one hour (measured: at most 367)
	// simRefusedPerHr bounds those made while the forge refuses the PR's
	// merges, from an hour after the pool's merge of its head was first
	// refused (its back-off is past the poll's first doublings): the
	// back-off's merge calls and what noticing a change needs read, not
	// a decision every cycle.
	simRefusedPerHr = 120
	simSlow         = 20        // one forge request in simSlow is answered 1 to 60 seconds late
	simFork         = "dev/r"   // the repository of a fork PR's head branch
	simRetargeted   = "release" // the base a PR is retargeted to, and back from
	checkEvery      = 10 * time.Minute
	simClaimTTL     = 30 * time.Minute // configs.Default's claim_ttl
	simSettle       = 5 * time.Minute  // how long a note or claim that lost a race may stand: a few late answers
)

// simFigures are one run's measures.
type simFigures struct {
	merges, humanMerges   int
	updates, editsAsked   int // the pools' updates; fork PRs whose author allowed edits after a pool's note asked
	fixers, fixesPushed   int // fixer sessions; the fixes pushed
	heads, prHours        int
	sessions, claims      int
	maxSessionsPerHead    int
	maxClaimsPerHead      int
	notes, maxNotesOnHead int
	diagnostics           int
	statusWrites          int            // the pools' commit status writes (counted in requests too)
	requests, maxPerPRHr  int            // requests naming a PR
	maxRefusedPerPRHr     int            // requests of one pool naming one PR in an hour while the forge refused its merge (simForge.refusedReqs)
	maxRefusedOps         map[string]int // those requests by what they asked and the pool's function that asked
	repoRequests          int            // listings and other requests of the repository
	poolHours             int
	longestSilence        time.Duration
}

func (f simFigures) String() string {
	return fmt.Sprintf("merges %d (+%d by humans), updates %d (%d after edits were allowed), fixer sessions %d (%d pushed a fix), heads %d, sessions %d (%.2f a head, max %d), claims %d (max %d a head), "+
		"notes %d (max %d on one head, %d diagnostics), status writes %d, requests %.1f per open PR-hour of a pool (max %d for one PR in an hour, %d for one whose merge was refused an hour before: %v) and %.0f of the repository per pool-hour, longest silent wait %s",
		f.merges, f.humanMerges, f.updates, f.editsAsked, f.fixers, f.fixesPushed, f.heads, f.sessions, float64(f.sessions)/float64(max(f.heads, 1)), f.maxSessionsPerHead,
		f.claims, f.maxClaimsPerHead, f.notes, f.maxNotesOnHead, f.diagnostics, f.statusWrites,
		float64(f.requests)/float64(max(f.prHours, 1)), f.maxPerPRHr, f.maxRefusedPerPRHr, f.maxRefusedOps, float64(f.repoRequests)/float64(max(f.poolHours, 1)), f.longestSilence.Round(time.Minute))
}

func TestSim(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	days, prs := *simDays, *simPRs
	if testing.Short() {
		seeds, days, prs = seeds[:1], 2, 15
	}
	if *simSeeds > 0 {
		seeds = nil
		for s := max(*simFirst, 1); s <= *simSeeds; s++ {
			seeds = append(seeds, uint64(s))
		}
	}
	var sum simFigures
	for _, seed := range seeds {
		var fig simFigures
		var broken string
		var trace []string
		var onPR string
		synctest.Test(t, func(t *testing.T) {
			w := newSimWorld(seed, days, prs, *simPools)
			fig, broken = w.run()
			trace, onPR = w.sf.trace, w.sf.stepsOn(broken)
		})
		if broken != "" {
			t.Fatalf("seed %d: %s\ntrace (last %d steps):\n%s\n\n%s\nseed %d: %s", seed, broken, len(trace), strings.Join(trace, "\n"), onPR, seed, broken)
		}
		t.Logf("seed %d: %s", seed, fig)
		sum = sum.add(fig)
	}
	if len(seeds) > 1 {
		t.Logf("all %d seeds: %s", len(seeds), sum)
	}
}

func (f simFigures) add(g simFigures) simFigures {
	f.merges += g.merges
	f.humanMerges += g.humanMerges
	f.updates += g.updates
	f.editsAsked += g.editsAsked
	f.fixers += g.fixers
	f.fixesPushed += g.fixesPushed
	f.heads += g.heads
	f.prHours += g.prHours
	f.sessions += g.sessions
	f.claims += g.claims
	f.maxSessionsPerHead = max(f.maxSessionsPerHead, g.maxSessionsPerHead)
	f.maxClaimsPerHead = max(f.maxClaimsPerHead, g.maxClaimsPerHead)
	f.notes += g.notes
	f.maxNotesOnHead = max(f.maxNotesOnHead, g.maxNotesOnHead)
	f.diagnostics += g.diagnostics
	f.statusWrites += g.statusWrites
	f.requests += g.requests
	f.repoRequests += g.repoRequests
	f.poolHours += g.poolHours
	f.maxPerPRHr = max(f.maxPerPRHr, g.maxPerPRHr)
	f.maxRefusedPerPRHr = max(f.maxRefusedPerPRHr, g.maxRefusedPerPRHr)
	f.longestSilence = max(f.longestSilence, g.longestSilence)
	return f
}

// simWorld is the repository, its people and its pools.
type simWorld struct {
	rng    *rand.Rand // the schedule's; the driver's goroutine alone draws from it
	f      *fakeForge
	sf     *simForge
	days   int
	prs    int // to open
	opened int
	pools  []*simPool
	start  time.Time

	mu       sync.Mutex // guards the fields below, which the agents' goroutines write
	agentRng *rand.Rand
	fixes    *simFixes
	fixers   int // fixer sessions started
	sessions map[simHead]int
	noReview map[simHead]bool         // a session on the head left no counted review
	running  map[simHead][]simSession // the sessions on the head running now
	kills    map[string]int           // how many times each pool was killed
	verdict  map[simHead]bool         // a session on the head filed its verdict
	twice    string                   // the first session started beside another, or after a verdict, on its head
	heads    map[int][]string         // each PR's heads, oldest first
	since    map[int]time.Time        // when each PR's wait for the pool's word began; zero: none
	silence  time.Duration            // the longest wait for it so far
	late     string                   // the first wait answered later than simSilence
	// hardChange is when each PR last changed in a way that asks for the
	// pool's word whatever it said before.
	hardChange map[int]time.Time
	// openHours sums the hours each PR was open, per pool (requests per
	// PR-hour divide by it).
	openHours float64
}

type simHead struct {
	n    int
	head string
}

// simPool is one pool process: its store outlives the process, as a state
// directory does.
type simPool struct {
	id    string
	agent *fakeAgent
	state *store.Memory
	stop  context.CancelFunc
	done  chan struct{}
	up    bool
	trees *fakeTrees // the clone's work trees, which outlive the process
}

func newSimWorld(seed uint64, days, prs, pools int) *simWorld {
	f := newFakeForge()
	f.now = time.Now
	f.recheck = 2 * time.Minute // the forge tests the open PRs again after a merge, at its own pace
	f.ciDelay = 10 * time.Minute
	f.outsiders = map[string]bool{simOutsider: true}
	f.protection = forge.Protection{Protected: true, UserCanMerge: true, StatusCheck: true, StatusContexts: []string{simCheck},
		BlockOnOutdated: true}
	f.outdated = true // a PR behind main merges only once updated: the pools update, forks need maintainer edits
	w := &simWorld{rng: rand.New(rand.NewPCG(seed, 1)), f: f, sf: newSimForge(f, seed, 0.02), days: days, prs: prs,
		start: time.Now(), agentRng: rand.New(rand.NewPCG(seed, 2)), sessions: map[simHead]int{}, noReview: map[simHead]bool{},
		running: map[simHead][]simSession{}, kills: map[string]int{}, verdict: map[simHead]bool{},
		heads: map[int][]string{}, since: map[int]time.Time{}, hardChange: map[int]time.Time{}}
	w.fixes = &simFixes{w: w, rng: rand.New(rand.NewPCG(seed, 3))}
	for i := 1; i <= pools; i++ {
		a := newFakeAgent(nil)
		id := fmt.Sprintf("sim-%d", i)
		a.behaveOn = func(n int, prompt string) (time.Duration, func(), string) { return w.review(id, n, prompt) }
		w.pools = append(w.pools, &simPool{id: id, agent: a, state: store.NewMemory(), trees: newFakeTrees()})
	}
	return w
}

func (w *simWorld) config(id string) configs.Config {
	cfg := configs.Default()
	cfg.ForgejoURL, cfg.Token, cfg.Owner, cfg.Name = "http://forge.test", "t", "o", "r"
	cfg.AgentURL, cfg.Workers, cfg.InstanceID = "http://agent.test", 2, id
	cfg.IdleExit = 0
	cfg.Fixers.Enabled = true // a fixer session on an approved PR whose checks fail commits a fix half the time (simFixes)
	cfg.HumanReviewers = []string{simReviewer, simHuman}
	return cfg
}

var headRE = regexp.MustCompile(`Head SHA: ([0-9a-f]+)`)

// review is the reviewer of every agent server: a session on the head it
// was given runs 5 to 45 minutes and approves it, requests changes, or
// files nothing (a review that does not count).
func (w *simWorld) review(pool string, n int, prompt string) (time.Duration, func(), string) {
	head := ""
	if m := headRE.FindStringSubmatch(prompt); m != nil {
		head = m[1]
	}
	h := simHead{n, head}
	if strings.Contains(prompt, "checks fail on its head commit") {
		return w.fixSession(pool, h)
	}
	w.mu.Lock()
	s := w.started(h, pool)
	d := time.Duration(5+w.agentRng.IntN(40)) * time.Minute
	r := w.agentRng.Float64()
	if r >= 0.9 {
		w.noReview[h] = true
	}
	w.mu.Unlock()
	w.logf("#%d session on %s for %s", n, short(head), d)
	switch {
	case r < 0.75:
		return d, func() { w.fileReview(n, head, forge.ReviewApproved); w.ended(h, s, true) }, approvedReply
	case r < 0.9:
		return d, func() { w.fileReview(n, head, forge.ReviewRequestChanges); w.ended(h, s, true) },
			"Needs work\nREVIEW-RESULT: {\"decision\": \"changes_requested\", \"merge_status\": \"none\"}"
	}
	return d, func() { w.logf("#%d session on %s filed no review", n, short(head)); w.ended(h, s, false) }, "I could not finish."
}

// simSession is a session running on a head: the pool that started it and
// that pool's kills before.
type simSession struct {
	pool  string
	kills int
}

// started counts a session that pool started on h, and notes the first
// that started while another of a live pool ran on h, or after one filed
// its verdict there: the claims allow one session of a head at a time, and
// a head with a verdict needs none. A pool killed since it started its
// session refreshes that session's claim no more, and once the claim has
// gone stale another pool may take the head over beside it, as designed.
// Callers hold w.mu.
func (w *simWorld) started(h simHead, pool string) simSession {
	w.sessions[h]++
	switch {
	case w.twice != "":
	case slices.ContainsFunc(w.running[h], func(s simSession) bool { return w.kills[s.pool] == s.kills }):
		w.twice = fmt.Sprintf("#%d at %s: session %d started while another ran there", h.n, short(h.head), w.sessions[h])
	case w.verdict[h]:
		w.twice = fmt.Sprintf("#%d at %s: session %d started after one filed its verdict there", h.n, short(h.head), w.sessions[h])
	}
	s := simSession{pool: pool, kills: w.kills[pool]}
	w.running[h] = append(w.running[h], s)
	return s
}

// ended records the end of session s on h, which filed its verdict or none.
func (w *simWorld) ended(h simHead, s simSession, verdict bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i := slices.Index(w.running[h], s); i >= 0 {
		w.running[h] = slices.Delete(w.running[h], i, i+1)
	}
	w.verdict[h] = w.verdict[h] || verdict
}

func (w *simWorld) fileReview(n int, head, state string) {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	w.f.nextID++
	w.f.reviews[n] = append(w.f.reviews[n], forge.Review{ID: w.f.nextID, Author: simReviewer, State: state,
		CommitID: head, Official: true, Submitted: time.Now()})
	w.f.touch(n)
	w.f.mu.Unlock()
	w.sf.mu.Lock()
	w.sf.acted[n] = time.Now()
	w.sf.mu.Unlock()
	w.logf("#%d reviewer: %s on %s", n, state, short(head))
	w.f.mu.Lock()
}

// run plays the schedule and returns the figures, or the first invariant
// broken.
func (w *simWorld) run() (simFigures, string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, p := range w.pools {
		w.startPool(ctx, p)
	}
	end := w.start.Add(time.Duration(w.days) * 24 * time.Hour)
	mean := time.Duration(w.days) * 24 * time.Hour / time.Duration(max(w.prs, 1)*8)
	broken := ""
	for time.Now().Before(end) && broken == "" {
		pause := time.Duration(w.rng.ExpFloat64() * float64(mean))
		w.openHours += pause.Hours() * float64(len(w.openPRs())*len(w.pools))
		// The invariants are checked at least every checkEvery between steps.
		for ; pause > checkEvery && broken == ""; pause -= checkEvery {
			time.Sleep(checkEvery)
			synctest.Wait()
			broken = w.check()
		}
		if broken != "" {
			break
		}
		time.Sleep(pause)
		w.step(ctx)
		synctest.Wait()
		broken = w.check()
	}
	if broken != "" {
		w.logf("broken: %s", broken)
	}
	cancel()
	// The pools end once their calls in flight return, a late answer
	// (simSlow) up to a minute later: the clock moves only while this
	// goroutine lives.
	for _, p := range w.pools {
		w.mu.Lock()
		done := p.done
		w.mu.Unlock()
		<-done
	}
	return w.figures(), broken
}

func (w *simWorld) startPool(ctx context.Context, p *simPool) {
	pctx, stop := context.WithCancel(context.WithValue(ctx, simPoolKey{}, p.id))
	done := make(chan struct{})
	w.mu.Lock()
	p.stop, p.done, p.up = stop, done, true
	w.mu.Unlock()
	go func() {
		defer close(done)
		cfg := w.config(p.id)
		pl, err := New(pctx, cfg, Deps{Forge: w.sf, Agent: p.agent, Store: p.state, Trees: p.trees, Fixes: w.fixes})
		if err != nil {
			return
		}
		// The pool's commit status on each PR's head, as serve's
		// runPublishing keeps it (no memory: the store is the pool's
		// own, and a killed pool writes no last status).
		pub := &commitstatus.Publisher{Forge: w.sf, Owner: cfg.Owner, Repo: cfg.Name, Context: cfg.StatusContext, Required: pl.OwnStatusRequired}
		sctx, stopPub := context.WithCancel(pctx)
		published := make(chan struct{})
		status := func() statuspage.Status { st := pl.Status(); w.sf.standsBy(st); return st }
		go func() { defer close(published); pub.Run(sctx, status, pl.Changed(), cfg.PollInterval) }()
		_, _ = pl.Run(pctx)
		stopPub()
		<-published
	}()
}

func (w *simWorld) logf(format string, args ...any) {
	w.sf.mu.Lock()
	defer w.sf.mu.Unlock()
	w.sf.logLocked(format, args...)
}

// step makes one thing happen.
func (w *simWorld) step(ctx context.Context) {
	open := w.openPRs()
	r := w.rng.Float64()
	switch {
	case w.opened < w.prs && (r < 0.15 || len(open) == 0):
		w.open()
	case len(open) == 0:
	case r < 0.30:
		w.push(w.pick(open), false)
	case r < 0.34:
		w.push(w.pick(open), true)
	case r < 0.43:
		w.close(w.pick(open))
	case r < 0.46:
		w.reopen()
	case r < 0.52:
		w.label(w.pick(open))
	case r < 0.56:
		w.wip(w.pick(open))
	case r < 0.58:
		w.humanMerge(w.pick(open))
	case r < 0.66:
		w.humanReview(w.pick(open))
	case r < 0.70:
		w.refuse(w.pick(open))
	case r < 0.72:
		w.restart(ctx)
	case r < 0.75:
		w.retarget(w.pick(open))
	case r < 0.79:
		w.maintainerEdits()
	}
}

func (w *simWorld) pick(ns []int) int { return ns[w.rng.IntN(len(ns))] }

func (w *simWorld) openPRs() []int {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	var out []int
	for n, pr := range w.f.prs {
		if pr.State == "open" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// softChange starts the clock of a wait unless the pool spoke since the
// PR last changed in a way that asks for its word: its note (checks
// pending, a refusal) still holds.
func (w *simWorld) softChange(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sf.mu.Lock()
	defer w.sf.mu.Unlock()
	if !w.sf.acted[n].After(w.hardChange[n]) {
		w.since[n] = time.Now()
	}
}

// changed starts the clock of a wait that needs the pool's word.
func (w *simWorld) changed(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.since[n], w.hardChange[n] = time.Now(), time.Now()
}

// newWait starts a new wait to merge: the PR was reopened or pushed.
func (w *simWorld) newWait(n int) {
	w.sf.mu.Lock()
	defer w.sf.mu.Unlock()
	w.sf.waits[n]++
}

func (w *simWorld) open() {
	w.opened++
	n := w.opened
	author := "dev"
	if w.rng.Float64() < 0.1 {
		author = simOutsider
	}
	repo, edits := "o/r", false
	if w.rng.Float64() < 0.2 {
		repo, edits = simFork, w.rng.Float64() < 0.5
	}
	head := fakeSHA(fmt.Sprintf("pr-%d-1", n))
	w.f.mu.Lock()
	w.f.prs[n] = &forge.PR{Number: n, Title: fmt.Sprintf("change %d", n), State: "open", Mergeable: true, HeadSHA: head,
		BaseRef: "main", Author: author, HeadRepo: repo, HeadRef: fmt.Sprintf("feature-%d", n), MergeBase: w.f.base,
		MaintainerCanEdit: edits}
	w.f.touch(n)
	w.f.mu.Unlock()
	w.newHead(n, head, w.rng)
	w.logf("#%d opened by %s at %s from %s (maintainer edits %v)", n, author, short(head), repo, edits)
}

// newHead starts CI on a head the PR now has, and the wait for the pool.
func (w *simWorld) newHead(n int, head string, rng *rand.Rand) {
	w.mu.Lock()
	w.heads[n] = append(w.heads[n], head)
	w.mu.Unlock()
	w.changed(n)
	w.f.mu.Lock()
	known := len(w.f.statuses[head]) > 0
	if !known {
		w.f.nextID++
		w.f.statuses[head] = []forge.Status{{ID: w.f.nextID, Context: simCheck, State: "pending", Created: time.Now()}}
	}
	w.f.mu.Unlock()
	if !known {
		w.runCI(n, head, rng)
	}
}

// runCI has the CI run on a new head: 5 to 60 minutes later it passes,
// fails, warns (which no forge merges on), flakes (fails, and a re-run an
// hour later passes) or never ends.
func (w *simWorld) runCI(n int, head string, rng *rand.Rand) {
	took := time.Duration(5+rng.IntN(55)) * time.Minute
	var states []string
	switch r := rng.Float64(); {
	case r < 0.7:
		states = []string{"success"}
	case r < 0.8:
		states = []string{"failure"}
	case r < 0.85:
		states = []string{"warning"}
	case r < 0.95:
		states = []string{"failure", "success"}
	}
	for i, state := range states {
		time.AfterFunc(took+time.Duration(i)*time.Hour, func() { w.ciDone(n, head, state) })
	}
}

// ciDone reports a run's end on head.
func (w *simWorld) ciDone(n int, head, state string) {
	w.f.mu.Lock()
	w.f.nextID++
	w.f.statuses[head] = append(w.f.statuses[head], forge.Status{ID: w.f.nextID, Context: simCheck, State: state, Created: time.Now()})
	current := w.f.prs[n].HeadSHA == head
	if current {
		w.f.touch(n)
	}
	w.f.mu.Unlock()
	if current {
		w.changed(n)
	}
	w.logf("#%d ci %s at %s", n, state, short(head))
}

func (w *simWorld) push(n int, back bool) {
	w.mu.Lock()
	old := w.heads[n]
	w.mu.Unlock()
	head := fakeSHA(fmt.Sprintf("pr-%d-%d", n, len(old)+1))
	w.f.mu.Lock()
	pr := w.f.prs[n]
	var earlier []string
	for _, h := range old {
		if h != pr.HeadSHA && !slices.Contains(earlier, h) {
			earlier = append(earlier, h)
		}
	}
	if back = back && len(earlier) > 0; back {
		head = earlier[w.rng.IntN(len(earlier))]
	}
	pr.HeadSHA = head
	if !back {
		pr.MergeBase = w.f.base
	}
	w.f.touch(n)
	w.f.mu.Unlock()
	w.newHead(n, head, w.rng)
	w.newWait(n)
	w.logf("#%d pushed %s (back to an old head: %v)", n, short(head), back)
}

func (w *simWorld) close(n int) {
	w.f.mu.Lock()
	w.f.prs[n].State = "closed"
	w.f.touch(n)
	w.f.mu.Unlock()
	w.logf("#%d closed", n)
}

func (w *simWorld) reopen() {
	w.f.mu.Lock()
	var closed []int
	for n, pr := range w.f.prs {
		if pr.State == "closed" && !pr.Merged {
			closed = append(closed, n)
		}
	}
	slices.Sort(closed)
	if len(closed) == 0 {
		w.f.mu.Unlock()
		return
	}
	n := w.pick(closed)
	w.f.prs[n].State = "open"
	w.f.touch(n)
	w.f.mu.Unlock()

	w.changed(n)
	w.newWait(n)
	w.logf("#%d reopened", n)
}

func (w *simWorld) label(n int) {
	w.f.mu.Lock()
	pr := w.f.prs[n]
	on := !pr.HasLabel(simSkip)
	if on {
		pr.Labels = append(pr.Labels, simSkip)
	} else {
		pr.Labels = slices.DeleteFunc(pr.Labels, func(l string) bool { return l == simSkip })
	}
	w.f.touch(n)
	w.f.mu.Unlock()
	if !on {
		w.softChange(n)
	}
	w.logf("#%d label %q %v", n, simSkip, on)
}

func (w *simWorld) wip(n int) {
	w.f.mu.Lock()
	pr := w.f.prs[n]
	pr.Draft = !pr.Draft
	pr.Title = strings.TrimPrefix(pr.Title, "WIP: ")
	if pr.Draft {
		pr.Title = "WIP: " + pr.Title
	}
	on := pr.Draft
	w.f.touch(n)
	w.f.mu.Unlock()
	w.softChange(n)
	w.logf("#%d WIP %v", n, on)
}

func (w *simWorld) humanMerge(n int) {
	w.f.mu.Lock()
	pr := w.f.prs[n]
	pr.MergedBy = simHuman
	w.f.setMerged(n)
	w.f.base = fakeSHA(fmt.Sprintf("base-%d", len(w.f.merged)))
	w.f.checkedAt = time.Now().Add(w.f.recheck)
	w.f.mu.Unlock()
	w.logf("#%d merged by a human", n)
}

func (w *simWorld) humanReview(n int) {
	author, official := simHuman, true
	if w.rng.Float64() < 0.4 {
		author, official = simOutsider, false
	}
	state := forge.ReviewApproved
	if w.rng.Float64() < 0.3 {
		state = forge.ReviewRequestChanges
	}
	w.f.addReview(n, author, state, official && author == simHuman)
	if author == simHuman {
		w.softChange(n)
	}
	w.logf("#%d review %s by %s", n, state, author)
}

// refuse has the forge refuse the PR's merges (a hook's 409, a rule's
// 405, the owner's storage quota's 413) from now until a later draw takes
// it back.
func (w *simWorld) refuse(n int) {
	w.sf.mu.Lock()
	defer w.sf.mu.Unlock()
	if _, ok := w.sf.refuse[n]; ok {
		delete(w.sf.refuse, n)
		for k := range w.sf.refusedSeen {
			if k.n == n {
				delete(w.sf.refusedSeen, k) // a refusal imposed again is a new one
			}
		}
		w.sf.logLocked("#%d merges accepted again", n)
		return
	}
	res := forge.MergeResult{Status: 409, Message: "PushRejected: pre-receive hook declined"}
	switch r := w.rng.Float64(); {
	case r < 0.4:
		res = forge.MergeResult{Status: 405, Message: "Not allowed to merge: not enough approvals"}
	case r < 0.6:
		res = forge.MergeResult{Status: 413, Message: `{"message":"quota exceeded","user_id":1,"username":"o"}`}
	}
	res.Outcome, res.Rule = forgejo.ClassifyMerge(res.Status, res.Message), forge.RefusalRule(res.Status, res.Message)
	w.sf.refuse[n] = res
	w.sf.logLocked("#%d merges refused %d", n, res.Status)
}

// restart kills a pool (its sessions left running, its store kept) and
// starts it again 1 to 30 minutes later.
func (w *simWorld) restart(ctx context.Context) {
	p := w.pools[w.rng.IntN(len(w.pools))]
	down := time.Duration(1+w.rng.IntN(30)) * time.Minute
	w.mu.Lock()
	up, stop, done := p.up, p.stop, p.done
	p.up = false
	if up {
		w.kills[p.id]++
	}
	w.mu.Unlock()
	if !up {
		return
	}
	w.logf("pool %s killed for %s", p.id, down)
	stop()
	go func() {
		<-done
		select { // the run's end ends the downtime: synctest.Test panics on a goroutine left asleep
		case <-ctx.Done():
		case <-time.After(down):
			w.startPool(ctx, p)
		}
	}()
}

// retarget moves the PR's base to another branch, or back to main: away,
// it is no pool's business; back, it asks for the pool's word, on a head
// behind main.
func (w *simWorld) retarget(n int) {
	w.f.mu.Lock()
	pr := w.f.prs[n]
	back := pr.BaseRef != "main"
	pr.BaseRef = "main"
	if !back {
		pr.BaseRef = simRetargeted
	}
	w.f.touch(n)
	w.f.mu.Unlock()
	w.sf.mu.Lock()
	w.sf.moved[n] = time.Now()
	w.sf.mu.Unlock()
	if back {
		w.changed(n)
		w.newWait(n)
	}
	w.logf("#%d retargeted to %s", n, map[bool]string{true: "main", false: simRetargeted}[back])
}

// maintainerEdits has the author of a fork PR allow or forbid maintainer
// edits (half the time, when a pool's note asked for them, the author of
// such a PR): the forge moves no update time. Allowed after a pool's note
// said it may not push, the PR asks for the pool's word again.
func (w *simWorld) maintainerEdits() {
	w.sf.mu.Lock()
	w.f.mu.Lock()
	var forks, noted []int
	for n, pr := range w.f.prs {
		if pr.State == "open" && pr.HeadRepo == simFork {
			forks = append(forks, n)
			if strings.Contains(w.sf.holds[simHead{n, pr.HeadSHA}], "allow edits by maintainers") {
				noted = append(noted, n)
			}
		}
	}
	w.sf.mu.Unlock()
	slices.Sort(forks)
	if len(noted) > 0 && w.rng.Float64() < 0.5 { // an author who read the note
		forks = slices.Sorted(slices.Values(noted))
	}
	if len(forks) == 0 {
		w.f.mu.Unlock()
		return
	}
	n := w.pick(forks)
	pr := w.f.prs[n]
	pr.MaintainerCanEdit = !pr.MaintainerCanEdit
	on, h := pr.MaintainerCanEdit, simHead{n, pr.HeadSHA}
	w.f.mu.Unlock()
	w.sf.mu.Lock()
	w.sf.moved[n] = time.Now()
	asked := strings.Contains(w.sf.holds[h], "allow edits by maintainers")
	if on && asked {
		delete(w.sf.holds, h)
		w.sf.editsAsked++
	}
	w.sf.mu.Unlock()
	if on && asked {
		w.changed(n)
	}
	w.logf("#%d maintainer edits %v (the pool had asked: %v)", n, on, asked)
}

// fixSession is a fixer session on h: it runs 5 to 45 minutes and files
// no review; what it committed the pool pushes (simFixes.PushFix). It may
// start on a head with a verdict (an approval whose checks fail), but not
// beside another session there.
func (w *simWorld) fixSession(pool string, h simHead) (time.Duration, func(), string) {
	w.mu.Lock()
	before := w.twice
	s := w.started(h, pool)
	if before == "" && strings.HasSuffix(w.twice, "after one filed its verdict there") {
		w.twice = "" // a fixer's turn comes after the approval
	}
	d := time.Duration(5+w.agentRng.IntN(40)) * time.Minute
	w.fixers++
	w.mu.Unlock()
	w.logf("#%d fixer session on %s for %s", h.n, short(h.head), d)
	return d, func() { w.ended(h, s, false) }, "I committed a fix."
}

// simFixes pushes what a fixer committed, half the time: a new head on
// the PR's branch, leased on the head the fixer was given.
type simFixes struct {
	w      *simWorld
	mu     sync.Mutex // guards rng and pushed; held while the fix is pushed
	rng    *rand.Rand
	pushed int
}

func (x *simFixes) MarkReviewer(string, bool) error { return nil }

func (x *simFixes) PushFix(_ context.Context, _ string, fix clone.Fix) (string, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	w := x.w
	if x.rng.Float64() < 0.5 {
		w.logf("#%d the fixer committed nothing", fix.PR)
		return "", nil
	}
	w.mu.Lock()
	head := fakeSHA(fmt.Sprintf("pr-%d-%d", fix.PR, len(w.heads[fix.PR])+1))
	w.mu.Unlock()
	w.f.mu.Lock()
	pr := w.f.prs[fix.PR]
	if pr.HeadSHA != fix.Head || pr.State != "open" {
		w.f.mu.Unlock()
		return "", &clone.RefusedError{Reason: "the head moved since the fixer started"}
	}
	pr.HeadSHA = head
	w.f.touch(fix.PR)
	w.f.mu.Unlock()
	w.newHead(fix.PR, head, x.rng)
	w.newWait(fix.PR)
	x.pushed++
	w.logf("#%d fixer's commit pushed: %s", fix.PR, short(head))
	return head, nil
}
