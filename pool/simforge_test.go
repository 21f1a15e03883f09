package pool

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"pool/claims"
	"pool/forge"
	"pool/forgejo"
	"pool/statuspage"
)

// simForge is the simulation's forge as the pools see it: the fake forge's
// state behind faults drawn at random (an answer refused with a 5xx before
// the call, or lost after a write was made), with every request counted per
// PR and hour and every effect that an invariant judges recorded as it
// happens.
type simForge struct {
	f *fakeForge

	mu     sync.Mutex // guards the fields below
	rng    *rand.Rand
	faults float64 // the share of requests answered 502, half of writes after they were made
	// refuse answers the merges of these PRs so (a hook's 409, a 405 rule)
	// until the world takes it back.
	refuse   map[int]forge.MergeResult
	requests map[prHour]int
	ops      map[prHour]map[string]int // the requests by kind
	// refusedReqs counts a pool's requests naming a PR while the forge
	// refuses its merges and that pool's merge of its head was first
	// refused an hour or more before: the pool knows, its back-off has
	// grown past the poll's first doublings, and nothing it reads changes
	// that but the PR, its checks, the base or the protection.
	refusedReqs map[prHour]int
	refusedOps  map[prHour]map[string]int
	refusedSeen map[simPoolPR]simRefusal
	notes       []simNote
	updated     map[string]string     // a head a pool's update made: the head it updated
	acted       map[int]time.Time     // when a pool last posted, updated or merged on each PR
	waits       map[int]int           // how many times each PR was reopened or pushed: a new wait each
	holds       map[simHead]string    // the heads a pool's note says wait (blocked, withheld, conflict, no review): the note's kind
	claimed     map[simHead]time.Time // when a claim on each head was last posted or renewed
	// moved is when each PR's base or its maintainer edits last changed: a
	// pool that read the PR just before may act on what it read.
	moved map[int]time.Time
	// own holds the pools' own commit statuses (commitstatus.Publisher),
	// per head, oldest first: the forge's statuses of the head besides
	// the CI's. A write whose description differs from the head's last one
	// is the pool's word on its PR (acted).
	own map[string][]forge.Status
	// statusWrites counts the pools' status writes.
	statusWrites int
	// updates counts the pools' updates; editsAsked the fork PRs whose
	// author allowed maintainer edits after a pool's note asked.
	updates, editsAsked int
	broken              []string         // invariants broken inside a call
	trace               []string         // the last steps and effects
	prTrace             map[int][]string // the last steps and effects naming each PR
	start               time.Time
}

// simPoolKey carries the id of the pool a call comes from.
type simPoolKey struct{}

func simPoolOf(ctx context.Context) string {
	id, _ := ctx.Value(simPoolKey{}).(string)
	return id
}

// short is a fake commit id's readable name.
func short(sha string) string {
	b, err := hex.DecodeString(sha)
	if err != nil {
		return sha
	}
	return string(b)
}

// logLocked adds a line to the trace, which keeps the last 400. Callers
// hold s.mu.
func (s *simForge) logLocked(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	stamped := fmt.Sprintf("%8s ", time.Since(s.start).Round(time.Second)) + line
	s.trace = append(s.trace, stamped)
	if len(s.trace) > 400 {
		s.trace = s.trace[len(s.trace)-400:]
	}
	var n int
	if _, err := fmt.Sscanf(line, "#%d", &n); err == nil {
		if s.prTrace == nil {
			s.prTrace = map[int][]string{}
		}
		steps := append(s.prTrace[n], stamped)
		if len(steps) > 100 {
			steps = steps[len(steps)-100:]
		}
		s.prTrace[n] = steps
	}
}

// stepsOn are the last steps that named the PR a broken invariant names
// first ("#N ..."): the whole trace may have lost them, and a failure's
// output may be cut before them.
func (s *simForge) stepsOn(broken string) string {
	var n int
	if _, err := fmt.Sscanf(broken, "#%d", &n); err != nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("the last %d steps on #%d:\n%s", len(s.prTrace[n]), n, strings.Join(s.prTrace[n], "\n"))
}

// simPoolPR is one pool's view of one PR.
type simPoolPR struct {
	pool string
	n    int
}

// simRefusal is the head at which a pool's merge of a PR was refused, and
// when it first was.
type simRefusal struct {
	head  string
	since time.Time
}

type prHour struct {
	pool string
	n    int // 0: a request of the repository, no PR's
	hour int64
}

// simNote is a comment a pool posted, with the PR's head when it did.
type simNote struct {
	id    int64
	epoch int    // the PR's waits before (simForge.waits)
	by    string // the pool's id
	n     int
	head  string
	at    time.Time
	body  string
	kind  string // noteKind(body), read once: the checks read every note after every step
	claim string // the head a claim note claims, or ""
	// active is when a claim note was posted or last renewed: a claim
	// whose life (simClaimTTL) has ended since holds nothing
	active time.Time
}

func newSimForge(f *fakeForge, seed uint64, faults float64) *simForge {
	return &simForge{f: f, rng: rand.New(rand.NewPCG(seed, 0x5eed)), faults: faults,
		refuse: map[int]forge.MergeResult{}, start: time.Now(), requests: map[prHour]int{}, ops: map[prHour]map[string]int{},
		refusedReqs: map[prHour]int{}, refusedOps: map[prHour]map[string]int{}, refusedSeen: map[simPoolPR]simRefusal{}, updated: map[string]string{},
		acted: map[int]time.Time{}, waits: map[int]int{}, holds: map[simHead]string{}, claimed: map[simHead]time.Time{}, moved: map[int]time.Time{},
		own: map[string][]forge.Status{}}
}

// poolCaller names the pool's function that made a forge request (the
// first caller outside the test files), so that a rate the invariants
// refuse says which of the pool's paths made the requests.
func poolCaller() string {
	pcs := make([]uintptr, 16)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if !strings.HasSuffix(f.File, "_test.go") {
			_, name, _ := strings.Cut(f.Function[strings.LastIndex(f.Function, "/")+1:], ".")
			return name
		}
		if !more {
			return "?"
		}
	}
}

// call counts a request for PR n (0: the repository's), draws a fault
// that refuses it before it is made, and draws its slowness: one request
// in simSlow is answered 1 to 60 seconds late (a busy forge).
func (s *simForge) call(ctx context.Context, op string, n int) error {
	s.mu.Lock()
	k := prHour{simPoolOf(ctx), n, time.Now().Unix() / 3600}
	s.requests[k]++
	if s.ops[k] == nil {
		s.ops[k] = map[string]int{}
	}
	by := op + " by " + poolCaller()
	s.ops[k][by]++
	if s.knownRefusedLocked(k.pool, n) {
		s.refusedReqs[k]++
		if s.refusedOps[k] == nil {
			s.refusedOps[k] = map[string]int{}
		}
		s.refusedOps[k][by]++
	}
	var err error
	if s.rng.Float64() < s.faults {
		err = &forgejo.Error{Op: op, Status: 502, Retryable: true, Err: errors.New("simulated bad gateway")}
		if op != "statuses" && op != "changed" && op != "list" {
			s.logLocked("#%d %s: %s answered 502", n, simPoolOf(ctx), op)
		}
	}
	var slow time.Duration
	if s.rng.IntN(simSlow) == 0 {
		slow = time.Duration(1+s.rng.IntN(60)) * time.Second
	}
	s.mu.Unlock()
	if slow > 0 {
		select {
		case <-time.After(slow):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

// knownRefusedLocked: the forge refuses PR n's merges, and pool's merge of
// its current head was first refused an hour or more ago. Callers hold
// s.mu.
func (s *simForge) knownRefusedLocked(pool string, n int) bool {
	r, seen := s.refusedSeen[simPoolPR{pool, n}]
	if _, refused := s.refuse[n]; !seen || !refused || n == 0 || time.Since(r.since) < time.Hour {
		return false
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	pr, ok := s.f.prs[n]
	return ok && pr.HeadSHA == r.head && pr.State == "open"
}

// lost draws whether the answer of a write that was made is lost.
func (s *simForge) lost(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rng.Float64() < s.faults/2 {
		s.logLocked("the answer of a %s was lost", op)
		return &forgejo.Error{Op: op, Status: 502, Retryable: true, Err: errors.New("simulated lost answer")}
	}
	return nil
}

func (s *simForge) Me(ctx context.Context) (string, error) {
	if err := s.call(ctx, "me", 0); err != nil {
		return "", err
	}
	return s.f.Me(ctx)
}

func (s *simForge) Repository(ctx context.Context, o, r string) (forge.Repository, error) {
	if err := s.call(ctx, "repo", 0); err != nil {
		return forge.Repository{}, err
	}
	return s.f.Repository(ctx, o, r)
}

func (s *simForge) OpenPRs(ctx context.Context, o, r string) ([]forge.PR, error) {
	if err := s.call(ctx, "list", 0); err != nil {
		return nil, err
	}
	prs, err := s.f.OpenPRs(ctx, o, r)
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	for i := range prs { // as the forge's list shows them, and its reads (fakeForge.PR)
		prs[i].Mergeable = prs[i].Mergeable && !s.f.checking()
		prs[i].BaseSHA = s.f.base
	}
	return prs, err
}

func (s *simForge) ChangedPRs(ctx context.Context, o, r string, since time.Time) ([]forgejo.PRChange, time.Time, error) {
	if err := s.call(ctx, "changed", 0); err != nil {
		return nil, time.Time{}, err
	}
	return s.f.ChangedPRs(ctx, o, r, since)
}

func (s *simForge) PR(ctx context.Context, o, r string, n int) (forge.PR, error) {
	if err := s.call(ctx, "pr", n); err != nil {
		return forge.PR{}, err
	}
	return s.f.PR(ctx, o, r, n)
}

func (s *simForge) Comments(ctx context.Context, o, r string, n int) ([]forge.Comment, error) {
	if err := s.call(ctx, "comments", n); err != nil {
		return nil, err
	}
	return s.f.Comments(ctx, o, r, n)
}

func (s *simForge) PostComment(ctx context.Context, o, r string, n int, body string) (forge.Comment, error) {
	if err := s.call(ctx, "comment", n); err != nil {
		return forge.Comment{}, err
	}
	c, err := s.f.PostComment(ctx, o, r, n, body)
	if err != nil {
		return c, err
	}
	s.f.mu.Lock()
	head := ""
	if pr, ok := s.f.prs[n]; ok {
		head = pr.HeadSHA
	}
	s.f.mu.Unlock()
	at := head
	if marked, ok := markedHead(body); ok {
		// the head the note is about: a pool that decided on one head may
		// post after the PR moved on (seed 1 in a CI run: a note posted 2 s
		// after a push back to pr-41-2 read as a second note there)
		head = marked
	}
	s.mu.Lock()
	nt := simNote{id: c.ID, epoch: s.waits[n], by: simPoolOf(ctx), n: n, head: head, at: time.Now(), body: body, kind: noteKind(body)}
	if cl, ok := claims.Parse(forge.Comment{Body: body}); ok {
		nt.claim, nt.active = cl.SHA, nt.at
	}
	s.notes = append(s.notes, nt)
	if at != head {
		s.logLocked("#%d %s noted %q at %s, the PR at %s", n, simPoolOf(ctx), nt.kind, short(head), short(at))
	} else {
		s.logLocked("#%d %s noted %q at %s", n, simPoolOf(ctx), nt.kind, short(head))
	}
	s.acted[n] = time.Now()
	s.noteClaim(n, body)
	switch kind, _, _ := strings.Cut(nt.kind, ":"); kind {
	case forge.MarkBlocked, forge.MarkWithheld, forge.MarkConflict, forge.MarkNoReview:
		s.holds[simHead{n, head}] = nt.kind
	}
	s.mu.Unlock()
	return c, s.lost("comment")
}

func (s *simForge) EditComment(ctx context.Context, o, r string, id int64, body string) (forge.Comment, error) {
	if err := s.call(ctx, "edit comment", 0); err != nil {
		return forge.Comment{}, err
	}
	c, err := s.f.EditComment(ctx, o, r, id, body)
	if err != nil {
		return c, err
	}
	s.mu.Lock()
	for i, nt := range s.notes {
		if nt.id == id {
			s.noteClaim(nt.n, body)
			s.notes[i].active = time.Now()
		}
	}
	s.mu.Unlock()
	return c, s.lost("edit comment")
}

func (s *simForge) DeleteComment(ctx context.Context, o, r string, id int64) error {
	if err := s.call(ctx, "delete comment", 0); err != nil {
		return err
	}
	if err := s.f.DeleteComment(ctx, o, r, id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, nt := range s.notes {
		if nt.id == id {
			s.logLocked("#%d %s took back %q", nt.n, simPoolOf(ctx), nt.kind)
			s.notes = slices.Delete(s.notes, i, i+1)
			break
		}
	}
	return nil
}

func (s *simForge) Reviews(ctx context.Context, o, r string, n int) ([]forge.Review, error) {
	if err := s.call(ctx, "reviews", n); err != nil {
		return nil, err
	}
	return s.f.Reviews(ctx, o, r, n)
}

func (s *simForge) StatusHistory(ctx context.Context, o, r, sha string) ([]forge.Status, error) {
	if err := s.call(ctx, "statuses", s.prOf(sha)); err != nil {
		return nil, err
	}
	out, err := s.f.StatusHistory(ctx, o, r, sha)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(out, s.own[sha]...), nil
}

// PostStatus records a pool's commit status on sha (commitstatus's
// write). A description that differs from the last one on the head says
// anew why its PR waits: the pool's word on the PR, as a note is.
func (s *simForge) PostStatus(ctx context.Context, o, r, sha string, st forgejo.NewStatus) error {
	n := s.prOf(sha)
	if err := s.call(ctx, "status", n); err != nil {
		return err
	}
	s.f.mu.Lock()
	s.f.nextID++
	id := s.f.nextID
	s.f.mu.Unlock()
	s.mu.Lock()
	prev := ""
	if h := s.own[sha]; len(h) > 0 {
		prev = h[len(h)-1].Description
	}
	s.own[sha] = append(s.own[sha], forge.Status{ID: id, Context: st.Context, State: st.State, Description: st.Description,
		TargetURL: st.TargetURL, Created: time.Now()})
	s.statusWrites++
	if st.Description != prev && n > 0 {
		s.acted[n] = time.Now()
		s.logLocked("#%d %s status %s %q at %s", n, simPoolOf(ctx), st.State, st.Description, short(sha))
	}
	s.mu.Unlock()
	return s.lost("status")
}

// standsBy records, for each PR of a pool's status st whose head shows
// already the description the pool's publisher would write (it writes
// nothing then), that the pool stands by its word on the PR: a PR
// reopened at a head whose status still says why it waits is not silent
// (seed 35 at 10 days: #55, a fork PR behind its base that the pool may
// not update, reopened at the head noted and described before its
// closing). The description is the one commitstatus.Publisher wants.
func (s *simForge) standsBy(st statuspage.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pr := range st.PRs {
		want := pr.Next
		if pr.Commit != "" {
			want = pr.Commit
		}
		h := s.own[pr.Head]
		if pr.Number > 0 && pr.Head != "" && !pr.Done && len(h) > 0 && h[len(h)-1].Description == want {
			s.acted[pr.Number] = time.Now()
		}
	}
}

// prOf is the open PR whose head is sha, for the request count; 0 if none.
func (s *simForge) prOf(sha string) int {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	for n, pr := range s.f.prs {
		if pr.HeadSHA == sha {
			return n
		}
	}
	return 0
}

func (s *simForge) OpenDependencies(ctx context.Context, o, r string, n int) ([]string, error) {
	if err := s.call(ctx, "dependencies", n); err != nil {
		return nil, err
	}
	return s.f.OpenDependencies(ctx, o, r, n)
}

func (s *simForge) Protection(ctx context.Context, o, r, b string) (forge.Protection, error) {
	if err := s.call(ctx, "protection", 0); err != nil {
		return forge.Protection{}, err
	}
	return s.f.Protection(ctx, o, r, b)
}

func (s *simForge) Permission(ctx context.Context, o, r, account string) (string, error) {
	if err := s.call(ctx, "permission", 0); err != nil {
		return "", err
	}
	return s.f.Permission(ctx, o, r, account)
}

func (s *simForge) IsCollaborator(ctx context.Context, o, r, account string) (bool, error) {
	if err := s.call(ctx, "is collaborator", 0); err != nil {
		return false, err
	}
	return s.f.IsCollaborator(ctx, o, r, account)
}

// Merge judges the merge as the forge makes it: the head it merges must
// carry a counted approval (its own, or one of the head a pool's update
// made it from) and green required checks. The approval is judged on the
// reviews filed before the call was sent: one filed while the call is in
// flight (answered late, simSlow) or at its very instant is the forge's to
// judge (block_on_rejected_reviews), as no client can know of it.
func (s *simForge) Merge(ctx context.Context, o, r string, n int, opt forgejo.MergeOptions) (forge.MergeResult, error) {
	sent := time.Now()
	if err := s.call(ctx, "merge", n); err != nil {
		return forge.MergeResult{}, err
	}
	s.mu.Lock()
	refusal, refused := s.refuse[n]
	s.mu.Unlock()
	if refused {
		s.f.mu.Lock()
		s.f.calls["merge"]++
		s.f.record("#%d: merge refused %d", n, refusal.Status)
		s.f.mu.Unlock()
		s.mu.Lock()
		s.logLocked("#%d merge by %s refused %d", n, simPoolOf(ctx), refusal.Status)
		if k := (simPoolPR{simPoolOf(ctx), n}); s.refusedSeen[k].head != opt.HeadSHA {
			s.refusedSeen[k] = simRefusal{head: opt.HeadSHA, since: time.Now()}
		}
		s.mu.Unlock()
		return refusal, serverError("merge", refusal.Status)
	}
	s.mu.Lock()
	s.f.mu.Lock()
	approved, green := s.approvedAtLocked(n, opt.HeadSHA, sent), s.greenLocked(opt.HeadSHA)
	base := s.f.prs[n].BaseRef
	s.f.mu.Unlock()
	s.mu.Unlock()
	res, err := s.f.Merge(ctx, o, r, n, opt)
	if err == nil && (res.Outcome == forge.MergeDone || s.f.isMerged(n)) {
		s.mu.Lock()
		s.acted[n] = time.Now()
		s.logLocked("#%d merged by %s at %s", n, simPoolOf(ctx), short(opt.HeadSHA))
		if !approved || !green {
			s.broken = append(s.broken, fmt.Sprintf("#%d merged at %s: counted approval %v, required checks green %v", n, short(opt.HeadSHA), approved, green))
		}
		if base != "main" && time.Since(s.moved[n]) > time.Minute {
			s.broken = append(s.broken, fmt.Sprintf("#%d merged at %s into %s, retargeted %s before", n, short(opt.HeadSHA), base, time.Since(s.moved[n]).Round(time.Second)))
		}
		s.mu.Unlock()
		if err := s.lost("merge"); err != nil {
			return forge.MergeResult{}, err
		}
	}
	return res, err
}

// approvedLocked: the last counted review of head, or of a head a pool's
// update made it from, approves. Callers hold s.mu and s.f.mu.
func (s *simForge) approvedLocked(n int, head string) bool {
	return simVerdict(s.f.reviews[n], s.chainLocked(head)) == forge.ReviewApproved
}

// approvedAtLocked is approvedLocked on the reviews submitted by the
// instant at, with or without those of that very instant: the clock
// stands still while the goroutines run, so a review filed at the instant
// of the call may come before or after it. Callers hold s.mu and s.f.mu.
func (s *simForge) approvedAtLocked(n int, head string, at time.Time) bool {
	chain := s.chainLocked(head)
	by := slices.DeleteFunc(slices.Clone(s.f.reviews[n]), func(rv forge.Review) bool { return rv.Submitted.After(at) })
	before := slices.DeleteFunc(slices.Clone(by), func(rv forge.Review) bool { return !rv.Submitted.Before(at) })
	return simVerdict(by, chain) == forge.ReviewApproved || simVerdict(before, chain) == forge.ReviewApproved
}

// chainLocked is head and the heads a pool's updates made it from.
// Callers hold s.mu.
func (s *simForge) chainLocked(head string) map[string]bool {
	chain := map[string]bool{}
	for h := head; h != "" && !chain[h]; h = s.updated[h] {
		chain[h] = true
	}
	return chain
}

// simVerdict is what the counted reviews of the heads in chain say: each
// account's last one counts; a request for changes outweighs approvals.
func simVerdict(reviews []forge.Review, chain map[string]bool) string {
	last := map[string]string{}
	for _, rv := range reviews {
		if chain[rv.CommitID] && simCounts(rv) && (rv.State == forge.ReviewApproved || rv.State == forge.ReviewRequestChanges) {
			last[rv.Author] = rv.State
		}
	}
	verdict := ""
	for _, state := range last {
		if verdict != forge.ReviewRequestChanges {
			verdict = state
		}
	}
	return verdict
}

// simCounts: the reviews whose approval counts (reviewers.humans).
func simCounts(rv forge.Review) bool {
	return rv.Official && (rv.Author == simReviewer || rv.Author == simHuman)
}

// greenLocked: the required context's last status on head is success and
// its run is over. Callers hold s.f.mu.
func (s *simForge) greenLocked(head string) bool {
	state := ""
	for _, st := range s.f.statuses[head] {
		if st.Context == simCheck {
			state = st.State
		}
	}
	return state == "success" && !s.f.now().Before(s.f.ciAt[head])
}

func (s *simForge) MarkMerged(ctx context.Context, o, r string, n int, commit string) (forge.MergeResult, error) {
	if err := s.call(ctx, "mark merged", n); err != nil {
		return forge.MergeResult{}, err
	}
	return s.f.MarkMerged(ctx, o, r, n, commit)
}

func (s *simForge) CancelAutoMerge(ctx context.Context, o, r string, n int) error {
	if err := s.call(ctx, "cancel auto-merge", n); err != nil {
		return err
	}
	return s.f.CancelAutoMerge(ctx, o, r, n)
}

// Update records which head the update made from which.
func (s *simForge) Update(ctx context.Context, o, r string, n int, style string) (forgejo.UpdateResult, error) {
	if err := s.call(ctx, "update", n); err != nil {
		return forgejo.UpdateResult{}, err
	}
	s.f.mu.Lock()
	pr := *s.f.prs[n]
	s.f.mu.Unlock()
	old := pr.HeadSHA
	if pr.HeadRepo != "o/r" && !pr.MaintainerCanEdit { // the forge refuses to push to the fork
		s.mu.Lock()
		if time.Since(s.moved[n]) > time.Minute {
			s.broken = append(s.broken, fmt.Sprintf("#%d: %s updated a fork PR whose author does not allow maintainer edits", n, simPoolOf(ctx)))
		}
		s.mu.Unlock()
		return forgejo.UpdateResult{Outcome: forgejo.UpdateRefused, Status: 403, Message: "user does not have permission to push"}, nil
	}
	res, err := s.f.Update(ctx, o, r, n, style)
	if err != nil || res.Outcome != forgejo.UpdateDone {
		return res, err
	}
	s.f.mu.Lock()
	made := s.f.prs[n].HeadSHA
	s.f.mu.Unlock()
	s.mu.Lock()
	s.updated[made] = old
	s.updates++
	s.acted[n] = time.Now()
	s.logLocked("#%d updated by %s from %s to %s", n, simPoolOf(ctx), short(old), short(made))
	s.mu.Unlock()
	return res, s.lost("update")
}

func (s *simForge) CommitParents(ctx context.Context, o, r, sha string) ([]string, error) {
	if err := s.call(ctx, "parents", s.prOf(sha)); err != nil {
		return nil, err
	}
	return s.f.CommitParents(ctx, o, r, sha)
}

func (s *simForge) DiffHash(ctx context.Context, o, r string, n int) (string, error) {
	if err := s.call(ctx, "diff", n); err != nil {
		return "", err
	}
	return s.f.DiffHash(ctx, o, r, n)
}

// simNoteKinds are the kinds of the pools' notes that name a head, which
// noteKind (with claims) and markedHead (with train notes) read.
var simNoteKinds = []string{forge.MarkRetry, forge.MarkBlocked, forge.MarkNoReview, forge.MarkConflict, forge.MarkWithheld}

// noteKind names what a pool's note is about: its marker's kind, or its
// first line.
func noteKind(body string) string {
	for _, k := range append([]string{forge.MarkClaim}, simNoteKinds...) {
		if forge.ParseMarker(body, k, &struct{}{}) {
			if k == forge.MarkBlocked || k == forge.MarkWithheld {
				var v struct{ Reason string }
				forge.ParseMarker(body, k, &v)
				return k + ": " + v.Reason
			}
			return k
		}
	}
	return firstLine(body)
}

// markedHead is the head a pool note's marker names; false for a body
// without one (a claim names its head as its SHA, read apart).
func markedHead(body string) (string, bool) {
	for _, k := range append(simNoteKinds, forge.MarkTrain) {
		var v struct{ Head string }
		if forge.ParseMarker(body, k, &v) && v.Head != "" {
			return v.Head, true
		}
	}
	return "", false
}

// noteClaim records when a claim on a head was posted or renewed. Callers
// hold s.mu.
func (s *simForge) noteClaim(n int, body string) {
	if cl, ok := claims.Parse(forge.Comment{Body: body}); ok {
		s.claimed[simHead{n, cl.SHA}] = time.Now()
	}
}
