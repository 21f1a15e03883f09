package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"pool/claims"
	"pool/clone"
	"pool/forge"
	"pool/forgejo"
	"pool/internal/guard"
	"pool/lifecycle"
)

// cycleResult counts what one discovery cycle found.
type cycleResult struct {
	dispatched int // sessions handed to slots
	acted      int // mechanical actions taken (merge, comment, ...)
	running    int // PRs held by a slot
	retrying   int // approved PRs waiting to merge, or PRs backing off
	queued     int // PRs in the merge queue, listed or not
	waiting    int // PRs that need a session and got no slot
	failed     int // PRs whose step failed: tried again next cycle
}

// quiet is a cycle with nothing to do.
func (r cycleResult) quiet() bool {
	return r.dispatched == 0 && r.acted == 0 && r.running == 0 && r.retrying == 0 && r.queued == 0 && r.waiting == 0 &&
		r.failed == 0
}

// candidate is a PR that needs a session.
type candidate struct {
	pr       forge.PR
	kind     lifecycle.Kind
	rereview bool // the pool reviewed an earlier head
	fresh    bool // a head the pool has not decided on yet (while a cycle sorts what to decide)
}

// byTurn orders a repository's candidates for the slots: first reviews of
// PRs never reviewed, then re-reviews, then fixers; oldest PR first.
func byTurn(todo []candidate) {
	rank := func(c candidate) int {
		switch {
		case c.kind == lifecycle.Fix:
			return 2
		case c.rereview:
			return 1
		}
		return 0
	}
	slices.SortStableFunc(todo, func(a, b candidate) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return a.pr.Number - b.pr.Number
	})
}

// cycle lists the open PRs on the default branch, decides each one that
// changed (or whose decision has run out), takes the mechanical actions, and
// hands PRs that need a session to free slots.
func (p *Pool) cycle(ctx, work context.Context) (cycleResult, error) {
	var res cycleResult
	prs, err := p.listPRs(ctx)
	if err != nil {
		return res, err
	}
	open := map[int]bool{}
	var todo, toStep []candidate
	for _, pr := range prs {
		if pr.BaseRef != p.Base() {
			continue
		}
		open[pr.Number] = true
		if p.isBusy(pr.Number) {
			res.running++
			continue
		}
		if p.queue.has(pr.Number) {
			continue // the merge queue holds it: counted below
		}
		if act, ok := p.index.unchanged(pr, p.track(pr.Number), p.rules, p.now()); ok {
			p.tally(&res, pr.Number, act, &todo, pr)
			continue
		}
		toStep = append(toStep, candidate{pr: pr, fresh: p.track(pr.Number).HeadSHA != pr.HeadSHA})
	}
	// New heads are decided first, and their sessions started before the
	// PRs whose decision only ran out (waiting for checks, backing off) are
	// decided again: a PR just opened does not wait for those reads.
	slices.SortStableFunc(toStep, func(a, b candidate) int { return boolRank(b.fresh) - boolRank(a.fresh) })
	var started []candidate
	for i, c := range toStep {
		if ctx.Err() != nil {
			return res, nil // shutting down: the PR being stepped has finished
		}
		if err := p.stepOne(ctx, work, c.pr, &res, &todo); err != nil {
			return res, err
		}
		if c.fresh && (i+1 == len(toStep) || !toStep[i+1].fresh) && !p.cfg.DryRun && len(todo) > 0 {
			todo, started = p.dispatchSome(ctx, work, todo, started, &res)
		}
	}
	if err := p.forgetGone(ctx, open); err != nil {
		return res, err
	}
	// Every queued PR counts, listed or not: one whose merge answer was lost
	// is listed as closed before the queue reads it and settles it.
	res.queued = p.queue.size()
	if p.cfg.DryRun {
		// Nothing changes by our hand, so a dry cycle is idle by definition.
		for _, c := range todo {
			p.log.Info("dry run: would start a session", "pr", c.pr.Number, "kind", c.kind)
		}
		p.slots.Want(p.cfg.Repo(), 0)
		return cycleResult{running: res.running, failed: res.failed}, nil
	}
	todo, started = p.dispatchSome(ctx, work, todo, started, &res)
	res.waiting = len(todo)
	p.book.Queued(numbers(append(started, todo...)), len(started), p.now())
	return res, nil
}

// stepOne decides one PR and tallies the decision. Only a rejected token
// is an error: any other failure is retried next cycle.
func (p *Pool) stepOne(ctx, work context.Context, pr forge.PR, res *cycleResult, todo *[]candidate) error {
	d, err := p.decideAndAct(work, pr) // its comments and merges get the shutdown timeout
	if err != nil {
		if errors.Is(err, forgejo.ErrUnauthorized) {
			return err
		}
		p.log.Warn("PR step failed; retrying next cycle", "pr", pr.Number, "err", err)
		res.failed++ // not idle: the PR is still to be decided
		return nil
	}
	t := p.track(pr.Number)
	// The quiet period counts from the decision's instant: one made on
	// reads that took seconds (a slow forge) may already be stale.
	p.index.remember(pr, t, p.rules, d.Action, p.quietUntil(t, d.Action, d.at))
	p.tally(res, pr.Number, d.Action, todo, pr)
	return nil
}

// dispatchSome hands todo's candidates to free slots in turn, and returns
// those left and those started (added to started). dispatchAll orders todo
// in place, the started first.
func (p *Pool) dispatchSome(ctx, work context.Context, todo, started []candidate, res *cycleResult) ([]candidate, []candidate) {
	left, now := p.dispatchAll(ctx, work, todo)
	res.dispatched += len(now)
	return left, append(started, now...)
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (p *Pool) tally(res *cycleResult, n int, act lifecycle.Action, todo *[]candidate, pr forge.PR) {
	switch act.Kind {
	case lifecycle.Review, lifecycle.Fix:
		*todo = append(*todo, candidate{pr: pr, kind: act.Kind, rereview: p.track(n).ReviewedSHA != ""})
	case lifecycle.Merge, lifecycle.Disarm, lifecycle.NoteConflict, lifecycle.NoteBlocked, lifecycle.Drop:
		res.acted++
	}
	// Approved PRs waiting to merge, and PRs backing off after a failed
	// session, are work still to do: such a cycle is not idle.
	if t := p.track(n); t.State.Retrying() || p.now().Before(t.NotBefore) {
		res.retrying++
	}
}

// numbers are the candidates' PR numbers, in order.
func numbers(todo []candidate) []int {
	out := make([]int, len(todo))
	for i, c := range todo {
		out[i] = c.pr.Number
	}
	return out
}

// dispatchAll hands candidates to free slots in turn (byTurn), and returns
// those left waiting and those it started. The slots learn how many are
// left. A candidate no agent server of its role has a slot for waits
// (reserve), and the next in turn may take the slot.
func (p *Pool) dispatchAll(ctx, work context.Context, todo []candidate) (left, started []candidate) {
	byTurn(todo)
	p.slots.Want(p.cfg.Repo(), len(todo))
	defer func() { p.slots.Want(p.cfg.Repo(), len(left)) }()
	for i, c := range todo {
		if ctx.Err() != nil {
			return append(left, todo[i:]...), started
		}
		if !p.reserve(c) {
			left = append(left, c)
			continue
		}
		if !p.takeSlot(c.pr.Number) {
			p.unreserve(c.pr.Number)
			return append(left, todo[i:]...), started
		}
		// The session's end is observed by the loop: once the slot is
		// free, the PR is decided again: its follower only records the end.
		p.index.forget(c.pr.Number)
		p.workers.Add(1)
		guard.Go(ctx, p.log, "slot", func() {
			defer p.workers.Done()
			defer p.releaseSlot(c.pr.Number)
			defer p.unreserve(c.pr.Number)
			p.runSlot(ctx, work, c)
		})
		started = append(started, c)
	}
	return left, started
}

// decision is an action and the instant it was decided for: the
// observation's, which may be seconds before the reads (and the decision)
// returned. How long the decision holds counts from it. reviews are the
// reviews it read (vouched), if it read them (reviewsRead); approved: the
// counted reviews approve the head (lifecycle.Observation.Approved).
type decision struct {
	lifecycle.Action
	at          time.Time
	reviews     []forge.Review
	reviewsRead bool
	approved    bool
}

// unapproved reports whether the decision read the reviews and they do not
// approve the head: a request for changes, an approval withdrawn or
// dismissed, none that carries over.
func (d decision) unapproved() bool { return d.reviewsRead && !d.approved }

// decideAndAct observes one PR, decides, and performs the decision unless
// it needs a session, which the caller arranges: a merge goes to the merge
// queue.
func (p *Pool) decideAndAct(ctx context.Context, pr forge.PR) (decision, error) {
	d, t, err := p.decide(ctx, pr)
	if err != nil {
		return d, err
	}
	return d, p.act(ctx, pr, t, d.Action)
}

// decide observes the PR, has lifecycle decide on it and records the
// decision. The discovery loop acts on it (decideAndAct); the merge queue
// merges or updates itself, or hands the PR back (merger.mergeOne).
func (p *Pool) decide(ctx context.Context, pr forge.PR) (decision, lifecycle.Track, error) {
	return p.decideReading(ctx, pr, 0)
}

// mergeFacts are the facts a decision to merge an approved PR reads: its
// reviews, its head's checks and its open dependencies.
const mergeFacts = lifecycle.FactReviews | lifecycle.FactChecks | lifecycle.FactDependencies

// decideReading is decide that reads the facts of ahead in its first round
// of reads, beside the reviews, where lifecycle.Plan would ask for them one
// round after another. The merge queue decides so on a PR it holds
// (mergeFacts): its decision is a merge but for a change, and each round
// is a request the merge call waits for, on a slow forge longer than the
// reviews are taken as fresh (reviewsFreshFor, after which they are read
// once more). A fact read ahead that the decision does not need is a
// request made for nothing; none is left unread.
func (p *Pool) decideReading(ctx context.Context, pr forge.PR, ahead lifecycle.Facts) (decision, lifecycle.Track, error) {
	obs, err := p.observe(ctx, pr, ahead)
	if err != nil {
		return decision{}, lifecycle.Track{}, err
	}
	if obs.Approved() && !p.hasTrack(pr.Number) {
		if err := p.recoverAttempts(ctx, pr); err != nil {
			return decision{}, lifecycle.Track{}, err
		}
	}
	next, act := p.decided(pr.Number, obs)
	p.logDecision(pr.Number, next, act)
	p.book.Decided(pr, next, act, p.now())
	return decision{Action: act, at: obs.Now, reviews: obs.Reviews, reviewsRead: obs.Read.Has(lifecycle.FactReviews),
		approved: obs.Approved()}, next, nil
}

// observe reads what the decision on the PR needs, as lifecycle.Plan asks
// for it, round by round, until the decision needs nothing more.
//
// The facts of ahead are read in the first round that reads the reviews
// (decideReading).
func (p *Pool) observe(ctx context.Context, pr forge.PR, ahead lifecycle.Facts) (lifecycle.Observation, error) {
	t := p.track(pr.Number)
	obs := p.policy.Observe(pr, p.cfg.Repo(), p.now())
	obs.Protection = p.currentProtection()
	obs.SlotFree = p.freeSlots() > 0
	p.mu.Lock()
	obs.ReadAhead = p.stats.cycles > 0
	p.mu.Unlock()
	for {
		var need lifecycle.Facts
		obs, need = lifecycle.Plan(p.policy, t, obs)
		if need == 0 {
			return obs, nil
		}
		if need.Has(lifecycle.FactReviews) {
			need |= ahead &^ obs.Read
			ahead = 0
		}
		if err := p.read(ctx, pr, t, need, &obs); err != nil {
			return obs, err
		}
		obs.Read |= need
	}
}

// read reads the facts of need into obs. The claims (the PR's comments)
// are read beside the rest.
func (p *Pool) read(ctx context.Context, pr forge.PR, t lifecycle.Track, need lifecycle.Facts, obs *lifecycle.Observation) error {
	var comments []forge.Comment
	var cerr error
	done := make(chan struct{})
	if need.Has(lifecycle.FactClaims) {
		guard.Go(ctx, p.log, "comments read", func() {
			defer close(done)
			cerr = errors.New("reading the comments panicked")
			comments, cerr = p.forge.Comments(ctx, p.cfg.Owner, p.cfg.Name, pr.Number)
		})
	} else {
		close(done)
	}
	err := p.readFacts(ctx, pr, t, need, obs)
	<-done
	if err = errors.Join(err, cerr); err != nil {
		return err
	}
	if need.Has(lifecycle.FactClaims) {
		v := p.view(pr, comments, obs.Reviews)
		obs.Claim, _ = claims.Judge(v, p.instance)
		obs.NoReviewNoted = p.notedOn(comments, forge.MarkNoReview, pr.HeadSHA)
		if obs.Claim == forge.ClaimTaken {
			p.takeBackLosers(ctx, pr.Number, v)
		}
	}
	return nil
}

// takeBackLosers deletes this pool's live claims on the head that lose to
// another pool's: a claim whose post was in flight when the pool was
// killed, which the pool started again does not know it made. claim takes
// back the losers it knows of; left, this one would stand beside the
// winner's for a claim's life (the simulation, seed 15: a pool killed 7 s
// after it posted a claim, relaunched 6 minutes later).
func (p *Pool) takeBackLosers(ctx context.Context, n int, v claims.View) {
	for _, cl := range claims.Losers(v, p.instance) {
		p.log.Info("a claim of this pool's lost to another pool's; taking it back", "pr", n, "comment", cl.CommentID)
		if err := p.takeBack(ctx, cl.CommentID); err != nil {
			p.log.Warn("taking back a claim that lost failed; the next read tries again", "pr", n, "comment", cl.CommentID, "err", err)
		}
	}
}

// readFacts reads the facts of need but the claims: the checks and the
// open dependencies each beside the rest, which it reads in turn.
func (p *Pool) readFacts(ctx context.Context, pr forge.PR, t lifecycle.Track, need lifecycle.Facts, obs *lifecycle.Observation) error {
	checks := beside(ctx, p.log, need.Has(lifecycle.FactChecks), "checks read", func() ([]forge.Status, error) {
		return p.forge.StatusHistory(ctx, p.cfg.Owner, p.cfg.Name, pr.HeadSHA)
	})
	deps := beside(ctx, p.log, need.Has(lifecycle.FactDependencies), "dependencies read", func() ([]string, error) {
		// The forge refuses a merge while issues the PR depends on are open.
		return p.forge.OpenDependencies(ctx, p.cfg.Owner, p.cfg.Name, pr.Number)
	})
	err := p.readInTurn(ctx, pr, t, need, obs)
	history, cerr := checks()
	open, derr := deps()
	if err = errors.Join(err, cerr, derr); err != nil {
		return err
	}
	if need.Has(lifecycle.FactChecks) {
		history = forgejo.WithoutContext(history, p.cfg.StatusContext) // the pool's own status is no check
		obs.Checks = lifecycle.Checks(history)
		p.book.Checks(pr.Number, obs.Checks, lifecycle.RequiredContexts(obs.Protection))
	}
	if need.Has(lifecycle.FactDependencies) {
		obs.OpenDependencies = open
	}
	return nil
}

// beside runs read on a goroutine of its own if do, and returns what
// waits for its answer (none and no error if not do).
func beside[T any](ctx context.Context, log *slog.Logger, do bool, what string, read func() (T, error)) func() (T, error) {
	var got T
	if !do {
		return func() (T, error) { return got, nil }
	}
	err := errors.New(what + " panicked")
	done := make(chan struct{})
	guard.Go(ctx, log, what, func() {
		defer close(done)
		got, err = read()
	})
	return func() (T, error) {
		<-done
		return got, err
	}
}

// readInTurn reads the reviews, the facts of the pool's update and the
// budget of need, one after another.
func (p *Pool) readInTurn(ctx context.Context, pr forge.PR, t lifecycle.Track, need lifecycle.Facts, obs *lifecycle.Observation) error {
	if need.Has(lifecycle.FactReviews) {
		reviews, err := p.forge.Reviews(ctx, p.cfg.Owner, p.cfg.Name, pr.Number)
		if err != nil {
			return err
		}
		obs.Reviews = p.vouch(pr.Number, reviews)
	}
	if err := p.observeUpdate(ctx, pr, t, need, obs); err != nil {
		return err
	}
	if need.Has(lifecycle.FactBudget) {
		return p.observeBudget(ctx, pr, obs)
	}
	return nil
}

// observeUpdate reads, for the head an update the pool made produced, what
// judging its approval takes: its parents (a merge) or the PR's diff (a
// rebase), and whether its tree is the merge of the approved head and the
// base tip (sameTree).
func (p *Pool) observeUpdate(ctx context.Context, pr forge.PR, t lifecycle.Track, need lifecycle.Facts, obs *lifecycle.Observation) error {
	var err error
	if need.Has(lifecycle.FactParents) {
		obs.HeadParents, err = p.parents(ctx, pr.HeadSHA)
	}
	if need.Has(lifecycle.FactDiff) && err == nil {
		obs.DiffHash, err = p.forge.DiffHash(ctx, p.cfg.Owner, p.cfg.Name, pr.Number)
	}
	if need.Has(lifecycle.FactTree) && err == nil {
		var same bool
		same, err = p.sameTree(ctx, pr.Number, pr.HeadSHA, t.Update)
		obs.TreeDiffers = !same
	}
	return err
}

// sameTree reports whether head's tree is the merge of the approved head
// and the base tip of update u, as the pool's clone computes it; once known
// for a head, it is not computed again. A check that fails is made again
// at the next decisions, and after three failures the head differs: it is
// reviewed again rather than held for ever (the approved head gone from
// the clone). Without a clone or a git that can
// (clone.ErrNoMergeTree), only the commit is checked: true.
func (p *Pool) sameTree(ctx context.Context, n int, head string, u lifecycle.HeadUpdate) (bool, error) {
	if p.history == nil {
		return true, nil
	}
	key := head + " " + u.From + " " + u.Base
	p.mu.Lock()
	same, ok := p.treeChecks[key]
	p.mu.Unlock()
	if ok {
		return same, nil
	}
	same, err := p.history.MergeTreeIs(ctx, n, head, u.From, u.Base)
	if errors.Is(err, clone.ErrNoMergeTree) {
		p.log.Warn("the clone's git cannot check an updated head's tree; its approval carries over to the exact commit the update made", "pr", n, "err", err)
		same, err = true, nil
	}
	if err != nil && p.treeFailed(key) < 3 {
		return false, fmt.Errorf("check the tree of #%d's updated head: %w", n, err) // the forge may not publish the head yet
	}
	if err != nil || !same {
		p.log.Warn("the updated head's tree is not the merge of the approved head and the base, or could not be checked: it is reviewed again", "pr", n, "head", head, "err", err)
	}
	p.mu.Lock()
	if len(p.treeChecks) > 256 {
		clear(p.treeChecks)
	}
	p.treeChecks[key] = same
	p.mu.Unlock()
	return same, nil
}

// treeFailed counts a failed tree check of key, and returns the failures
// before it.
func (p *Pool) treeFailed(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	fails := p.treeFails[key]
	if len(p.treeFails) > 256 {
		clear(p.treeFails)
	}
	p.treeFails[key] = fails + 1
	return fails
}

// judgeClaims reads the PR's comments and says who holds it.
func (p *Pool) judgeClaims(ctx context.Context, pr forge.PR) (forge.ClaimVerdict, error) {
	v, err := p.claimView(ctx, pr)
	if err != nil {
		return forge.ClaimFree, err
	}
	verdict, _ := claims.Judge(v, p.instance)
	return verdict, nil
}

// claimView reads the PR's comments and reviews, at once.
func (p *Pool) claimView(ctx context.Context, pr forge.PR) (claims.View, error) {
	var reviews []forge.Review
	var rerr error
	done := make(chan struct{})
	guard.Go(ctx, p.log, "reviews read", func() {
		defer close(done)
		reviews, rerr = p.forge.Reviews(ctx, p.cfg.Owner, p.cfg.Name, pr.Number)
	})
	comments, err := p.forge.Comments(ctx, p.cfg.Owner, p.cfg.Name, pr.Number)
	<-done
	if err = errors.Join(err, rerr); err != nil {
		return claims.View{}, err
	}
	return p.view(pr, comments, p.vouch(pr.Number, reviews)), nil
}

// view is what the claim protocol judges, from this pool's side. Only
// counted reviews on the head are review activity: a passer-by's review
// keeps no claim alive.
func (p *Pool) view(pr forge.PR, comments []forge.Comment, reviews []forge.Review) claims.View {
	var counted []forge.Review
	for _, r := range reviews {
		if p.policy.Rule.Counts(pr.Author, pr.HeadSHA, r) {
			counted = append(counted, r)
		}
	}
	return claims.View{HeadSHA: pr.HeadSHA, Comments: comments, Reviews: counted,
		Trusted: append([]string{p.me}, p.cfg.TrustedClaimers...), TTL: p.cfg.ClaimTTL, Now: p.now()}
}

// forgetGone settles tracked PRs that are no longer open: merged or closed.
func (p *Pool) forgetGone(ctx context.Context, open map[int]bool) error {
	for _, n := range p.trackedNumbers() {
		if open[n] || p.isBusy(n) || p.queue.has(n) || !p.index.readDue(n, p.now()) {
			continue
		}
		pr, err := p.forge.PR(ctx, p.cfg.Owner, p.cfg.Name, n)
		if errors.Is(err, forgejo.ErrNotFound) {
			p.readOK(n)
			p.forget(n)
			continue
		}
		if errors.Is(err, forgejo.ErrUnauthorized) || ctx.Err() != nil {
			return err
		}
		if err != nil {
			p.readFailed(n, nil, err) // one PR the forge cannot show stops no other
			continue
		}
		p.readOK(n)
		if pr.BaseRef != p.Base() && pr.State == "open" {
			p.forget(n) // retargeted away from the default branch
			continue
		}
		if _, err := p.decideAndAct(ctx, pr); err != nil {
			p.log.Warn("settling a closed PR failed", "pr", n, "err", err)
		}
	}
	return nil
}

// logDecision logs actions at info; waiting and session requests (which
// repeat every cycle while slots are full) at debug.
func (p *Pool) logDecision(n int, t lifecycle.Track, act lifecycle.Action) {
	level := slog.LevelInfo
	switch act.Kind {
	case lifecycle.Wait, lifecycle.Review, lifecycle.Fix, lifecycle.Skip:
		if !act.Diagnostic {
			level = slog.LevelDebug
		}
	}
	p.log.Log(context.Background(), level, "decision", "pr", n, "action", act.Kind, "state", t.State, "reason", act.Reason)
}
