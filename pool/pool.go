// Package pool is the loop of one repository: one discovery loop that
// decides what each open PR needs (package lifecycle), does the mechanical
// steps itself (notes, the merge queue), and keeps at most N reviewer
// sessions running on the agent server, refilling a slot as soon as its
// session ends. It claims a PR before a session starts and decides what the
// session's end means for it; package sessions starts, watches and ends
// the sessions themselves, and package slots shares the workers among the
// pools of one process. A PR's track changes only in track.go, under the
// PR's lock; the marks of an action are recorded after it succeeded.
// Package serve wires one or several pools into a process; package store
// keeps their memory.
package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"pool/forge"
	"pool/internal/retry"
	"pool/texts"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"pool/configs"
	"pool/describe"
	"pool/forgejo"
	"pool/internal/guard"
	"pool/lifecycle"
	"pool/sessionmark"
	"pool/sessions"
	"pool/slots"
	"pool/store"
)

// Deps are the pool's collaborators; tests pass fakes.
type Deps struct {
	Forge Forge
	Agent Agent
	// Trees gives each session a work tree; nil: sessions work in the agent
	// server's own directory.
	Trees Trees
	// Fixes pushes what a fixer session committed; nil: nothing is pushed.
	// UseClone sets it with the trees.
	Fixes Fixes
	// History checks a PR the forge reads mergeable but will not merge; nil:
	// such a PR waits for the forge.
	History History
	// Cars makes a merge train's cars; nil: no trains. UseClone sets it
	// with the trees.
	Cars Cars
	// WorkDir is where the clone and its work trees live, or their parent;
	// New asks the agent server for its agents there ("" for the server's
	// own directory), since the server loads its config per directory.
	WorkDir string
	// Digests feeds open review items into re-review and fixer prompts; may be nil.
	Digests Digester
	Store   State // nil: a store.Memory
	Log     *slog.Logger
	Now     func() time.Time
	Metrics Metrics // may be nil
	// Slots are shared by the pools of the repositories one process serves;
	// nil: this pool's own, cfg.Workers of them. A pool New makes with
	// shared slots must be Run: until its first cycle, no slot is given. A pool that shares them
	// never takes a session titled in the old form, which names no
	// repository.
	Slots *slots.Slots
	// Reruns runs a failed car's Actions jobs again (train.go); nil: Forge's,
	// where it has the method (a *forgejo.Client), else none.
	Reruns Reruns
	// FullList spreads the full listings of the pools one process serves,
	// so that a round of their cycles holds one at most; zero: every
	// FullListEvery-th cycle.
	FullList ListTurn
}

// ListTurn is when a pool lists all its open PRs instead of reading the
// delta: after its first cycle, on the cycles n with n%Every == Phase.
// Gate, when set, must allow a listing that is due; one it refuses is
// made at a later cycle that it allows.
type ListTurn struct {
	Every, Phase int
	Gate         func() bool
}

// Pool is one running supervisor.
type Pool struct {
	cfg     configs.Config
	forge   Forge
	agent   Agent
	trees   Trees
	fixes   Fixes // nil: a fixer's commits are not pushed
	history History
	cars    Cars // makes a merge train's cars (train.go); nil: no trains
	// parentsOf keeps the parents of the heads read (parents.go).
	parentsOf parentsMemory
	// fastForward is whether the repository allows fast-forward-only
	// merges, with which a train's cars land: read at start and again with
	// every full listing (followBase); under mu.
	fastForward forge.Setting
	// noFastForward: the forge refused a train's fast-forward-only merge for
	// its style; trains are off until a reading of the repository shows
	// its setting changed.
	noFastForward atomic.Bool
	// reruns runs a failed car's Actions jobs again (Gitea 1.26); nil: the
	// forge cannot. noRerun: the forge answered that it has no such
	// endpoint (Forgejo), learned once for the process.
	reruns  Reruns
	noRerun atomic.Bool
	// trainsOffSaid is why trains were last found impossible (sayTrainsOff); under mu.
	trainsOffSaid string
	digests       Digester
	store         State
	log           *slog.Logger
	now           func() time.Time
	policy        lifecycle.Policy
	marks         sessionmark.Key // makes its sessions' marks and checks them (vouch)
	metrics       Metrics
	book          *describe.Book // what the status page and commit statuses show
	slots         *slots.Slots
	shared        bool // slots shared with pools of other repositories

	me       string                 // the token's account
	base     atomic.Pointer[string] // the default branch (Base); a renamed one is followed (followBase)
	instance string
	spec     string

	// The base branch's protection, read at start and again with every full
	// listing of the open PRs; rules counts its changes so that decisions
	// held while it stood are made again. Written by the discovery loop
	// goroutine only, under mu (slots read it through observe).
	protection     forge.Protection
	protectionRead time.Time
	rules          int
	// learned are the rules of the protection the token cannot read that
	// the forge's refusals named (lifecycle.Learn); under mu.
	learned []string

	index index // owned by the discovery loop goroutine
	// fresher are reads of PRs newer than the index's copies, made by the
	// merge queue, for the loop's next listing (fresherRead); under mu.
	fresher map[int]freshRead
	// lastAsk is the latest stamp askStamp gave; under askMu.
	askMu   sync.Mutex
	lastAsk time.Time
	turn    ListTurn      // when the discovery loop lists every open PR
	freed   chan struct{} // a slot was released; buffered 1
	cycled  chan struct{} // closed when the discovery loop's first cycle has ended
	wakeups chan struct{} // a webhook said something changed; buffered 1
	workers sync.WaitGroup
	queue   *mergeQueue
	merger  *merger // the merge queue's worker

	sessions *sessions.Set // the sessions running, and those to delete

	mu     sync.Mutex              // guards tracks, locks, busy, stats, protection, treeChecks, treeFails, spend
	tracks map[int]lifecycle.Track // written by writeTrack alone
	locks  map[int]*sync.Mutex     // each PR's, held while its track changes
	acting map[int]*sync.Mutex     // each PR's, held while one of its actions is carried out
	busy   map[int]bool            // PRs held by a slot (claiming, reviewing or collecting)
	stats  Stats
	// treeChecks are the updated heads whose tree the clone compared with
	// the merge of the approved head and the base (sameTree).
	treeChecks map[string]bool
	treeFails  map[string]int // failed checks of those not known yet
	spend      spending       // the review sessions of the last day and who may have them (budget.go)
}

// New prepares a pool: it checks the token, reads the default branch, checks
// the agent server knows the agent, loads state and the instance identity.
// It starts nothing.
func New(ctx context.Context, cfg configs.Config, d Deps) (*Pool, error) {
	p := &Pool{cfg: cfg, forge: d.Forge, agent: d.Agent, trees: d.Trees, fixes: d.Fixes, history: d.History, cars: d.Cars, digests: d.Digests, store: d.Store, log: d.Log, now: d.Now,
		freed: make(chan struct{}, 1), cycled: make(chan struct{}), wakeups: make(chan struct{}, 1), busy: map[int]bool{},
		tracks: map[int]lifecycle.Track{}, locks: map[int]*sync.Mutex{}, acting: map[int]*sync.Mutex{}, treeChecks: map[string]bool{}, treeFails: map[string]int{}, queue: newMergeQueue(cfg.PollInterval)}
	p.merger = &merger{p: p, q: p.queue}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.reruns = d.Reruns; p.reruns == nil {
		p.reruns, _ = d.Forge.(Reruns)
	}
	if cfg.DryRun {
		// A dry run decides on what the forge shows and keeps nothing:
		// its forge writes nothing, its memory ends with the process.
		p.forge, p.store, p.reruns = dryForge{Forge: p.forge, log: p.log}, store.NewMemory(), nil
	}
	p.slots, p.shared = d.Slots, d.Slots != nil
	p.turn = d.FullList
	if p.turn.Every <= 0 {
		p.turn = ListTurn{Every: FullListEvery}
	}
	if p.slots == nil {
		p.slots = slots.New(cfg.Workers, 0)
	}
	p.marks = sessionmark.NewKey(cfg.Token)
	p.metrics, p.book = d.Metrics, describe.NewBook(p.now())
	if p.metrics == nil {
		p.metrics = noMetrics{}
	}
	p.policy = cfg.Policy()
	var err error
	if err = startRead(ctx, func() (err error) { p.me, err = p.forge.Me(ctx); return err }); err != nil {
		return nil, fmt.Errorf("pool: check token: %w", err)
	}
	var repo forge.Repository
	if err = startRead(ctx, func() (err error) { repo, err = p.forge.Repository(ctx, cfg.Owner, cfg.Name); return err }); err != nil {
		return nil, fmt.Errorf("pool: read repository: %w", err)
	}
	base := repo.DefaultBranch
	p.base.Store(&base)
	p.fastForward = repo.FastForwardOnly
	if err = startRead(ctx, func() (err error) {
		p.protection, err = p.forge.Protection(ctx, cfg.Owner, cfg.Name, base)
		return err
	}); err != nil {
		return nil, fmt.Errorf("pool: read the protection of %s: %w", base, err)
	}
	p.protectionRead = p.now()
	p.warnMightyReviewers(ctx)
	if err := p.checkAgent(ctx); err != nil {
		return nil, err
	}
	if err := p.checkAgentPassword(ctx); err != nil {
		return nil, err
	}
	if err := p.loadState(); err != nil {
		return nil, err
	}
	if cfg.SpecFile != "" {
		b, err := os.ReadFile(cfg.SpecFile)
		if err != nil {
			return nil, &configs.Error{Key: "spec_file", Reason: err.Error()}
		}
		p.spec = string(b)
	}
	p.log = p.log.With("instance", p.instance)
	p.sessions = sessions.New(p.agent, p.trees, sessions.Config{StatusInterval: cfg.StatusInterval,
		SessionTimeout: cfg.SessionTimeout, Keep: p.slots.PerRepo, Now: p.now, Log: p.log})
	// Joined now, not when Run starts, so that the slots wait for this
	// repository's first cycle (see Slots): a pool New returns must be Run.
	p.slots.Join(p.cfg.Repo(), p.wakeFreed)
	return p, nil
}

func (p *Pool) loadState() error {
	generate := func() string { return fmt.Sprintf("pr-reviewer-pool-%d-%d", os.Getpid(), p.now().Unix()) }
	if p.store == nil {
		p.store = store.NewMemory()
	}
	var err error
	if p.instance, err = p.store.InstanceID(p.cfg.InstanceID, generate); err != nil {
		return err
	}
	p.tracks, err = p.store.Tracks()
	return err
}

// Run supervises until ctx ends, the idle limit is reached, (with Once) one
// cycle's work is done, or a fatal error. It returns the exit report. Every
// way out is the same two-phase shutdown: no new claims or sessions; running
// sessions are left for the next start to adopt (or aborted with
// AbortOnExit); in-flight forge calls get ShutdownTimeout to finish; sessions
// the agent server did not let it delete are tried once more. Every
// goroutine Run started has ended when it returns.
func (p *Pool) Run(parent context.Context) (Report, error) {
	p.log.Info("pool starting", "repo", p.cfg.Repo(), "workers", p.cfg.Workers, "base", p.Base(), "account", p.me)
	p.logProtection()
	p.sayMergeSettingsUnsaid()
	ctx, stop := context.WithCancel(parent)
	defer stop()
	defer p.slots.Leave(p.cfg.Repo())
	work, stopWork := p.workContext(ctx)
	defer stopWork()
	if err := p.adopt(ctx, work); err != nil {
		p.log.Warn("adopting sessions failed; continuing", "err", err)
	}
	watchDone, queueDone, warmDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	queueCtx, stopQueue := context.WithCancel(ctx)
	defer stopQueue()
	guard.Go(work, p.log, "session watch", func() { defer close(watchDone); p.sessions.Watch(work) })
	guard.Go(work, p.log, "merge queue", func() { defer close(queueDone); p.merger.run(queueCtx, work) })
	guard.Go(ctx, p.log, "tree warming", func() { defer close(warmDone); p.warmTrees(ctx) })

	err := p.loop(ctx, work)

	stopQueue() // no merge starts after the loop has ended
	stop()
	p.shutdown(work, queueDone)
	<-warmDone // quick: ctx has ended
	p.sessions.Sweep(work)
	stopWork()
	p.workers.Wait() // quick: everything they wait on has been cancelled
	<-watchDone
	<-queueDone
	return p.report(), err
}

// workContext outlives ctx by ShutdownTimeout so that a claim or dispatch in
// progress can finish cleanly.
func (p *Pool) workContext(ctx context.Context) (context.Context, context.CancelFunc) {
	work, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(p.cfg.ShutdownTimeout, cancel)
		context.AfterFunc(work, func() { t.Stop() })
	})
	return work, func() { stop(); cancel() }
}

// shutdown waits for the slots and for the merge queue's call in flight
// (queueDone), bounded by ShutdownTimeout; then work is cancelled.
func (p *Pool) shutdown(work context.Context, queueDone <-chan struct{}) {
	done := make(chan struct{})
	guard.Go(work, p.log, "shutdown wait", func() { p.workers.Wait(); <-queueDone; close(done) })
	t := time.NewTimer(p.cfg.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		p.log.Warn("shutdown timeout: cancelling the work in progress")
	case <-work.Done():
	}
}

// loop is the discovery loop: one cycle, dispatch, wait; repeat.
func (p *Pool) loop(ctx context.Context, work context.Context) error {
	idle := 0
	failures := 0
	defer p.firstCycleEnded()
	for ctx.Err() == nil {
		began := p.now()
		res, err := p.cycle(ctx, work)
		p.firstCycleEnded()
		switch {
		case errors.Is(err, forgejo.ErrUnauthorized):
			return fmt.Errorf("pool: the forge rejected the token: %w", err)
		case err != nil && ctx.Err() == nil:
			p.slots.Want(p.cfg.Repo(), 0) // no turn held for a failing repository
			failures++
			p.logFailure(failures, err)
			if !retry.Wait(ctx, retryWait(failures, p.cfg.PollInterval, 10*time.Minute, err)) {
				return nil
			}
			continue
		}
		failures = 0
		p.countCycle()
		p.metrics.CycleDone(p.now().Sub(began))
		p.book.Cycled(p.now())
		if res.quiet() {
			idle++
		} else {
			idle = 0
		}
		if p.cfg.IdleExit > 0 && idle >= p.cfg.IdleExit {
			p.log.Info("idle limit reached; exiting", "idle_cycles", idle)
			return nil
		}
		if p.cfg.Once && p.settled() {
			return nil
		}
		p.waitForWork(ctx)
	}
	return nil
}

// firstCycleEnded says the discovery loop's first cycle has ended (its
// PRs hold their slots), once.
func (p *Pool) firstCycleEnded() {
	select {
	case <-p.cycled:
	default:
		close(p.cycled)
	}
}

// logFailure logs the first failure of a run of failures, then every tenth.
func (p *Pool) logFailure(n int, err error) {
	if n == 1 || n%10 == 0 {
		p.log.Warn("cycle failed; backing off", "err", err, "consecutive", n)
	}
}

func (p *Pool) waitForWork(ctx context.Context) {
	t := time.NewTimer(p.cfg.PollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-p.freed:
	case <-p.wakeups:
	}
}

// Wake asks for a discovery cycle now: the forge said PR n (0: some PR)
// changed. The cycle reads the change itself; n is for the log.
func (p *Pool) Wake(n int) {
	p.log.Debug("woken by the forge", "pr", n)
	p.queue.restart() // the PR or its base changed: the queue reads again now
	p.wakeLoop()
}

// wakeFreed tells the discovery loop a slot is free for it.
func (p *Pool) wakeFreed() {
	select {
	case p.freed <- struct{}{}:
	default:
	}
}

// wakeLoop asks the discovery loop for a cycle now.
func (p *Pool) wakeLoop() {
	select {
	case p.wakeups <- struct{}{}:
	default:
	}
}

// settled: nothing running, every session's end judged by a decision,
// and every PR queued to merge tried once, for --once.
func (p *Pool) settled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.busy) > 0 || p.queue.untried() > 0 {
		return false
	}
	for _, t := range p.tracks {
		if t.Ended != (lifecycle.SessionEnd{}) {
			return false
		}
	}
	return true
}

// retryWait is the wait after n consecutive failures, the last one err:
// base doubled per failure, capped at max, less up to 25% jitter; or, when
// longer, the wait a 429 or 503 asked for (Retry-After), capped at max.
func retryWait(n int, base, max time.Duration, err error) time.Duration {
	return forge.Backoff{Base: base, Max: max, Jitter: 0.25}.DelayAtLeast(n, rand.Float64(), forgejo.RetryAfter(err))
}

// comment posts a signed comment.
func (p *Pool) comment(ctx context.Context, n int, body string) (forge.Comment, error) {
	return p.forge.PostComment(ctx, p.cfg.Owner, p.cfg.Name, n, texts.Sign(body))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Base is the repository's default branch, whose PRs the pool serves.
func (p *Pool) Base() string {
	if b := p.base.Load(); b != nil {
		return *b
	}
	return ""
}

// Clone is the repository's clone: work trees for the sessions, the
// base branch's history, and the fixers' pushes.
type Clone interface {
	Trees
	History
	Fixes
}

// Instance is the pool's instance identity (claims, the train lease).
func (p *Pool) Instance() string { return p.instance }

// UseClone gives the pool its clone, before it runs.
func (p *Pool) UseClone(c Clone) {
	p.trees, p.history, p.fixes = c, c, c
	if cars, ok := c.(Cars); ok {
		p.cars = cars
	}
	p.sessions.UseTrees(c)
}

// RetireTrees, once the pool has run, removes every free work tree and
// frees the agent server's instances for them; the trees of sessions left
// running stay.
func (p *Pool) RetireTrees() {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.ShutdownTimeout)
	defer cancel()
	p.sessions.RetireTrees(ctx, time.Now())
}

// Leave gives up the turn in the shared slots of a pool New made that will
// not run.
func (p *Pool) Leave() { p.slots.Leave(p.cfg.Repo()) }

// LeftRunning counts the sessions left running at exit: their work trees
// must stay.
func (p *Pool) LeftRunning() int { return p.sessions.Left() }

// startRead makes one of New's reads, again after a failure worth trying
// again (a lost or cut answer, a 5xx), up to startTries times: one such
// answer at start made a pool under injected faults refuse to start
// (TestTwentyPercentFaults: read repository: HTTP 200: unexpected EOF).
func startRead(ctx context.Context, read func() error) error {
	var err error
	for i := 1; i <= startTries; i++ {
		if err = read(); err == nil || !retry.Later(err) || i == startTries {
			return err
		}
		if !retry.Wait(ctx, retryWait(i, time.Second, 5*time.Second, err)) {
			return err
		}
	}
	return err
}

// startTries bounds each of New's reads.
const startTries = 3
