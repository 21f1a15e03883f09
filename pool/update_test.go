package pool

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pool/forge"
	"pool/forgejo"
)

// outdatedForge is a forge whose protection blocks PRs behind their base
// and requires the check "ci", which passes on every head of the PRs.
func outdatedForge(readable bool, prs ...int) *fakeForge {
	f := newFakeForge(prs...)
	f.outdated = true
	f.protection = forge.Protection{Protected: true, Rule: "main", Full: readable, UserCanMerge: true,
		StatusCheck: true, StatusContexts: []string{"ci"}, BlockOnOutdated: readable}
	for _, n := range prs {
		f.statuses[f.prs[n].HeadSHA] = []forge.Status{{ID: int64(n), Context: "ci", State: "success"}}
	}
	return f
}

// updatesAndMerges lists the update and merge calls, in order.
func updatesAndMerges(f *fakeForge) []string {
	var out []string
	for _, e := range f.Effects() {
		if strings.Contains(e, ": update by ") || strings.Contains(e, ": merge at ") {
			out = append(out, e)
		}
	}
	return out
}

// mergeThreeBehind runs a pool until three approved PRs on a branch that
// blocks outdated branches are merged, each updated head's checks taking
// ten polls.
func mergeThreeBehind(t *testing.T) (*fakeForge, *fakeAgent) {
	t.Helper()
	f := outdatedForge(true, 1, 2, 3)
	a := newFakeAgent(approver(f, time.Millisecond))
	cfg := testConfig(2)
	cfg.IdleExit = 0
	f.ciDelay = 10 * cfg.PollInterval
	runUntil(t, cfg, f, a, func(context.Context, *Pool) {}, func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) })
	return f, a
}

// TestBehindPRsAreUpdatedOneAtATime: three approved PRs on a branch that
// blocks outdated branches. After the first merge the others are behind;
// the pool updates one, waits for its checks, merges it, then the next:
// every merge call succeeds, at most two updates, never two updates
// without a merge between them, and the approvals carry over (one
// session per PR).
func TestBehindPRsAreUpdatedOneAtATime(t *testing.T) {
	f, a := mergeThreeBehind(t)
	calls := updatesAndMerges(f)
	updates, merges := 0, 0
	for i, c := range calls {
		if strings.Contains(c, "update") {
			updates++
			if i > 0 && strings.Contains(calls[i-1], "update") {
				t.Errorf("two updates without a merge between them: %v", calls)
			}
		} else {
			merges++
		}
	}
	if merges != 3 || updates > 2 {
		t.Errorf("%d merge calls and %d updates, want 3 merges (none refused) and at most 2 updates: %v", merges, updates, calls)
	}
	if _, prompts, _ := a.count(); prompts != 3 {
		t.Errorf("%d reviewer sessions, want 3: the approvals carry over the pool's updates", prompts)
	}
}

// TestAnAuthorPushDuringTheUpdateIsReviewed: the head after the update of
// PR 2 holds a commit of the author's besides the pool's merge: its
// approval does not carry over, and it is reviewed again.
func TestAnAuthorPushDuringTheUpdateIsReviewed(t *testing.T) {
	f := outdatedForge(true, 1, 2)
	f.authorPush[2] = true
	a := newFakeAgent(approver(f, time.Millisecond))
	cfg := testConfig(1)
	cfg.IdleExit = 0
	runUntil(t, cfg, f, a, func(context.Context, *Pool) {}, func() bool { return f.isMerged(1) && f.isMerged(2) })
	if _, prompts, _ := a.count(); prompts != 3 {
		t.Errorf("%d reviewer sessions, want 3: the head with the author's push is reviewed again", prompts)
	}
}

// TestAnEvilMergeOverTheUpdateIsReviewed: right after the pool's update
// of PR 2, before the pool reads its head, the author force-pushes a merge
// of the same parents (the approved head and the base tip) that holds one
// more change. Its tree is not the merge of its parents: the approval
// does not carry over, and the head is reviewed again.
func TestAnEvilMergeOverTheUpdateIsReviewed(t *testing.T) {
	f := outdatedForge(true, 1, 2)
	f.evilMerge[2] = true
	a := newFakeAgent(approver(f, time.Millisecond))
	cfg := testConfig(1)
	cfg.IdleExit = 0
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := New(ctx, cfg, Deps{Forge: f, Agent: a, Now: f.now, History: &fakeHistory{forge: f}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	go func() {
		waitFor(ctx, func() bool { return f.isMerged(1) && f.isMerged(2) })
		stop()
	}()
	if _, err := p.Run(runCtx); err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v, %v", err, ctx.Err())
	}
	if _, prompts, _ := a.count(); prompts != 3 {
		t.Errorf("%d reviewer sessions, want 3: the evil merge is reviewed again", prompts)
	}
}

// TestUnreadableOutdatedRuleIsLearnedOnce: the token cannot read the rule;
// the forge's first refusal names it, the pool learns it and updates the
// PRs behind: at most one refused merge call in all.
func TestUnreadableOutdatedRuleIsLearnedOnce(t *testing.T) {
	f := outdatedForge(false, 1, 2, 3)
	a := newFakeAgent(approver(f, time.Millisecond))
	cfg := testConfig(2)
	cfg.IdleExit = 0
	runUntil(t, cfg, f, a, func(context.Context, *Pool) {}, func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) })
	merges := 0
	for _, c := range updatesAndMerges(f) {
		if strings.Contains(c, "merge at") {
			merges++
		}
	}
	if merges > 4 {
		t.Errorf("%d merge calls for 3 PRs, want at most one refused: %v", merges, updatesAndMerges(f))
	}
}

// TestApprovalsCarryOverWithAnUnreadableRule: the pool's token is a
// write collaborator's, which cannot read the protection whole (nor
// whether it dismisses stale approvals). The forge keeps each approval
// over the pool's updates (not stale, not dismissed, official): the
// approvals carry over, one session per PR. Where an author pushes during
// the update of PR 2 the forge marks its approval stale (and dismisses it
// under a dismiss_stale_approvals the token cannot see): that head is
// reviewed again.
func TestApprovalsCarryOverWithAnUnreadableRule(t *testing.T) {
	for _, tt := range []struct {
		name       string
		authorPush bool
		dismiss    bool
		want       int
	}{
		{name: "the forge keeps the approvals", want: 3},
		{name: "an author pushes during the update", authorPush: true, want: 4},
		{name: "an author pushes under a hidden dismiss_stale_approvals", authorPush: true, dismiss: true, want: 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := outdatedForge(false, 1, 2, 3)
			f.authorPush[2] = tt.authorPush
			f.protection.DismissStale = tt.dismiss // unread: Full is false
			a := newFakeAgent(approver(f, time.Millisecond))
			cfg := testConfig(1)
			cfg.IdleExit = 0
			runUntil(t, cfg, f, a, func(context.Context, *Pool) {}, func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) })
			if _, prompts, _ := a.count(); prompts != tt.want {
				t.Errorf("%d reviewer sessions, want %d: %v", prompts, tt.want, updatesAndMerges(f))
			}
		})
	}
}

// TestAConflictFoundByTheUpdateIsAConflict: the forge answers the update
// of PR 2 409 (the base does not merge cleanly): one conflict note, no
// second update call, no merge call.
func TestAConflictFoundByTheUpdateIsAConflict(t *testing.T) {
	f := outdatedForge(true, 1, 2)
	f.updateAnswer[2] = forgejo.UpdateResult{Outcome: forgejo.UpdateConflict, Status: 409, Message: "merge failed because of conflict"}
	a := newFakeAgent(approver(f, time.Millisecond))
	cfg := testConfig(1)
	cfg.IdleExit = 0
	runUntil(t, cfg, f, a, func(ctx context.Context, p *Pool) {
		waitFor(ctx, func() bool { return len(effectsWith(f, "#2: update by")) > 0 })
		time.Sleep(20 * cfg.PollInterval)
	}, func() bool { return true })
	if n := len(effectsWith(f, "#2: update by")); n != 1 {
		t.Errorf("%d update calls for the conflicting PR, want 1: %v", n, f.Effects())
	}
	if n := len(effectsWith(f, "#2: merge at")); n != 0 {
		t.Errorf("%d merge calls for the conflicting PR, want 0", n)
	}
	if n := len(effectsWith(f, "#2: comment Merge conflict detected")); n != 1 {
		t.Errorf("%d conflict notes, want 1: %v", n, f.Effects())
	}
}

// TestARefusedUpdateIsNoLoop: an update answered 403, 400, or 500 (an
// AGit PR's branch, which the forge cannot update) gets one note and backs
// off: a handful of calls, not one a cycle.
func TestARefusedUpdateIsNoLoop(t *testing.T) {
	for _, status := range []int{403, 400, 500} {
		f := outdatedForge(true, 1, 2)
		f.updateAnswer[2] = forgejo.UpdateResult{Outcome: forgejo.ClassifyUpdate(status), Status: status}
		a := newFakeAgent(approver(f, time.Millisecond))
		cfg := testConfig(1)
		cfg.IdleExit = 0
		runUntil(t, cfg, f, a, func(ctx context.Context, p *Pool) {
			waitFor(ctx, func() bool { return len(effectsWith(f, "#2: update by")) > 0 })
			time.Sleep(40 * cfg.PollInterval)
		}, func() bool { return true })
		// back-offs of 1, 2, 4, 8, 16 poll intervals fit five calls in 40
		if n := len(effectsWith(f, "#2: update by")); n > 6 {
			t.Errorf("HTTP %d: %d update calls in 40 poll intervals, want a back-off", status, n)
		}
		if n := len(effectsWith(f, "#2: comment Merging is on hold")); n != 1 {
			t.Errorf("HTTP %d: %d hold notes, want 1: %v", status, n, f.Effects())
		}
	}
}

// setCheck reports the check "ci" on PR n's current head as state, a
// newer run than any before, and returns the head.
func (f *fakeForge) setCheck(n int, state string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	head := f.prs[n].HeadSHA
	f.nextID++
	f.statuses[head] = append(f.statuses[head], forge.Status{ID: f.nextID, Context: "ci", State: state})
	f.ciAt[head] = time.Time{}
	f.touch(n)
	return head
}

// moveBase moves the base branch, as a person's push to it does.
func (f *fakeForge) moveBase(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.base = fakeSHA(name)
	for n, pr := range f.prs {
		if pr.State == "open" {
			f.touch(n)
		}
	}
}

// TestTwoUpdatedPRsNeverWaitOnEachOther: after the first merge, PR X is
// updated and its checks fail (it lets go of the base's update), PR Y is
// updated next, the base moves, and X's checks re-run green: both are
// behind and were updated by the pool. One of them is updated again and
// merged, then the other: neither waits for the other for ever.
func TestTwoUpdatedPRsNeverWaitOnEachOther(t *testing.T) {
	f := outdatedForge(true, 1, 2, 3)
	a := newFakeAgent(approver(f, time.Millisecond))
	cfg := testConfig(2)
	cfg.IdleExit = 0
	cfg.Fixers.Enabled = false
	f.ciDelay = 20 * cfg.PollInterval
	updated := func(except int) int {
		for n := 1; n <= 3; n++ {
			if n != except && len(effectsWith(f, fmt.Sprintf("#%d: update by", n))) > 0 {
				return n
			}
		}
		return 0
	}
	runUntil(t, cfg, f, a, func(ctx context.Context, p *Pool) {
		waitFor(ctx, func() bool { return updated(0) != 0 })
		x := updated(0)
		f.setCheck(x, "failure")
		waitFor(ctx, func() bool { return updated(x) != 0 })
		f.moveBase("pushed-by-a-person")
		f.setCheck(x, "success")
	}, func() bool { return f.isMerged(1) && f.isMerged(2) && f.isMerged(3) })
}

// TestAHeadsParentsAreReadOnce: a head the pool's update made is decided
// each cycle while its checks run, and each decision judges its approval
// on the head's parents. They never change for a commit: the pool reads
// them once per head.
func TestAHeadsParentsAreReadOnce(t *testing.T) {
	f, _ := mergeThreeBehind(t)
	updates := 0
	for _, c := range updatesAndMerges(f) {
		if strings.Contains(c, "update") {
			updates++
		}
	}
	f.mu.Lock()
	reads := f.calls["parents"]
	f.mu.Unlock()
	if updates == 0 || reads > updates {
		t.Errorf("%d reads of the heads' parents for %d updated heads, want one each", reads, updates)
	}
}

// TestARequestForChangesBeforeTheUpdateStands: PR 2, approved by the
// reviewer, is behind its base after PR 1 merges, and the pool updates it.
// While the update call is in flight a listed human (alice) requests
// changes on the approved head. The head the update makes differs from it
// only by the base: alice's request stands for it, as it stands on the
// forge (an official request for changes blocks a merge whatever commit it
// was on). The pool starts no session on the new head, whose approval
// would stand beside alice's request, and does not merge PR 2. Before, the
// pool weighed only the reviews of the new head: none, so it reviewed it
// again, its reviewer approved, and it merged over alice's request (the
// simulation's "counted approval false" at an update head, CI of 139a946).
func TestARequestForChangesBeforeTheUpdateStands(t *testing.T) {
	f := outdatedForge(true, 1, 2)
	a := newFakeAgent(approver(f, time.Millisecond))
	cfg := testConfig(1)
	cfg.HumanReviewers = append(cfg.HumanReviewers, "alice")
	var filed atomic.Bool
	f.onUpdate = func(n int) {
		if n == 2 && !filed.Swap(true) {
			f.review(2, "alice", forge.ReviewRequestChanges)
		}
	}
	runPool(t, cfg, f, a)
	if !filed.Load() {
		t.Fatal("PR 2 was never updated: alice's request for changes was never filed")
	}
	if !f.isMerged(1) {
		t.Errorf("PR 1 is not merged; effects %v", f.Effects())
	}
	if f.isMerged(2) {
		t.Errorf("PR 2 merged over alice's request for changes, filed on the head the pool updated; effects %v", f.Effects())
	}
	if _, prompts, _ := a.count(); prompts != 2 {
		t.Errorf("%d reviewer sessions, want 2 (one per PR): none on the head the update made while alice's request stands", prompts)
	}
}

// TestARequestOnTheMergedParentStands: PR 1's head A was approved by the
// reviewer, then alice requested changes on it; another pool merged the
// base into A (head U, parents A and the base tip), so this pool holds no
// memory of the update. Alice's request stands for U: this pool starts no
// session on it and does not merge it. Before, it weighed U's reviews
// alone, none, reviewed U, and merged over alice's request (the
// simulation, seed 35 of 40: "#5 merged at update-5-...: counted approval
// false", a request on the head one pool had updated from, merged by
// another pool after its own update).
func TestARequestOnTheMergedParentStands(t *testing.T) {
	f := newFakeForge(1)
	f.review(1, "reviewer", forge.ReviewApproved)
	f.review(1, "alice", forge.ReviewRequestChanges)
	f.base = fakeSHA("base-1")
	if res, err := f.Update(context.Background(), "o", "r", 1, "merge"); err != nil || res.Outcome != forgejo.UpdateDone {
		t.Fatalf("the other pool's update: %+v, %v", res, err)
	}
	a := newFakeAgent(approver(f, time.Millisecond))
	cfg := testConfig(1)
	cfg.HumanReviewers = append(cfg.HumanReviewers, "alice")
	runPool(t, cfg, f, a)
	if f.isMerged(1) {
		t.Errorf("PR 1 merged over alice's request for changes on the head its head merged the base into; effects %v", f.Effects())
	}
	if _, prompts, _ := a.count(); prompts != 0 {
		t.Errorf("%d reviewer sessions, want none while alice's request stands", prompts)
	}
}
