package pool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"pool/forge"
	"pool/texts"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"pool/agent"
	"pool/clone"
	"pool/forgejo"
	"pool/sessionmark"
)

// fakeForge is an in-memory forge. Side effects are recorded as plain
// strings ("#3: merge") so tests compare slices.
type fakeForge struct {
	mu       sync.Mutex
	me       string
	prs      map[int]*forge.PR
	comments map[int][]forge.Comment
	reviews  map[int][]forge.Review
	statuses map[string][]forge.Status
	deps     map[int][]string // open issues each PR depends on
	nextID   int64
	effects  []string
	// failOps makes the named operations fail with the error.
	failOps map[string]error
	// failTimes makes the named operations fail so many more times;
	// failNotes fails so many more comments starting with the key.
	failTimes map[string]int
	failNotes map[string]int
	// lostNotes posts so many more comments starting with the key and
	// then answers 502, as when a proxy loses the forge's answer.
	lostNotes map[string]int
	// mergeAnswer overrides the merge outcome per PR.
	mergeAnswer map[int]forge.MergeResult
	// manualMerges: the repository allows marking a PR merged by hand.
	manualMerges bool
	// lostRace: the merge of these PRs merges them but answers 409, as
	// Forgejo does when another merge of the PR won the race.
	lostRace map[int]bool
	// mergedTwice: the merge of these PRs merges them but answers 405 with
	// an empty message, as Forgejo answers a merge sent a second time.
	mergedTwice map[int]bool
	permissions map[string]string // account: permission; absent answers 403
	protection  forge.Protection
	merged      map[int]time.Time // when each PR merged
	// recheck, when set, is how long the forge takes to test the other open
	// PRs against the base after a merge: they read not mergeable, and a
	// merge call answers 405 "try again later", until then.
	recheck    time.Duration
	checkedAt  time.Time
	mergeDelay time.Duration // how long a merge call takes, unless its context ends first
	mergeStart chan int      // when set, hears the PR of each merge call as it begins
	mergeGate  chan struct{} // when set, a merge call waits until it is closed
	// hangMerge: a merge call of these PRs waits until its context ends
	// (the pool stops), and hung counts those calls.
	hangMerge   map[int]bool
	hung        map[int]int
	mergesInAir int
	peakInAir   int
	now         func() time.Time
	calls       map[string]int // requests by kind, for cost tests
	trail       []string       // reads of one PR ("read #n") and merges ("merged #n"), in order
	// commentDelay makes PostComment take this long, unless its context
	// ends first; started, if set, hears when one begins.
	commentDelay time.Duration
	// reviewsDelay makes the reads of a PR's reviews take this long;
	// reviewsInAir counts the reads of reviews in flight.
	reviewsDelay map[int]time.Duration
	reviewsInAir int
	started      chan string
	// onStatuses, when set, runs as a read of a head's statuses begins,
	// without the lock: what happens on the forge while that read is in
	// flight.
	onStatuses func(sha string)
	// onUpdate, when set, runs as an update call of a PR begins, without
	// the lock: what happens on the forge while the update is in flight.
	onUpdate func(n int)
	// base is the base branch's tip; a merge moves it. outdated: the
	// protection blocks a PR behind it (MergeBase != base), answering
	// its merge 405 "behind the base branch".
	base     string
	outdated bool
	parents  map[string][]string // each update's new head's parents
	// authorPush, when set, pushes a commit of the author's on top of the
	// update of these PRs (an author pushing during the update).
	authorPush map[int]bool
	// evilMerge, when set, force-pushes over the update of these PRs, at
	// once, a merge of the same parents with one more change; evil lists
	// those heads.
	evilMerge map[int]bool
	evil      map[string]bool
	// ciDelay: the CI takes this long on a head an update made; ciAt is
	// when it passes each.
	ciDelay time.Duration
	ciAt    map[string]time.Time
	// quiet: a review or a comment leaves the PR's update time as it was,
	// as the forge's list of changed PRs may not show them at once.
	quiet bool
	// updateAnswer overrides the update's answer per PR.
	updateAnswer map[int]forgejo.UpdateResult
	// unreadable: the reads of these PRs fail (a PR the forge cannot convert).
	unreadable map[int]bool
	// defaultBranch is the repository's default branch ("": main).
	defaultBranch string
	// noFastForward: the repository does not allow fast-forward-only merges.
	noFastForward bool
	// olderForge: the repository's settings say nothing of fast-forward-only
	// merges (no allow_fast_forward_only_merge).
	olderForge bool
	// outsiders are the accounts that are no collaborator of the repository
	// (IsCollaborator); any other is one.
	outsiders map[string]bool
	// retest: a merge that moves the base has the forge test these PRs
	// again: they read mergeable.
	retest map[int]bool
	// reran are the Actions runs the pool had run again (rerun_test.go);
	// rerunPasses: their failed jobs pass; rerunStatus, if set, answers
	// instead (404: no such endpoint, as Forgejo); rerunIdle: 201, and
	// nothing runs.
	reran       []int64
	rerunPasses bool
	rerunStatus int
	rerunIdle   bool
}

func newFakeForge(prs ...int) *fakeForge {
	f := &fakeForge{me: "pool-bot", prs: map[int]*forge.PR{}, comments: map[int][]forge.Comment{},
		reviews: map[int][]forge.Review{}, statuses: map[string][]forge.Status{}, failOps: map[string]error{},
		failTimes: map[string]int{}, failNotes: map[string]int{}, lostNotes: map[string]int{},
		mergeAnswer: map[int]forge.MergeResult{}, lostRace: map[int]bool{}, mergedTwice: map[int]bool{}, now: time.Now, calls: map[string]int{},
		protection: forge.Protection{UserCanMerge: true}, merged: map[int]time.Time{}, base: fakeSHA("base-0"),
		parents: map[string][]string{}, authorPush: map[int]bool{}, evilMerge: map[int]bool{}, evil: map[string]bool{}, ciAt: map[string]time.Time{},
		updateAnswer: map[int]forgejo.UpdateResult{}, unreadable: map[int]bool{}, hangMerge: map[int]bool{}, hung: map[int]int{}}
	for _, n := range prs {
		f.prs[n] = &forge.PR{Number: n, State: "open", Mergeable: true, HeadSHA: fakeSHA(fmt.Sprintf("sha-%d-a", n)),
			BaseRef: "main", Author: "author", Updated: time.Now(), HeadRepo: "o/r", HeadRef: fmt.Sprintf("feature-%d", n), MergeBase: f.base}
	}
	return f
}

func (f *fakeForge) fail(op string) error {
	f.calls[op]++
	if err, ok := f.failOps[op]; ok {
		return err
	}
	if f.failTimes[op] > 0 {
		f.failTimes[op]--
		return &forgejo.Error{Op: op, Status: 502, Retryable: true, Err: errors.New("bad gateway")}
	}
	return nil
}

// serverError is the error the client returns beside an answer of status,
// as it does for a 5xx: nil for any other.
func serverError(op string, status int) error {
	if status < 500 {
		return nil
	}
	return &forgejo.Error{Op: op, Status: status, Retryable: true, Err: errors.New("server error")}
}

func (f *fakeForge) record(format string, args ...any) {
	f.effects = append(f.effects, fmt.Sprintf(format, args...))
}

func (f *fakeForge) Effects() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.effects...)
}

func (f *fakeForge) Me(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.me, f.fail("me")
}

func (f *fakeForge) Repository(context.Context, string, string) (forge.Repository, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := forge.Repository{DefaultBranch: "main", FastForwardOnly: forge.Yes}
	if f.defaultBranch != "" {
		r.DefaultBranch = f.defaultBranch
	}
	if f.noFastForward {
		r.FastForwardOnly = forge.No
	}
	if f.olderForge {
		r.FastForwardOnly = forge.Unsaid
	}
	return r, f.fail("repo")
}

func (f *fakeForge) OpenPRs(context.Context, string, string) ([]forge.PR, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail("list"); err != nil {
		return nil, err
	}
	var out []forge.PR
	for n := 1; n <= len(f.prs)+100; n++ {
		if pr, ok := f.prs[n]; ok && pr.State == "open" {
			out = append(out, *pr)
			out[len(out)-1].BaseSHA = f.base // the base's tip, as the forge's list shows it, and its reads (PR)
		}
	}
	return out, nil
}

// ChangedPRs lists the PRs updated at or after since, like the issues endpoint.
func (f *fakeForge) ChangedPRs(_ context.Context, _, _ string, since time.Time) ([]forgejo.PRChange, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail("changed"); err != nil {
		return nil, time.Time{}, err
	}
	var out []forgejo.PRChange
	for n, pr := range f.prs {
		if !pr.Updated.Before(since) {
			out = append(out, forgejo.PRChange{Number: n, State: pr.State, Updated: pr.Updated})
		}
	}
	return out, f.now(), nil
}

// touch marks a PR updated, as any comment, review, push or merge does. Callers hold mu.
func (f *fakeForge) touch(n int) { f.prs[n].Updated = f.now() }

// push moves a PR's head, as a push to its branch does.
func (f *fakeForge) push(n int, sha string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prs[n].HeadSHA = sha
	f.touch(n)
}

func (f *fakeForge) PR(_ context.Context, _, _ string, n int) (forge.PR, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pr, ok := f.prs[n]
	if !ok {
		return forge.PR{}, &forgejo.Error{Op: "get", Status: 404, Err: forgejo.ErrNotFound}
	}
	f.trail = append(f.trail, fmt.Sprintf("read #%d", n))
	if f.unreadable[n] {
		return forge.PR{}, &forgejo.Error{Op: "get", Status: 500, Retryable: true, Err: errors.New("internal error")}
	}
	out := *pr
	out.Mergeable = out.Mergeable && !f.checking()
	out.BaseSHA = f.base
	return out, f.fail("pr")
}

// Update merges the base into PR n's head, as the forge's update does.
func (f *fakeForge) Update(_ context.Context, _, _ string, n int, style string) (forgejo.UpdateResult, error) {
	if f.onUpdate != nil {
		f.onUpdate(n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["update"]++
	f.record("#%d: update by %s", n, style)
	if res, ok := f.updateAnswer[n]; ok {
		return res, serverError("update", res.Status)
	}
	pr := f.prs[n]
	if pr.MergeBase == f.base && f.base != "" {
		// Gitea 1.26, services/pull/update.go: a head not behind its base
		// is "up to date", which the API answers 500.
		return forgejo.UpdateResult{Outcome: forgejo.UpdateFailed, Status: 500, Message: fmt.Sprintf("HeadBranch of PR %d is up to date", n)},
			serverError("update", 500)
	}
	// A commit of its own each time: its id names its parents, as a real
	// commit's does (the pool keeps a head's parents once read).
	f.nextID++
	head := fakeSHA(fmt.Sprintf("update-%d-%s-%d", n, f.base, f.nextID))
	f.parents[head] = []string{pr.HeadSHA, f.base}
	if f.evilMerge[n] {
		head = fakeSHA("evil-" + head)
		f.parents[head], f.evil[head] = []string{pr.HeadSHA, f.base}, true
	}
	if f.authorPush[n] {
		pushed := fakeSHA("author-" + head)
		f.parents[pushed] = []string{head}
		head = pushed
	}
	if f.evilMerge[n] || f.authorPush[n] {
		f.contentChanged(n)
	}
	for _, st := range f.statuses[pr.HeadSHA] { // the CI passes the new head too
		f.nextID++
		st.ID = f.nextID
		f.statuses[head] = append(f.statuses[head], st)
	}
	pr.HeadSHA, pr.MergeBase = head, f.base
	f.ciAt[head] = f.now().Add(f.ciDelay)
	f.touch(n)
	return forgejo.UpdateResult{Outcome: forgejo.UpdateDone, Status: 200}, nil
}

// contentChanged does what the forge does when a push changed PR n's
// content (Gitea 1.26, Forgejo: checkIfPRContentChanged): its reviews
// become stale, and with dismiss_stale_approvals its approvals are
// dismissed. A push that only merges the base in changes nothing. Callers
// hold mu.
func (f *fakeForge) contentChanged(n int) {
	for i := range f.reviews[n] {
		f.reviews[n][i].Stale = true
		if f.protection.DismissStale && f.reviews[n][i].State == forge.ReviewApproved {
			f.reviews[n][i].Dismissed = true
		}
	}
}

func (f *fakeForge) CommitParents(_ context.Context, _, _, sha string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["parents"]++
	return f.parents[sha], nil
}

func (f *fakeForge) DiffHash(_ context.Context, _, _ string, n int) (string, error) {
	return "diff-" + fmt.Sprint(n), nil
}

// checking reports whether the forge is still testing PRs against a base
// that a merge just moved. Callers hold mu.
func (f *fakeForge) checking() bool { return f.now().Before(f.checkedAt) }

func (f *fakeForge) Comments(_ context.Context, _, _ string, n int) ([]forge.Comment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]forge.Comment(nil), f.comments[n]...), f.fail("comments")
}

func (f *fakeForge) PostComment(ctx context.Context, _, _ string, n int, body string) (forge.Comment, error) {
	if f.started != nil {
		f.started <- firstLine(body)
	}
	select {
	case <-time.After(f.commentDelay):
	case <-ctx.Done():
		return forge.Comment{}, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail("comment"); err != nil {
		return forge.Comment{}, err
	}
	for prefix, left := range f.failNotes {
		if left > 0 && strings.HasPrefix(body, prefix) {
			f.failNotes[prefix]--
			return forge.Comment{}, &forgejo.Error{Op: "comment", Status: 502, Retryable: true, Err: errors.New("bad gateway")}
		}
	}
	f.nextID++
	c := forge.Comment{ID: f.nextID, Author: f.me, Body: body, Created: f.now()}
	f.comments[n] = append(f.comments[n], c)
	if _, ok := f.prs[n]; ok && !f.quiet {
		f.touch(n)
	}
	f.record("#%d: comment %s", n, firstLine(body))
	for prefix, left := range f.lostNotes {
		if left > 0 && strings.HasPrefix(body, prefix) {
			f.lostNotes[prefix]--
			return forge.Comment{}, &forgejo.Error{Op: "comment", Status: 502, Retryable: true, Err: errors.New("bad gateway")}
		}
	}
	return c, nil
}

func (f *fakeForge) DeleteComment(_ context.Context, _, _ string, id int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail("delete comment"); err != nil {
		return err
	}
	for n, cs := range f.comments {
		for i, c := range cs {
			if c.ID == id {
				f.comments[n] = append(cs[:i:i], cs[i+1:]...)
				f.record("#%d: delete comment %d", n, id)
			}
		}
	}
	return nil
}

func (f *fakeForge) Reviews(_ context.Context, _, _ string, n int) ([]forge.Review, error) {
	f.mu.Lock()
	delay := f.reviewsDelay[n]
	f.reviewsInAir++
	f.mu.Unlock()
	time.Sleep(delay)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reviewsInAir--
	return append([]forge.Review(nil), f.reviews[n]...), f.fail("reviews")
}

// StatusHistory numbers the statuses in the order they were added, as the
// forge's ids are.
func (f *fakeForge) StatusHistory(_ context.Context, _, _, sha string) ([]forge.Status, error) {
	f.mu.Lock()
	during := f.onStatuses
	f.mu.Unlock()
	if during != nil {
		during(sha)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append([]forge.Status(nil), f.statuses[sha]...)
	for i := range out {
		if out[i].ID == 0 {
			out[i].ID = int64(i + 1)
		}
		if f.now().Before(f.ciAt[sha]) {
			out[i].State = "pending"
		}
	}
	return out, f.fail("statuses")
}

func (f *fakeForge) OpenDependencies(_ context.Context, _, _ string, n int) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["dependencies"]++
	return append([]string(nil), f.deps[n]...), f.fail("dependencies")
}

func (f *fakeForge) Protection(context.Context, string, string, string) (forge.Protection, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.protection, f.fail("protection")
}

func (f *fakeForge) Merge(ctx context.Context, _, _ string, n int, opt forgejo.MergeOptions) (forge.MergeResult, error) {
	f.mu.Lock()
	f.mergesInAir++
	f.peakInAir = max(f.peakInAir, f.mergesInAir)
	f.mu.Unlock()
	if f.mergeStart != nil {
		f.mergeStart <- n
	}
	var cut error
	select {
	case <-time.After(f.mergeDelay):
	case <-ctx.Done():
		cut = ctx.Err()
	}
	if f.mergeGate != nil {
		<-f.mergeGate
	}
	f.mu.Lock()
	hang := f.hangMerge[n]
	if hang {
		f.hung[n]++
	}
	f.mu.Unlock()
	if hang && cut == nil {
		<-ctx.Done()
		cut = ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mergesInAir--
	if cut != nil {
		return forge.MergeResult{}, cut
	}
	f.calls["merge"]++
	f.record("#%d: merge at %s", n, opt.HeadSHA)
	if res, ok := f.mergeAnswer[n]; ok {
		return res, serverError("merge", res.Status)
	}
	if f.checking() {
		return forge.MergeResult{Outcome: forge.MergeNotReady, Status: 405, Message: "Please try again later"}, nil
	}
	if opt.HeadSHA != f.prs[n].HeadSHA {
		return forge.MergeResult{Outcome: forge.MergeHeadMoved, Status: 409}, nil
	}
	if f.outdated && f.prs[n].MergeBase != f.base {
		msg := `{"message":"not ready to merge: The head branch is behind the base branch"}`
		return forge.MergeResult{Outcome: forgejo.ClassifyMerge(405, msg), Status: 405, Message: msg,
			Rule: forge.RefusalRule(405, msg)}, nil
	}
	if opt.Style == "fast-forward-only" && f.noFastForward {
		return forge.MergeResult{Outcome: forge.MergeBlocked, Status: 405,
			Message: "fast-forward-only is not allowed an allowed merge style for this repository"}, nil
	}
	if opt.Style == "fast-forward-only" && (len(f.parents[opt.HeadSHA]) == 0 || f.parents[opt.HeadSHA][0] != f.base) {
		return forge.MergeResult{Outcome: forge.MergeBlocked, Status: 405, Message: "not a fast-forward"}, nil
	}
	f.setMerged(n)
	f.trail = append(f.trail, fmt.Sprintf("merged #%d", n))
	for r := range f.retest {
		f.prs[r].Mergeable = true
	}
	f.base = fakeSHA(fmt.Sprintf("base-%d", len(f.merged)))
	if opt.Style == "fast-forward-only" {
		f.base = opt.HeadSHA // the base is the head itself
	}
	f.checkedAt = f.now().Add(f.recheck)
	if f.lostRace[n] {
		body := `{"ID":11,"IssueID":0,"HeadRepoID":3,"BaseRepoID":3,"HeadBranch":"feature-1","BaseBranch":"main"}`
		return forge.MergeResult{Outcome: forgejo.ClassifyMerge(409, body), Status: 409, Message: body}, nil
	}
	if f.mergedTwice[n] {
		return forgejo.MergeAnswer(405, `{"message":"","url":""}`), nil
	}
	return forge.MergeResult{Outcome: forge.MergeDone, Status: 200}, nil
}

func (f *fakeForge) MarkMerged(_ context.Context, _, _ string, n int, commit string) (forge.MergeResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail("mark merged"); err != nil {
		return forge.MergeResult{}, err
	}
	f.record("#%d: mark merged by %s", n, commit)
	if !f.manualMerges {
		msg := "manually-merged is not allowed an allowed merge style for this repository"
		return forge.MergeResult{Outcome: forgejo.ClassifyMerge(405, msg), Status: 405, Message: msg}, nil
	}
	f.setMerged(n)
	return forge.MergeResult{Outcome: forge.MergeDone, Status: 200}, nil
}

// setMerged closes PR n as merged, by the pool's account unless MergedBy
// names another. Callers hold mu.
func (f *fakeForge) setMerged(n int) {
	pr := f.prs[n]
	pr.Merged, pr.State = true, "closed"
	if pr.MergedBy == "" {
		pr.MergedBy = f.me
	}
	f.touch(n)
	f.merged[n] = f.now()
}

func (f *fakeForge) IsCollaborator(_ context.Context, _, _ string, account string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail("is collaborator"); err != nil {
		return false, err
	}
	return !f.outsiders[account], nil
}

func (f *fakeForge) Permission(_ context.Context, _, _ string, account string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.permissions[account]; ok {
		return p, nil
	}
	return "", &forgejo.Error{Op: "permission", Status: 403, Err: errors.New("forbidden")}
}

func (f *fakeForge) CancelAutoMerge(_ context.Context, _, _ string, n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail("cancel auto-merge"); err != nil {
		return err
	}
	f.record("#%d: cancel auto-merge", n)
	return nil
}

// review adds a review on the PR's current head by an account with write
// access: the forge marks approvals and requests for changes official.
func (f *fakeForge) review(n int, author, state string) {
	f.addReview(n, author, state, state == forge.ReviewApproved || state == forge.ReviewRequestChanges)
}

// outsiderReview adds a review by an account without write access.
func (f *fakeForge) outsiderReview(n int, author, state string) { f.addReview(n, author, state, false) }

func (f *fakeForge) addReview(n int, author, state string, official bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	f.reviews[n] = append(f.reviews[n], forge.Review{ID: f.nextID, Author: author, State: state,
		CommitID: f.prs[n].HeadSHA, Official: official, Submitted: f.now()})
	if !f.quiet {
		f.touch(n)
	}
}

func (f *fakeForge) claimsOn(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	count := 0
	for _, c := range f.comments[n] {
		if strings.Contains(c.Body, "<!-- pool-claim ") {
			count++
		}
	}
	return count
}

// fakeAgent runs each prompted session for a set duration, then applies
// the reviewer's effect on the forge and answers with the reply.
type fakeAgent struct {
	mu       sync.Mutex
	sessions map[string]*fakeSession
	next     int
	// behave decides, per PR, how long the session runs, what it does to
	// the forge when it ends, and what it replies.
	behave func(pr int) (time.Duration, func(), string)
	// behaveOn, when set, decides instead of behave, from the prompt too
	// (the simulation's reviewer reviews the head it was given).
	behaveOn     func(pr int, prompt string) (time.Duration, func(), string)
	active, peak int
	prompts      []string
	events       chan agent.Event // nil until Events is called, and after it closed
	asks         []agent.Permission
	aborted      []string
	agents       []string // the agents it knows
	open         bool     // answers without a password
	disposed     []string // directories whose instance was disposed
	warmed       []string // directories whose instance Warm started
	createdIn    []string // the directory of each session created, in order
	// down makes the named calls ("create", "prompt", "delete", "sessions")
	// fail as an unreachable server's do, while it holds. "create" still
	// makes the session, as a server that dies before it answers.
	down map[string]bool
	// lostAnswers: this many prompt calls take the prompt and then fail,
	// as when a proxy loses the server's answer.
	lostAnswers int
	// dead makes every call fail, as a server that stopped answering.
	dead bool
	// name starts its session ids, so that two fake servers' differ.
	name string
}

type fakeSession struct {
	id, title, dir string
	busy           bool
	reply          string
	done           bool
	prompted       bool
}

var errDown = &agent.Error{Op: "fake", Retryable: true, Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}

func newFakeAgent(behave func(pr int) (time.Duration, func(), string)) *fakeAgent {
	return &fakeAgent{sessions: map[string]*fakeSession{}, behave: behave,
		agents: []string{"build", "plan", "ca-pr-self-reviewer"}, down: map[string]bool{}}
}

// setDown makes op fail, or work again.
func (a *fakeAgent) setDown(op string, down bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.down[op] = down
}

func (a *fakeAgent) OpenToAnyone(context.Context) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.open, nil
}

func (a *fakeAgent) Agents(context.Context, string) ([]string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.agents...), nil
}

func (a *fakeAgent) CreateSession(_ context.Context, title, dir string) (agent.Session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next++
	if a.dead {
		return agent.Session{}, errDown
	}
	s := &fakeSession{id: fmt.Sprintf("ses_%s%d", a.name, a.next), title: title, dir: dir}
	a.sessions[s.id] = s
	a.createdIn = append(a.createdIn, dir)
	if a.down["create"] {
		return agent.Session{}, errDown
	}
	return agent.Session{ID: s.id, Title: title, Directory: dir}, nil
}

func (a *fakeAgent) PromptAsync(_ context.Context, id, _, text string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return errDown
	}
	if a.down["prompt"] {
		return errDown
	}
	s := a.sessions[id]
	_, pr, _ := texts.ParseTitle(s.title)
	var d time.Duration
	var effect func()
	var reply string
	if a.behaveOn != nil {
		d, effect, reply = a.behaveOn(pr, text)
	} else {
		d, effect, reply = a.behave(pr)
	}
	s.busy, s.prompted = true, true
	a.prompts = append(a.prompts, text)
	a.active++
	a.peak = max(a.peak, a.active)
	var lost error
	if a.lostAnswers > 0 {
		a.lostAnswers--
		lost = errors.New("agent: prompt: 502 Bad Gateway")
	}
	time.AfterFunc(d, func() {
		if effect != nil {
			effect()
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		s.busy, s.done, s.reply = false, true, reply
		a.active--
		if a.events != nil {
			select {
			case a.events <- agent.Event{Type: agent.EventSessionIdle, SessionID: s.id}:
			default:
			}
		}
	})
	return lost
}

// Events streams session.idle events, as the real server's /event does,
// until ctx ends; then it closes the channel.
func (a *fakeAgent) Events(ctx context.Context) <-chan agent.Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	events := make(chan agent.Event, 64)
	a.events = events
	context.AfterFunc(ctx, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.events = nil
		close(events)
	})
	return events
}

// Statuses answers for the sessions working in dir, as the real server does.
func (a *fakeAgent) Statuses(_ context.Context, dir string) (map[string]agent.Status, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return nil, errDown
	}
	out := map[string]agent.Status{}
	for id, s := range a.sessions {
		if s.busy && s.dir == dir {
			out[id] = agent.Status{Type: "busy"}
		}
	}
	return out, nil
}

func (a *fakeAgent) Messages(_ context.Context, id string) ([]agent.Message, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return nil, errDown
	}
	s, ok := a.sessions[id]
	if !ok {
		return nil, agent.ErrNotFound
	}
	var msgs []agent.Message
	if s.prompted {
		msgs = append(msgs, agent.Message{Role: "user", Text: "prompt"})
	}
	if s.done {
		msgs = append(msgs, agent.Message{Role: "assistant", Text: s.reply, Finish: "stop",
			Created: time.Now(), Completed: time.Now()})
	}
	return msgs, nil
}

func (a *fakeAgent) Sessions(context.Context) ([]agent.Session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return nil, errDown
	}
	if a.down["sessions"] {
		return nil, errDown
	}
	var out []agent.Session
	for _, s := range a.sessions {
		out = append(out, agent.Session{ID: s.id, Title: s.title, Directory: s.dir})
	}
	return out, nil
}

func (a *fakeAgent) Delete(_ context.Context, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return errDown
	}
	if a.down["delete"] {
		return errDown
	}
	if s, ok := a.sessions[id]; ok && s.busy {
		s.busy = false
		a.active--
	}
	delete(a.sessions, id)
	return nil
}

func (a *fakeAgent) Dispose(_ context.Context, dir string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return errDown
	}
	a.disposed = append(a.disposed, dir)
	return nil
}

func (a *fakeAgent) Warm(_ context.Context, dir string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return errDown
	}
	a.warmed = append(a.warmed, dir)
	return nil
}

func (a *fakeAgent) Abort(_ context.Context, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return errDown
	}
	a.aborted = append(a.aborted, id)
	if s, ok := a.sessions[id]; ok && s.busy {
		s.busy = false
		a.active--
	}
	return nil
}

// Permissions answers for the sessions working in dir, as the real server
// does.
func (a *fakeAgent) Permissions(_ context.Context, dir string) ([]agent.Permission, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return nil, errDown
	}
	var out []agent.Permission
	for _, pm := range a.asks {
		if s, ok := a.sessions[pm.SessionID]; ok && s.dir == dir {
			out = append(out, pm)
		}
	}
	return out, nil
}

// fakeTrees hands out work tree directories under /trees, keeps those
// given back for the next take as the clone does, and records what happens
// to them as plain strings. inUse, if set, says whether a session still
// works in a directory: giving such a tree back is recorded in shared.
type fakeTrees struct {
	mu      sync.Mutex
	records map[string]sessionmark.Record // by tree
	next    int
	live    map[string]bool
	made    map[string]bool      // made by TakeTree: kept when given back
	free    map[string]time.Time // kept, by when given back
	effects []string
	shared  []string
	inUse   func(dir string) bool
}

func newFakeTrees() *fakeTrees {
	return &fakeTrees{live: map[string]bool{}, made: map[string]bool{}, free: map[string]time.Time{}}
}

// RecordSession keeps the record by tree; it is no effect.
func (t *fakeTrees) RecordSession(dir string, r sessionmark.Record) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.records == nil {
		t.records = map[string]sessionmark.Record{}
	}
	t.records[dir] = r
	return nil
}

// SessionRecord reads what RecordSession kept for dir.
func (t *fakeTrees) SessionRecord(dir string) (sessionmark.Record, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.records[dir]
	if !ok {
		return sessionmark.Record{}, sessionmark.ErrNoRecord
	}
	return r, nil
}

// TakeTree takes the tree freed last, or makes one: "take <dir> <head>".
func (t *fakeTrees) TakeTree(_ context.Context, pr int, head string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	dir := ""
	for d, at := range t.free {
		if dir == "" || at.After(t.free[dir]) {
			dir = d
		}
	}
	if dir == "" {
		t.next++
		dir = fmt.Sprintf("/trees/t-%d", t.next)
		t.live[dir], t.made[dir] = true, true
	}
	delete(t.free, dir)
	t.effects = append(t.effects, fmt.Sprintf("take %s %s", dir, head))
	return dir, nil
}

func (t *fakeTrees) GiveTree(_ context.Context, dir string, keep int) (bool, error) {
	if t.inUse != nil && t.inUse(dir) {
		t.mu.Lock()
		t.shared = append(t.shared, dir)
		t.mu.Unlock()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.made[dir] || len(t.free) >= keep {
		t.removeLocked(dir)
		return false, nil
	}
	t.free[dir] = time.Now()
	t.effects = append(t.effects, "give "+dir)
	return true, nil
}

func (t *fakeTrees) RetireTrees(_ context.Context, idleSince time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for dir, at := range t.free {
		if at.Before(idleSince) {
			t.removeLocked(dir)
			out = append(out, dir)
		}
	}
	return out
}

func (t *fakeTrees) Owns(dir string) bool { return strings.HasPrefix(dir, "/trees/") }

func (t *fakeTrees) RemoveTree(_ context.Context, dir string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.removeLocked(dir)
	return nil
}

func (t *fakeTrees) removeLocked(dir string) {
	delete(t.live, dir)
	delete(t.made, dir)
	delete(t.free, dir)
	t.effects = append(t.effects, "remove "+dir)
}

func (t *fakeTrees) PruneTrees(_ context.Context, keep []string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for dir := range t.live {
		if !slices.Contains(keep, dir) {
			delete(t.live, dir)
		}
	}
	t.effects = append(t.effects, fmt.Sprintf("prune keeping %v", keep))
	return nil
}

// fakeHistory says which PR heads are on the base already, and in which
// commit.
type fakeHistory struct {
	mu     sync.Mutex
	landed map[string]string // head: commit of the base that holds it
	looks  int
	// forge, when set, is whose evil merges have a tree other than the
	// merge of their parents; noMergeTree: git cannot tell.
	forge       *fakeForge
	noMergeTree bool
}

func (h *fakeHistory) MergeTreeIs(_ context.Context, _ int, commit, ours, theirs string) (bool, error) {
	if h.noMergeTree {
		return false, clone.ErrNoMergeTree
	}
	if h.forge == nil {
		return true, nil
	}
	h.forge.mu.Lock()
	defer h.forge.mu.Unlock()
	return !h.forge.evil[commit] && slices.Equal(h.forge.parents[commit], []string{ours, theirs}), nil
}

func (h *fakeHistory) OnBase(_ context.Context, _ int, head string) (string, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.looks++
	commit, ok := h.landed[head]
	return commit, ok, nil
}

// left lists the trees taken and never given back or removed.
func (t *fakeTrees) left() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for dir := range t.live {
		if _, free := t.free[dir]; !free {
			out = append(out, dir)
		}
	}
	slices.Sort(out)
	return out
}

// worksIn reports whether a session the server holds works in dir.
func (a *fakeAgent) worksIn(dir string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.sessions {
		if s.dir == dir {
			return true
		}
	}
	return false
}

func (a *fakeAgent) count() (sessions, prompts, peak int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.sessions), len(a.prompts), a.peak
}

func (f *fakeForge) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	total := 0
	for _, n := range f.calls {
		total += n
	}
	return total
}

// fakeSHA turns a readable name into a commit id of the forge's form (hex).
func fakeSHA(name string) string { return fmt.Sprintf("%x", name) }

func (f *fakeForge) isMerged(n int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.prs[n].Merged
}

func (f *fakeForge) mergedAt(n int) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.merged[n]
}

// EditComment replaces a comment's body; the forge stamps its update time.
func (f *fakeForge) EditComment(_ context.Context, _, _ string, id int64, body string) (forge.Comment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail("edit comment"); err != nil {
		return forge.Comment{}, err
	}
	for n, cs := range f.comments {
		for i := range cs {
			if cs[i].ID == id {
				cs[i].Body, cs[i].Updated = body, f.now()
				f.record("#%d: edit comment %d %s", n, id, firstLine(body))
				return cs[i], nil
			}
		}
	}
	return forge.Comment{}, &forgejo.Error{Op: "edit comment", Status: 404, Err: forgejo.ErrNotFound}
}
