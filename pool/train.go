package pool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"pool/clone"
	"pool/forge"
	"pool/forgejo"
	"pool/lifecycle"
	"pool/texts"
	"pool/train"
)

// Cars makes and moves a merge train's cars in the pool's clone (package
// train; README, "Merge trains"). The clone implements it.
type Cars interface {
	MakeCar(ctx context.Context, pr int, parent, head string) (string, error)
	PushCar(ctx context.Context, branch, car string) error
	DeleteCar(ctx context.Context, branch string) error
	LandCar(ctx context.Context, pr int, branch, lease, car string) error
	BaseTreeIs(ctx context.Context, car string) (same bool, tip string, err error)
}

var _ Cars = (*clone.Clone)(nil) // UseClone gives the pool the clone's

// Paces of the train: its riders are read again every trainPoll while
// cars wait for CI; after pushing a car to a PR's branch, the worker reads
// the PR every queuePace until the forge shows the car as its head and
// tests it, for trainLandFor at most (then the next turn tries again). A
// car the forge has not shown tested after trainUnseen such reads is
// formed again and pushed anew, once; then its PR merges one by one.
const (
	trainPoll    = 2 * time.Second
	trainLandFor = 30 * time.Second
	landAskFor   = 3 * time.Second // mergeCar
	landTries    = 4               // landCar: merges answered "try again later", asked again
	trainUnseen  = 3
	// trainStyle lands a car: the base becomes the car itself, so the cars
	// behind it stay valid (Gitea 1.26, Forgejo 7.0).
	trainStyle = "fast-forward-only"
)

// rides is the merge queue worker's train of the base, and what it knows
// of it. Only the worker's goroutine uses it.
type rides struct {
	t       train.Train
	checks  map[string]train.Checks // by car commit: final results are kept
	formed  map[string]time.Time    // by car commit: when it was pushed
	failing map[string]string       // by car commit: a failing check
	// decided is, for each PR last decided a rider, its update time then
	// and that decision: an unchanged PR is not decided again each turn,
	// and its landing reads its reviews again (merger.reviewsStand).
	decided map[int]ridden
	// stopped is the PR whose landing left another tree than its car's,
	// 0 if none: the next plan stops the train.
	stopped    int
	stoppedCar string
	stoppedTip string
	// swept are the PRs whose car landed: their train branches are
	// deleted once the train waits (sweep), not between two landings.
	swept  []int
	riding map[int]bool // the PRs that rode at the last turn
	// alone are the PRs the last turn found merge one by one, each with
	// the head it was queued at then.
	alone map[int]string
	next  time.Time // the train's next turn
	// unseen counts, by car commit, the landings whose car the forge did
	// not show as the PR's tested head within trainLandFor.
	unseen map[string]int
	// onBranch is the car the pool pushed to each PR's branch: the PR's
	// head while the forge lands it, also once the car is formed again.
	onBranch map[int]train.Car
	// reformed is the approved head of each PR whose car was formed again
	// because the forge never showed it tested: a second time, the PR
	// merges one by one.
	reformed map[int]string
	// leftChecked: this run looked for cars an earlier run left on PRs'
	// branches (takeBackLeftCars).
	leftChecked bool
	// reruns says, by car commit, whether the forge may run a failed car's
	// checks again (train.Observation.Reruns); reran are the cars it ran
	// again, once per car for the pool's life, each with the newest of its
	// statuses then; asked, the runs of each car the forge took a rerun of
	// (a car whose checks came from several).
	reruns map[string]train.Rerun
	reran  map[string]int64
	asked  map[string][]int64
}

// ridden is the decision that found a PR a rider, and the PR's update
// time then.
type ridden struct {
	updated time.Time
	d       decision
}

func newRides(base string) *rides {
	return &rides{t: train.Train{Base: base}, checks: map[string]train.Checks{}, formed: map[string]time.Time{}, failing: map[string]string{},
		decided: map[int]ridden{}, riding: map[int]bool{}, alone: map[int]string{},
		unseen: map[string]int{}, onBranch: map[int]train.Car{}, reformed: map[int]string{}, reruns: map[string]train.Rerun{}, reran: map[string]int64{},
		asked: map[string][]int64{}}
}

// trainsOn reports whether the base's approved PRs ride trains
// (merge.train): always, or auto where the protection blocks outdated
// branches; never without the clone, which makes the cars.
func (p *Pool) trainsOn() bool {
	if p.cars == nil || p.cfg.MergeTrain == "off" || p.cfg.MergeTrain == "" {
		return false
	}
	prot := p.currentProtection()
	p.mu.Lock()
	ff := p.fastForward
	p.mu.Unlock()
	if why := trainsImpossible(prot, ff, p.noFastForward.Load()); why != "" {
		p.sayTrainsOff(why)
		return false
	}
	p.sayTrainsOff("")
	return p.cfg.MergeTrain == "always" || prot.BlockOnOutdated
}

// trainsImpossible says why the forge's settings make trains pointless or
// impossible, or "". A car's landing is the pool's update of the approved
// head, whose approval carries over only where the rule keeps stale
// approvals (lifecycle.CarriesOver); elsewhere every landing would cost a
// review. A rule the token cannot read whole leaves it to the forge's
// flags on each approval after the landing push, so trains run. A car
// lands by a fast-forward-only merge (trainStyle), which the repository
// must allow (ff); where the forge does not say (Unsaid, an older forge)
// trains run, and the first landing tells: the forge's refusal of the
// style (refused) turns them off.
func trainsImpossible(prot forge.Protection, ff forge.Setting, refused bool) string {
	switch {
	case prot.Full && prot.DismissStale:
		return "the branch protection dismisses stale approvals, so no approval carries over to a car"
	case ff == forge.No:
		return "the repository does not allow fast-forward-only merges, which land a train's cars (its merge settings)"
	case refused:
		return "the repository does not allow fast-forward-only merges, which land a train's cars (the forge refused a car's merge for its style)"
	}
	return ""
}

// sayMergeSettingsUnsaid says at start, where merge.train asks for
// trains, what the pool does when the forge does not say whether the
// repository allows the merges that land a train's cars.
func (p *Pool) sayMergeSettingsUnsaid() {
	p.mu.Lock()
	ff := p.fastForward
	p.mu.Unlock()
	if p.cars == nil || p.cfg.MergeTrain == "off" || p.cfg.MergeTrain == "" || ff != forge.Unsaid {
		return
	}
	p.log.Info("the forge does not say whether the repository allows fast-forward-only merges (no allow_fast_forward_only_merge: "+
		"a forge older than Forgejo 7.0); trains run, and the first landing the forge refuses for its style turns them off with one line",
		"branch", p.Base(), "merge_train", p.cfg.MergeTrain)
}

// styleRefused reports whether the forge refused a merge for its style:
// the repository does not allow it ("fast-forward-only is not allowed an
// allowed merge style for this repository", Gitea 1.26, 405).
func styleRefused(res forge.MergeResult) bool {
	return res.Status == 405 && strings.Contains(strings.ToLower(res.Message), "merge style")
}

// sayTrainsOff logs once, each time it changes, why the PRs merge one by
// one although merge.train asks for trains ("": trains are possible).
func (p *Pool) sayTrainsOff(why string) {
	p.mu.Lock()
	said := p.trainsOffSaid
	p.trainsOffSaid = why
	p.mu.Unlock()
	if why != "" && why != said {
		p.log.Warn("merge.train is on, but the pool merges one by one: "+why, "branch", p.Base(), "merge_train", p.cfg.MergeTrain)
	}
}

// trainBranch is the pool's own branch the car of PR n is pushed to.
func trainBranch(base string, n int) string { return fmt.Sprintf("pool-train/%s/%d", base, n) }

// trainStep, with trains on, runs the train once every trainPoll (at
// once after a landing: the next car may be green already) and returns
// how long until its next run. Only the pool that holds the train lease
// of the base runs it (lease.go); another waits.
func (m *merger) trainStep(ctx context.Context) time.Duration {
	p := m.p
	if m.rides == nil || m.rides.t.Base != p.Base() {
		m.rides = newRides(p.Base())
	}
	if wait := m.rides.next.Sub(p.now()); wait > 0 && !m.unsorted() {
		return wait
	}
	poll := min(trainPoll, p.cfg.PollInterval)
	if ok, wait := m.holdLease(ctx, m.mayRideSome()); !ok {
		if wait <= 0 {
			wait = poll
		}
		m.rides.next = p.now().Add(wait)
		return wait
	}
	if !m.rides.leftChecked {
		m.rides.leftChecked = true
		m.takeBackLeftCars(ctx)
	}
	landed := m.trainTurn(ctx, m.q.all())
	if landed {
		return 0
	}
	m.sweep(ctx)
	m.dropLease(ctx)
	m.rides.next = p.now().Add(poll)
	return poll
}

// trainTurn reads the queued PRs, plans the base's train (train.Plan) and
// carries the plan out. It reports whether a car landed.
func (m *merger) trainTurn(ctx context.Context, entries []queued) (landed bool) {
	p := m.p
	waiting, reads, tip, ok := m.riders(ctx, entries)
	if !ok || (tip == "" && len(m.rides.t.Cars) == 0) {
		return false // a PR unread or undecided is not taken for gone: the next turn reads it again
	}
	m.readCarChecks(ctx)
	acts := train.Plan(m.rides.t, train.Observation{Tip: tip, Waiting: waiting, Checks: m.rides.checks,
		Failing: m.rides.failing, Reruns: m.rides.reruns, TreeDiffers: m.rides.stopped != 0, Size: p.cfg.TrainSize})
	for _, a := range acts {
		if a.Kind != train.Form && a.Kind != train.Drop {
			p.log.Info("merge train", "action", a.Kind, "pr", a.PR, "car", a.Commit, "reason", a.Reason)
		}
		if !m.carryOutTrain(ctx, a, tip, reads) {
			return false // the next turn plans again
		}
		landed = landed || a.Kind == train.Land
	}
	return landed
}

// riding reports whether the merge queue's turn one by one must leave PR
// n to the train: with trains on, it takes only the PRs the train's last
// turn found do not ride (from forks, AGit, or at a head that left the
// train for good).
func (m *merger) riding(n int) bool { return m.rides != nil && m.rides.alone[n] == "" }

// notRiding is entries without the PRs riding(): all of them while trains
// are off.
func (m *merger) notRiding(entries []queued) []queued {
	if m.rides == nil || !m.p.trainsOn() {
		return entries
	}
	var out []queued
	for _, e := range entries {
		if m.rides.alone[e.n] != "" {
			out = append(out, e)
		}
	}
	return out
}

// unsorted reports whether the queue holds a PR the train has not sorted
// yet (a rider, or one alone at the head it is queued at): the train then
// runs at once.
func (m *merger) unsorted() bool {
	for _, e := range m.q.all() {
		if !m.rides.riding[e.n] && m.rides.alone[e.n] != e.head {
			return true
		}
	}
	return false
}

// mayRideSome reports whether a queued PR may ride the train: one the
// last turn did not find merges one by one at the head it is queued at (a
// rider, or a PR not sorted yet). Only then does the pool take the train
// lease: with only PRs that merge one by one queued (forks, AGit, a head
// that left the train for good), a turn would take the lease and give it
// back, two pushes of the lease ref, every poll interval
// (TestSoloPRsTakeNoTrainLease).
func (m *merger) mayRideSome() bool {
	for _, e := range m.q.all() {
		if m.rides.alone[e.n] != e.head {
			return true
		}
	}
	return false
}

// riders reads the queued entries and finds those that ride the train:
// approved at the head read, in the queue's order; the others merge one
// by one. A PR that changed under the queue leaves it, as in a turn one by
// one. tip is the base tip the last read shows ("" with no rider).
func (m *merger) riders(ctx context.Context, entries []queued) (waiting []train.Waiting, reads map[int]forge.PR, tip string, ok bool) {
	p := m.p
	reads = map[int]forge.PR{}
	clear(m.rides.riding)
	clear(m.rides.alone)
	for _, e := range entries {
		pr, err := m.read(ctx, e.n)
		switch {
		case err != nil:
			p.log.Warn("merge train: reading the PR failed; the train waits", "pr", e.n, "err", err)
			return nil, nil, "", false
		case pr.State != "open" || pr.Merged || !m.sameHead(pr.Number, pr.HeadSHA, e.head) || pr.BaseRef != p.Base():
			m.leave(ctx, pr)
			continue
		case !pr.SameRepo(p.cfg.Repo()) || pr.HeadRef == "" || m.alone(pr.Number, pr.HeadSHA):
			m.rides.alone[pr.Number] = e.head
			continue
		}
		m.rides.riding[pr.Number] = true // decided below: one by one it is not merged meanwhile
		switch ride, err := m.mayRide(ctx, pr); {
		case err != nil:
			return nil, nil, "", false
		case !ride:
			delete(m.rides.riding, pr.Number)
			continue
		}
		reads[pr.Number] = pr
		waiting = append(waiting, train.Waiting{PR: pr.Number, Head: m.approvedHead(pr.Number, pr.HeadSHA)})
		tip = pr.BaseSHA
		m.q.holdUntil(pr.Number, p.now().Add(min(trainPoll, p.cfg.PollInterval)))
	}
	return waiting, reads, tip, true
}

// alone reports whether PR n at head merges one by one: it left the train
// at head (conflicting with the cars ahead, a branch the lease never
// matched, a possible flake), or at a head the pool's updates made from
// that one. Kept in its track (Track.TrainSolo), in the store: a relaunched
// pool does not put it on a train again at that head.
func (m *merger) alone(n int, head string) bool { return m.p.track(n).Alone(head) }

// rideAlone records that PR n at head merges one by one, for why
// (lifecycle.SoloConflict, ...).
func (m *merger) rideAlone(n int, head, why string) {
	m.p.writeTrack(n, apply(func(t lifecycle.Track) lifecycle.Track { return lifecycle.RideAlone(t, head, why) }))
}

// approvedHead is the approved head of PR n at head: the head itself, or,
// when head is the car the pool pushed to its branch to land it (a car
// of the train, or one pushed before the car was formed again), the head
// the car merges.
func (m *merger) approvedHead(n int, head string) string {
	for _, c := range m.rides.t.Cars {
		if c.PR == n && c.Commit == head {
			return c.Head
		}
	}
	if c, ok := m.pushed(n); ok && c.Commit == head {
		return c.Head
	}
	return head
}

// pushed is the car the pool pushed to PR n's branch: the one this run
// pushed (onBranch), else the one its track records as the pool's update
// (pushed by an earlier run, killed before the car landed or was taken
// back). Without it a relaunched pool took that car for the approved head:
// it formed a car of the car, whose landing was a head no approval counts
// at, and the PR was reviewed again.
func (m *merger) pushed(n int) (train.Car, bool) {
	if c, ok := m.rides.onBranch[n]; ok {
		return c, true
	}
	return recordedCar(n, m.p.track(n).Update)
}

// recordedCar is the car update u of PR n records as the pool's update of
// its approved head, if u is a car's (lifecycle.StyleTrain).
func recordedCar(n int, u lifecycle.HeadUpdate) (train.Car, bool) {
	if u.Style != lifecycle.StyleTrain || u.From == "" || u.Produced == "" {
		return train.Car{}, false
	}
	return train.Car{PR: n, Head: u.From, Parent: u.Base, Commit: u.Produced}, true
}

// sameHead reports whether PR n, read at head, is still at the head the
// queue has, queued: the same commit, or its car pushed to land it.
func (m *merger) sameHead(n int, head, queued string) bool {
	return head == queued || m.approvedHead(n, head) == queued
}

// mayRide decides the PR once more, unless it is unchanged since it was
// last found a rider: approved and green, merged next or updated first.
// Any other decision is recorded, its note posted, and the PR handed back
// to the discovery loop. An error: the PR could not be decided.
func (m *merger) mayRide(ctx context.Context, pr forge.PR) (bool, error) {
	p := m.p
	if r, ok := m.rides.decided[pr.Number]; ok && r.updated.Equal(pr.Updated) {
		return true, nil
	}
	d, t, err := p.decide(ctx, pr)
	switch {
	case err != nil:
		p.log.Warn("merge train: deciding failed; the train waits", "pr", pr.Number, "err", err)
		return false, err
	case d.Kind == lifecycle.Merge || d.Kind == lifecycle.Update:
		m.rides.decided[pr.Number] = ridden{updated: pr.Updated, d: d}
		return true, nil
	case d.Kind == lifecycle.Wait && !d.unapproved() && m.approvedHead(pr.Number, pr.HeadSHA) != pr.HeadSHA:
		return true, nil // its car is landing: the forge has not taken it in yet
	}
	delete(m.rides.decided, pr.Number)
	if c, ok := m.pushed(pr.Number); ok && c.Commit == pr.HeadSHA && d.unapproved() {
		// To be reviewed at the car (the forge found its approval
		// stale): the car is its head from now on (askCar).
		m.forgetCar(pr.Number, c.Commit)
	}
	m.say(ctx, pr, t, d.Action)
	m.handBack(pr)
	return false, nil
}

// readCarChecks reads the checks of each car not known to be green or
// failed: the required contexts of the protection must pass, and no
// check fail (lifecycle.Summarize), the pool's own status aside. A car
// whose failing checks were all cancelled stays pending: a cancelled run
// is not the car's failure, and its run again decides it. A car
// with no check reported where none is required passes after checks_grace,
// as a head does one by one.
func (m *merger) readCarChecks(ctx context.Context) {
	p := m.p
	required := lifecycle.RequiredContexts(p.currentProtection())
	for _, c := range m.rides.t.Cars {
		if m.rides.checks[c.Commit] != train.Pending {
			continue
		}
		history, err := p.forge.StatusHistory(ctx, p.cfg.Owner, p.cfg.Name, c.Commit)
		if err != nil {
			p.log.Warn("merge train: reading a car's checks failed; waiting", "pr", c.PR, "car", c.Commit, "err", err)
			return
		}
		checks := lifecycle.Checks(forgejo.WithoutContext(history, p.cfg.StatusContext))
		switch lifecycle.Summarize(checks, required) {
		case lifecycle.ChecksNone:
			if !p.now().Before(m.rides.formed[c.Commit].Add(p.cfg.ChecksGrace)) {
				m.rides.checks[c.Commit] = train.Green // no CI reported, none required: as a head one by one
			}
		case lifecycle.ChecksGreen:
			m.rides.checks[c.Commit] = train.Green
		case lifecycle.ChecksFailing:
			failing := lifecycle.Failing(checks)
			if !slices.ContainsFunc(failing, func(f lifecycle.Check) bool { return !f.Cancelled() }) {
				// A cancelled run is no failure of the car (a superseded
				// one is not even failing): it waits for a run again.
				p.log.Debug("merge train: the car's run was cancelled; waiting for it to run again", "pr", c.PR, "car", c.Commit)
				continue
			}
			m.rides.checks[c.Commit] = train.Failed
			if len(failing) > 0 {
				m.rides.failing[c.Commit] = failing[0].Context
			}
			m.rides.reruns[c.Commit] = m.rerunnable(c.Commit, failing)
		}
	}
}

// carryOutTrain carries out one action of the plan and records it in the
// train; false stops the turn's plan (a failure: the next turn plans
// again from what the forge shows).
func (m *merger) carryOutTrain(ctx context.Context, a train.Action, tip string, reads map[int]forge.PR) bool {
	r := m.rides
	switch a.Kind {
	case train.Form:
		return m.formCar(ctx, a, tip)
	case train.Land:
		if !m.landCar(ctx, reads[a.PR], m.nextCar(reads)) {
			return false
		}
	case train.Again:
		return m.rerunCar(ctx, a)
	case train.Eject:
		m.eject(ctx, a)
	case train.Stop:
		m.stopTrain(ctx)
	case train.Leave:
		m.dropCar(ctx, a.PR)
	}
	r.t = train.Apply(r.t, a, tip, "")
	return true
}

// formCar makes the car of a.PR on the last car (or the base tip) and
// pushes it to its train branch for CI. A PR that does not merge cleanly
// onto the cars ahead merges on its own.
func (m *merger) formCar(ctx context.Context, a train.Action, tip string) bool {
	p, r := m.p, m.rides
	parent := tip
	if n := len(r.t.Cars); n > 0 {
		parent = r.t.Cars[n-1].Commit
	}
	car, err := p.cars.MakeCar(ctx, a.PR, parent, a.Head)
	if errors.Is(err, clone.ErrCarConflict) {
		p.log.Info("merge train: the PR does not merge cleanly onto the cars ahead; it merges on its own", "pr", a.PR)
		m.rideAlone(a.PR, a.Head, lifecycle.SoloConflict)
		return true
	}
	if err == nil {
		err = p.cars.PushCar(ctx, trainBranch(r.t.Base, a.PR), car)
	}
	if err != nil {
		p.log.Warn("merge train: forming a car failed; the next turn tries again", "pr", a.PR, "err", err)
		return false
	}
	p.log.Info("merge train: car formed", "pr", a.PR, "car", car, "parent", parent, "cars", len(r.t.Cars)+1)
	if len(r.t.Cars) == 0 {
		p.metrics.TrainFormed()
	}
	p.metrics.CarFormed()
	r.checks[car], r.formed[car] = train.Pending, p.now()
	r.t = train.Apply(r.t, a, tip, car)
	return true
}

// landCar lands the front car: pushed to its PR's branch, leased on the
// approved head (an author's push wins, and the PR leaves the train), the
// push recorded as the pool's update (its approval carries over:
// lifecycle.StyleTrain), then the forge's merge pinned to the car. After
// the merge the base's tree must be the car's. false: not landed yet.
//
// The PR is decided again once the forge shows the car as its head, and
// its reviews are read again before the push and before each merge call
// where the decision read them a second or more before (reviewsStand): a
// request for changes filed meanwhile, or an approval withdrawn, stops the
// landing. The PR then leaves the train for the normal path, which decides
// it again, and the cars behind it are formed again.
//
// next, the car behind and its PR, is pushed to that PR's branch as soon
// as the forge has merged this one (pushAhead).
func (m *merger) landCar(ctx context.Context, pr forge.PR, next behind) bool {
	p, r := m.p, m.rides
	car := r.t.Cars[0]
	if pr.HeadSHA != car.Commit && r.onBranch[pr.Number].Commit != car.Commit {
		if !m.reviewsStand(ctx, pr, r.decided[pr.Number].d) || !m.pushCar(ctx, pr, car) {
			return false
		}
	}
	for try := 1; ; try++ {
		a, ok := m.askCar(ctx, pr, car)
		if !ok {
			return false
		}
		if a.err == nil && a.res.Outcome == forge.MergeNotReady && try < landTries && pause(ctx, m.q.pace) {
			// "Please try again later": the forge's test of the car (queued
			// behind the base's other PRs after the landing ahead) began
			// after the read that showed it tested. Wait for it here: a
			// turn of the train reads every rider first.
			p.log.Info("merge train: the forge is testing the car again; the landing waits for it", "pr", pr.Number, "try", try)
			continue
		}
		if !m.carMerged(ctx, a, car) {
			return false
		}
		m.pushAhead(ctx, next)
		m.landed(ctx, pr.Number, car)
		return true
	}
}

// behind is a car behind the front one and its PR as read.
type behind struct {
	car train.Car
	pr  forge.PR
}

// nextCar is the second car of the train and its PR as read, where it may
// be pushed ahead (pushAhead): its checks green, its PR read this turn and
// not at the car already. A zero car otherwise.
func (m *merger) nextCar(reads map[int]forge.PR) behind {
	r := m.rides
	if len(r.t.Cars) < 2 {
		return behind{}
	}
	c := r.t.Cars[1]
	pr, ok := reads[c.PR]
	if !ok || r.checks[c.Commit] != train.Green || pr.HeadSHA == c.Commit || pr.HeadRef == "" {
		return behind{}
	}
	return behind{car: c, pr: pr}
}

// pushAhead pushes the car behind the one that just landed to its PR's
// branch (pushCar: leased on its approved head, recorded as the pool's
// update, its reviews read again first) at once, before the pool settles
// the landed PR, compares the trees and runs the train's next turn (which
// reads every rider and forms the refill car). After each landing the
// forge tests every open PR of the moved base again, in one walk; a car
// pushed after its PR was taken in that walk queues it again behind the
// whole walk, and pushed at the next turn's landing, as before, it
// mostly was: each landing cost about one walk (README, "Merge trains").
//
// Not before the merge call ahead: the car then holds a PR that is not in
// the base, the forge finds the PR's content changed by the push, and
// marks its approval stale (Gitea 1.26's checkIfPRContentChanged, when it
// takes in the push before the base moves), and the approval carries
// nothing: poolbench -mode train -fail 5 saw PRs reviewed again, car
// after car.
func (m *merger) pushAhead(ctx context.Context, b behind) {
	r := m.rides
	n := b.pr.Number
	if b.car.Commit == "" || r.onBranch[n].Commit == b.car.Commit {
		return
	}
	if len(r.t.Cars) < 2 || r.t.Cars[1].Commit != b.car.Commit || b.car.Parent != r.t.Cars[0].Commit {
		return // it left the train meanwhile, or sits on another car
	}
	if m.reviewsStand(ctx, b.pr, r.decided[n].d) {
		m.pushCar(ctx, b.pr, b.car) // failed: pushed at its own landing, or it left the train
	}
}

// takeBackLeftCars puts back at its approved head the branch of every
// open PR still at a car an earlier run of the pool pushed there (its
// track records the car as the pool's update): that run was killed
// between the car's push and its landing. A car taken for the PR's
// approved head would be merged into a car of its own, a head no approval
// counts at, and the PR reviewed again; the train forms a car of the
// approved head instead. Once per run, with the train lease held; the
// push is leased on the car, so a branch moved since (the author's push,
// another pool's car) stays as it is.
func (m *merger) takeBackLeftCars(ctx context.Context) {
	p, r := m.p, m.rides
	for _, n := range p.trackedNumbers() {
		car, ok := recordedCar(n, p.track(n).Update)
		if !ok {
			continue
		}
		pr, err := m.read(ctx, n)
		if err != nil {
			p.log.Warn("merge train: reading a PR the pool had pushed a car to failed; it is not taken back", "pr", n, "err", err)
			continue
		}
		if pr.State != "open" || pr.Merged || pr.HeadSHA != car.Commit || pr.HeadRef == "" || !pr.SameRepo(p.cfg.Repo()) || pr.BaseRef != r.t.Base {
			continue
		}
		m.takeBack(ctx, pr, car)
	}
}

// takeBack puts PR pr's branch, at the car an earlier run pushed, back at
// the car's approved head, leased on the car. A lost lease (the author
// pushed meanwhile) leaves the author's branch as it is: its new head
// leaves the train. Another failure is logged; the PR's next car replaces
// this one on its branch (pushCar, leased on it).
func (m *merger) takeBack(ctx context.Context, pr forge.PR, car train.Car) {
	p, n := m.p, pr.Number
	if err := p.cars.LandCar(ctx, n, pr.HeadRef, car.Commit, car.Head); err != nil {
		p.log.Warn("merge train: taking back a car an earlier run left on the PR's branch failed; the PR's next car replaces it", "pr", n, "car", car.Commit, "err", err)
		return
	}
	p.log.Info("merge train: an earlier run of the pool left a car on the PR's branch, and stopped before it landed; the branch is at its approved head again",
		"pr", n, "car", car.Commit, "head", car.Head)
	m.forgetCar(n, car.Commit)
}

// forgetCar forgets car as on PR n's branch: in this run (onBranch) and
// as the pool's update of the PR in its track.
func (m *merger) forgetCar(n int, car string) {
	delete(m.rides.onBranch, n)
	m.p.writeTrack(n, apply(func(t lifecycle.Track) lifecycle.Track {
		if t.Update.Produced == car {
			t.Update = lifecycle.HeadUpdate{}
		}
		return t
	}))
}

// asked is a landing's merge call: the PR as read just before it, and the
// forge's answer.
type asked struct {
	pr  forge.PR
	res forge.MergeResult
	err error
}

// askCar waits until the forge shows the car as PR pr's tested head,
// decides the PR on that read and asks the forge to merge it (mergeCar).
// false: not asked; the next turn tries again, or the PR left the train.
// One that leaves at the car (reviewed again: the forge found its approval
// stale) has the car for its head from then on, not the approved head the
// car merged: a car of that head would not be what its review approved.
func (m *merger) askCar(ctx context.Context, pr forge.PR, car train.Car) (asked, bool) {
	p := m.p
	fresh, ok := m.awaitHead(ctx, pr.Number, car)
	if !ok {
		m.unseenCar(ctx, pr.Number, car)
		return asked{}, false
	}
	d, t, err := p.decide(ctx, fresh)
	switch {
	case err != nil:
		p.log.Warn("merge train: deciding the landing car failed; the next turn tries again", "pr", pr.Number, "err", err)
		return asked{}, false
	case d.Kind == lifecycle.Wait && !d.unapproved():
		p.log.Info("merge train: the landing car waits for the forge; the next turn tries again", "pr", pr.Number, "reason", d.Action.Reason)
		return asked{}, false
	case d.Kind != lifecycle.Merge:
		p.log.Info("merge train: the landing car may not merge; the PR leaves the train", "pr", pr.Number, "decision", d.Kind, "reason", d.Action.Reason)
		m.say(ctx, fresh, t, d.Action)
		m.handBack(fresh)
		m.leaveTrain(ctx, pr.Number)
		if fresh.HeadSHA == car.Commit && d.unapproved() {
			m.forgetCar(pr.Number, car.Commit)
		}
		return asked{}, false
	}
	res, err := m.mergeCar(ctx, fresh, d)
	if errors.Is(err, errReviewsChanged) {
		return asked{}, false // the next turn decides it again
	}
	return asked{pr: fresh, res: res, err: err}, true
}

// carMerged takes the forge's answer to a landing's merge call: the car
// landed (true), or why not.
func (m *merger) carMerged(ctx context.Context, a asked, car train.Car) bool {
	p, pr, res, err := m.p, a.pr, a.res, a.err
	if styleRefused(res) {
		p.noFastForward.Store(true) // trainsOn says so, once; the PR, at its car, merges one by one
		return false
	}
	if err == nil && res.Rule == forge.RuleOutdated {
		// Still behind after mergeCar's tries: the car, on the PR's
		// branch, stays the front car and the next turn tries again (a
		// base that moved re-forms it). No refusal to note or back off
		// from.
		p.log.Info("merge train: the forge still counts the car behind the base; the next turn tries again", "pr", pr.Number, "message", res.Message)
		return false
	}
	res, err = m.mergeAnswer(ctx, pr, res, err)
	switch {
	case err != nil || res.Outcome == forge.MergeNotReady || res.Rule == forge.RuleOutdated:
		// "behind": the forge had not taken in the landing ahead; the car,
		// on the PR's branch already, stays the front car
		p.log.Info("merge train: the car's merge did not go through yet; the next turn tries again", "pr", pr.Number, "outcome", res.Outcome, "rule", res.Rule, "err", err)
		return false
	case res.Outcome != forge.MergeDone && res.Outcome != forge.MergeAlready:
		m.q.remove(pr.Number)
		m.leaveTrain(ctx, pr.Number)
		return false
	}
	return true
}

// mergeCar asks the forge to merge PR pr pinned to its car. A refusal as
// behind its base is asked again at once, after queuePace, then twice as
// long each time, for landAskFor in all: the car's first parent is the
// base tip (awaitHead), and the forge has not counted the car against the
// base yet. Gitea works out how far a PR is behind just after it records
// the PR's new merge base, which awaitHead reads (services/pull, pull.go),
// so the first call after a landing push is often refused; waiting for
// the next turn of the train cost a turn's reads of every rider. Before
// each call the reviews decision d read must stand (reviewsStand), else
// errReviewsChanged.
func (m *merger) mergeCar(ctx context.Context, pr forge.PR, d decision) (forge.MergeResult, error) {
	p := m.p
	until, wait := p.now().Add(landAskFor), m.q.pace
	for {
		if !m.reviewsStand(ctx, pr, d) {
			return forge.MergeResult{}, errReviewsChanged
		}
		res, err := p.forge.Merge(ctx, p.cfg.Owner, p.cfg.Name, pr.Number, forgejo.MergeOptions{Style: trainStyle, HeadSHA: pr.HeadSHA})
		if err != nil || res.Rule != forge.RuleOutdated || !p.now().Add(wait).Before(until) || !pause(ctx, wait) {
			return res, err
		}
		wait *= 2
	}
}

// errReviewsChanged: a landing's merge was not asked, as the PR's reviews
// changed since its decision read them, or could not be read again.
var errReviewsChanged = errors.New("the reviews changed since the landing's decision read them")

// reviewsStand is the queue's reviewsHeld for a train's landing of PR pr
// on decision d: false if the reviews changed since d read them, or could
// not be read again. A PR whose reviews changed is decided again by the
// next turn of the train (riders): one whose approval no longer counts
// leaves the train there, for the normal path.
func (m *merger) reviewsStand(ctx context.Context, pr forge.PR, d decision) bool {
	held, err := m.reviewsHeld(ctx, pr, d)
	if err != nil {
		m.p.log.Warn("merge train: reading the reviews again before the landing failed; the next turn tries again", "pr", pr.Number, "err", err)
	}
	if !held {
		delete(m.rides.decided, pr.Number)
	}
	return held
}

// pushCar records the car as the pool's update of the approved head and
// pushes it to the PR's branch, leased on that head. A lost lease (the
// branch moved) takes the record back, and the PR leaves the train; so
// does any other failure of the push, until the next turn.
func (m *merger) pushCar(ctx context.Context, pr forge.PR, car train.Car) bool {
	p := m.p
	// A car formed again replaces the pool's own earlier car on the
	// branch: the push is leased on that car, and the approved head is
	// still the one both merge.
	lease := car.Head
	earlier, _ := m.pushed(pr.Number)
	again := earlier.Commit != "" && earlier.Commit == pr.HeadSHA && earlier.Head == car.Head
	if again {
		lease = earlier.Commit
	}
	p.writeTrack(pr.Number, apply(func(t lifecycle.Track) lifecycle.Track {
		u := lifecycle.HeadUpdate{From: car.Head, Base: car.Parent, Produced: car.Commit,
			OldMergeBase: pr.MergeBase, Style: lifecycle.StyleTrain, At: p.now()}
		if again && t.Update.From == car.Head {
			t.Update, t.State = u, lifecycle.Updating // the head is the earlier car, made from the same approved head
			return t
		}
		return lifecycle.Updated(t, u)
	}))
	err := p.cars.LandCar(ctx, pr.Number, pr.HeadRef, lease, car.Commit)
	if err == nil {
		p.log.Info("merge train: car pushed to the PR's branch", "pr", pr.Number, "branch", pr.HeadRef, "car", car.Commit)
		m.rides.onBranch[pr.Number] = car
		return true
	}
	p.writeTrack(pr.Number, apply(func(t lifecycle.Track) lifecycle.Track {
		if t.Update.Produced == car.Commit {
			t.Update = lifecycle.HeadUpdate{}
		}
		return t
	}))
	if errors.Is(err, clone.ErrLeaseLost) {
		p.log.Info("merge train: the PR's branch moved since its approval; it leaves the train for a review of its new head", "pr", pr.Number)
		m.rideAlone(pr.Number, car.Head, lifecycle.SoloLease) // its branch is not where the forge says (AGit): one by one
		m.handBack(pr)
		m.leaveTrain(ctx, pr.Number)
		return false
	}
	p.log.Warn("merge train: pushing the car to the PR's branch failed; the next turn tries again", "pr", pr.Number, "err", err)
	return false
}

// awaitHead reads PR n until the forge shows car as its head and has
// tested it against the base: mergeable, with the car's first parent as
// its merge base (a mergeable flag read just after the landing ahead can
// be the one from before it, and the merge is then refused as behind),
// every queuePace, for trainLandFor at most (50 poll intervals where
// that is less: the tests' fakes show a pushed car at once).
func (m *merger) awaitHead(ctx context.Context, n int, car train.Car) (forge.PR, bool) {
	p := m.p
	until := p.now().Add(min(trainLandFor, 50*p.cfg.PollInterval))
	for {
		fresh, err := m.read(ctx, n)
		switch {
		case err == nil && fresh.HeadSHA == car.Commit && fresh.Mergeable && (fresh.MergeBase == "" || fresh.MergeBase == car.Parent):
			return fresh, true
		case err == nil && (fresh.State != "open" || fresh.Merged):
			return fresh, true // decided below: merged or closed
		case ctx.Err() != nil || !p.now().Before(until):
			p.log.Info("merge train: the forge does not show the car as the PR's tested head yet; the next turn reads it again", "pr", n, "err", err)
			return forge.PR{}, false
		}
		pause(ctx, m.q.pace)
	}
}

// pause waits d, or until ctx ends; false if it ended.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// unseenCar counts a landing whose car the forge did not show as the PR's
// tested head (its head, mergeable, on the car's parent) within
// trainLandFor. After trainUnseen of them the forge is taken not to be
// testing it at all (TestTwoPoolsRunOneTrainOnTheForge in CI: pool-b's
// front car stayed unmergeable on the PR's branch for 5 minutes, the base
// unchanged, and the pool read it again every 30 s until "no progress").
// A push makes the forge test the PR again: the whole train is formed
// again on the base tip, and the new front car is pushed over the old one
// (leased on it). If the forge does not show that one either, the PR
// leaves the train and merges one by one, where a PR the forge reads not
// mergeable waits, and the base moved by the cars behind makes the forge
// test it again. No note: the PR is not at fault.
func (m *merger) unseenCar(ctx context.Context, n int, car train.Car) {
	p, r := m.p, m.rides
	r.unseen[car.Commit]++
	if r.unseen[car.Commit] < trainUnseen {
		return
	}
	delete(r.unseen, car.Commit)
	if r.reformed[n] != car.Head {
		r.reformed[n] = car.Head
		p.log.Info("merge train: the forge has not shown the car as the PR's tested head after several reads; the train is formed again and the car pushed anew",
			"pr", n, "car", car.Commit, "reads", trainUnseen)
		r.t = train.Train{Base: r.t.Base}
		return
	}
	p.log.Info("merge train: the forge has not shown the PR's car as its tested head, formed twice; the PR merges one by one", "pr", n, "car", car.Commit)
	m.rideAlone(n, car.Head, lifecycle.SoloUntested)
	m.leaveTrain(ctx, n)
	delete(r.riding, n)
	r.alone[n] = m.q.head(n)
	m.q.unhold(n)
}

// landed settles a PR whose car the forge merged, takes the car off the
// train, and compares the base's tree with the car's: a difference stops
// the train at the next plan.
func (m *merger) landed(ctx context.Context, n int, car train.Car) {
	p, r := m.p, m.rides
	m.q.remove(n)
	delete(r.onBranch, n)
	delete(r.reformed, n)
	m.settle(ctx, n)
	same, tip, err := p.cars.BaseTreeIs(ctx, car.Commit)
	switch {
	case err != nil:
		p.log.Warn("merge train: comparing the landed tree with the car's failed", "pr", n, "err", err)
	case !same:
		p.log.Warn("merge train: the base's tree after the landing is not the car's; the train stops", "pr", n, "car", car.Commit, "tip", tip)
		r.stopped, r.stoppedCar, r.stoppedTip = n, car.Commit, tip
	default:
		p.log.Info("merge train: car landed; the base's tree is the car's", "pr", n, "car", car.Commit, "tip", tip)
	}
	r.swept = append(r.swept, n)
}

// sweep deletes the train branches of the cars that landed. It runs when
// a turn lands nothing (a deletion is a push the forge runs its hooks for,
// and between two landings it delayed the next) and when the pool stops:
// no later run knows those branches.
func (m *merger) sweep(ctx context.Context) {
	if m.rides == nil {
		return
	}
	for _, n := range m.rides.swept {
		m.dropCar(ctx, n)
	}
	m.rides.swept = nil
}

// eject takes a PR whose car failed off the train, with one note naming
// the failing check. At this head it is merged no more (lifecycle's
// Track.TrainLeft, kept in the store): brought up to date one by one it
// would be the tree its car tested, and cost a CI run and the notes of a
// failing PR for nothing. Where a car behind it passed (a flake, maybe),
// it merges on its own instead, once: after its own checks on the
// updated branch (Track.TrainSolo, kept in the store too); unless the
// forge ran its car's failed jobs again and they failed again, on the same
// tree (train.Reran): then, as for any failure, not at this head.
func (m *merger) eject(ctx context.Context, a train.Action) {
	p := m.p
	head := a.Commit
	for _, c := range m.rides.t.Cars {
		if c.PR == a.PR {
			head = c.Head
		}
	}
	if a.Flake && a.Rerun != train.Reran {
		m.rideAlone(a.PR, head, lifecycle.SoloFlake)
	} else {
		p.writeTrack(a.PR, apply(func(t lifecycle.Track) lifecycle.Track {
			t.TrainLeft = head
			return t
		}))
	}
	p.metrics.CarEjected()
	body := texts.TrainEjectedBody(p.Base(), head, a.Check, a.Flake, a.Rerun)
	if err := p.noteOnce(ctx, a.PR, body, func(b string) bool { return texts.NotedAt(b, forge.MarkTrain, head) }); err != nil {
		p.log.Warn("merge train: posting the ejection note failed", "pr", a.PR, "err", err)
	}
	delete(m.rides.riding, a.PR)
	m.rides.alone[a.PR] = m.q.head(a.PR)
	m.q.unhold(a.PR)
	m.dropCar(ctx, a.PR)
}

// rerunnable says whether the forge may run a failed car's checks again:
// once per car (reran), where every failing check (a cancelled one aside,
// which is no failure) comes from an Actions run of the repository's
// (forge.ActionsRun), and the forge has the endpoint as far as the pool
// knows. A car run again already failed again (Reran) only if a failing
// check is newer than its statuses were when the forge took the rerun:
// Gitea answers 201 to a rerun of a run with no failed job, and runs
// nothing (services/actions/rerun.go: no job, no check; seen on the test
// forge), so a failure that is still the old one is no rerun's.
func (m *merger) rerunnable(car string, failing []lifecycle.Check) train.Rerun {
	p := m.p
	if since, ok := m.rides.reran[car]; ok {
		if slices.ContainsFunc(failing, func(f lifecycle.Check) bool { return !f.Cancelled() && !f.Superseded && f.ID > since }) {
			return train.Reran
		}
		return train.RerunRefused
	}
	if _, ok := failedRuns(failing, p.cfg.Owner, p.cfg.Name); !ok {
		return train.NoRerun
	}
	if p.reruns == nil || p.noRerun.Load() {
		return train.NoEndpoint
	}
	return train.MayRerun
}

// failedRuns are the Actions runs of owner/repo that reported the failing
// checks (a cancelled one aside); false if one came from elsewhere (an
// external CI) or none failed.
func failedRuns(failing []lifecycle.Check, owner, repo string) ([]int64, bool) {
	var runs []int64
	for _, f := range failing {
		if f.Cancelled() || f.Superseded {
			continue
		}
		run, ok := forge.ActionsRun(f.URL, owner, repo)
		if !ok {
			return nil, false
		}
		if !slices.Contains(runs, run) {
			runs = append(runs, run)
		}
	}
	return runs, len(runs) > 0
}

// rerunCar asks the forge to run the failed jobs of the runs behind a
// car's failing checks again (train.Again): the car failed where a car
// behind it, which holds its PR, passed. It reads the car's checks first:
// Gitea runs again only a run that is done, so while a check of those runs
// is pending the car waits, and it is asked at a later turn. Once the
// forge has taken the rerun (Gitea then reports the jobs pending on the
// car at once), the car waits for its checks again; it is not asked again
// (reran). A forge without the endpoint (Forgejo: 404 or 405) is learned
// once; it, a refusal or an error sends the car to its ejection at the
// next turn, the note saying so. false: the turn's plan stops.
func (m *merger) rerunCar(ctx context.Context, a train.Action) bool {
	p, r := m.p, m.rides
	history, err := p.forge.StatusHistory(ctx, p.cfg.Owner, p.cfg.Name, a.Commit)
	if err != nil {
		p.log.Warn("merge train: reading a car's checks before running it again failed; the next turn tries again", "pr", a.PR, "car", a.Commit, "err", err)
		return false
	}
	checks := lifecycle.Checks(forgejo.WithoutContext(history, p.cfg.StatusContext))
	failing := lifecycle.Failing(checks)
	if !slices.ContainsFunc(failing, func(f lifecycle.Check) bool { return !f.Cancelled() && !f.Superseded }) {
		r.checks[a.Commit] = train.Pending // run again meanwhile (by someone on the forge): read again
		return true
	}
	runs, ok := failedRuns(failing, p.cfg.Owner, p.cfg.Name)
	if !ok {
		r.reruns[a.Commit] = train.NoRerun
		return false
	}
	for _, c := range checks {
		if run, ok := forge.ActionsRun(c.URL, p.cfg.Owner, p.cfg.Name); ok && c.Pending() && slices.Contains(runs, run) {
			p.log.Debug("merge train: a job of the failed car's run still runs; it runs again once done", "pr", a.PR, "car", a.Commit, "run", run)
			return true
		}
	}
	for _, run := range runs {
		if slices.Contains(r.asked[a.Commit], run) {
			continue
		}
		res, err := p.reruns.RerunFailedJobs(ctx, p.cfg.Owner, p.cfg.Name, run)
		switch {
		case err == nil && res.Outcome == forge.RerunStarted:
			r.asked[a.Commit] = append(r.asked[a.Commit], run)
			continue
		case err == nil && res.Outcome == forge.RerunNotDone:
			p.log.Debug("merge train: the forge runs the failed car's run again only once done; the next turn asks again", "pr", a.PR, "run", run)
			return true
		case err == nil && res.Outcome == forge.RerunNoEndpoint:
			if !p.noRerun.Swap(true) {
				p.log.Info("merge train: the forge has no endpoint to run an Actions run again (Forgejo; Gitea before 1.26): a car that fails "+
					"where a car behind it passed is ejected, the evidence in its note", "status", res.Status)
			}
			r.reruns[a.Commit] = train.NoEndpoint
		default:
			p.log.Warn("merge train: the forge did not run the failed car's jobs again; the PR leaves the train", "pr", a.PR, "run", run,
				"status", res.Status, "message", res.Message, "err", err)
			r.reruns[a.Commit] = train.RerunRefused
		}
		return false
	}
	p.log.Info("merge train: the car failed where a car behind it passed; the forge runs its failed jobs again, once", "pr", a.PR, "car", a.Commit, "runs", runs, "check", a.Check)
	var newest int64
	for _, st := range history {
		newest = max(newest, st.ID)
	}
	r.reran[a.Commit] = newest
	r.checks[a.Commit] = train.Pending
	delete(r.failing, a.Commit)
	delete(r.reruns, a.Commit)
	return true
}

// stopTrain says on the PR whose landing left another tree than its car's
// that the train stopped; every car is formed again.
func (m *merger) stopTrain(ctx context.Context) {
	p, r := m.p, m.rides
	if _, err := p.comment(ctx, r.stopped, texts.TrainStoppedBody(p.Base(), r.stoppedCar, r.stoppedTip)); err != nil {
		p.log.Warn("merge train: posting the stop note failed", "pr", r.stopped, "err", err)
	}
	r.stopped, r.stoppedCar, r.stoppedTip = 0, "", ""
}

// leaveTrain takes PR n's car off the train now; the next plan re-forms
// the cars behind it.
func (m *merger) leaveTrain(ctx context.Context, n int) {
	m.rides.t = train.Apply(m.rides.t, train.Action{Kind: train.Leave, PR: n}, "", "")
	m.dropCar(ctx, n)
}

// dropCar deletes PR n's train branch; a failure leaves a branch of the
// pool's own behind, which the next car of n replaces.
func (m *merger) dropCar(ctx context.Context, n int) {
	if err := m.p.cars.DeleteCar(ctx, trainBranch(m.rides.t.Base, n)); err != nil {
		m.p.log.Warn("merge train: deleting a train branch failed", "pr", n, "err", err)
	}
}

// holdUntil has entry n read again no sooner than at: a rider waits for
// its car's CI, at the train's pace.
func (q *mergeQueue) holdUntil(n int, at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.entries[n]; ok {
		e.tried = true
		e.notBefore = at
	}
}

// showTrain records the train's cars, front car first, for the status
// page and the commit status (car), after each turn of the train.
func (q *mergeQueue) showTrain(cars []train.Car) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.cars = q.cars[:0]
	for _, c := range cars {
		q.cars = append(q.cars, c.PR)
	}
}

// car says which car of the base's train PR n is (1 the front car), of
// how many, and whether it rides it.
func (q *mergeQueue) car(n int) (car, cars int, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if i := slices.Index(q.cars, n); i >= 0 {
		return i + 1, len(q.cars), true
	}
	return 0, 0, false
}

// head is the head entry n is queued at, "" if it is not queued.
func (q *mergeQueue) head(n int) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.entries[n]; ok {
		return e.head
	}
	return ""
}

// unhold has entry n read at once: it merges on its own now.
func (q *mergeQueue) unhold(n int) { q.holdUntil(n, time.Time{}) }

// all returns every entry, oldest first, due or not: the train plans with
// every PR waiting.
func (q *mergeQueue) all() []queued {
	q.mu.Lock()
	var out []queued
	for _, e := range q.entries {
		out = append(out, *e)
	}
	q.mu.Unlock()
	slices.SortFunc(out, func(a, b queued) int {
		if c := a.since.Compare(b.since); c != 0 {
			return c
		}
		return a.n - b.n
	})
	return out
}
