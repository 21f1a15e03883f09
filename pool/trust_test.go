package pool

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pool/claims"
	"pool/configs"
	"pool/forge"
	"pool/forgejo"
	"pool/lifecycle"
	"pool/texts"
)

func effectsWith(f *fakeForge, prefix string) []string {
	var out []string
	for _, e := range f.Effects() {
		if strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}

// TestOutsiderApprovalStartsAReviewNotAMerge: an approval by an account
// without write access on a fresh PR is no review. The pool starts its
// reviewer, who requests changes, and nothing merges.
func TestOutsiderApprovalStartsAReviewNotAMerge(t *testing.T) {
	f := newFakeForge(1)
	f.outsiderReview(1, "mallory", forge.ReviewApproved)
	a := newFakeAgent(func(pr int) (time.Duration, func(), string) {
		return time.Millisecond, func() { f.review(pr, "reviewer", forge.ReviewRequestChanges) },
			"REVIEW-RESULT: {\"decision\": \"changes_requested\", \"merge_status\": \"none\"}"
	})
	runPool(t, testConfig(1), f, a)
	if _, prompts, _ := a.count(); prompts != 1 {
		t.Errorf("reviewer sessions = %d, want 1", prompts)
	}
	if merges := effectsWith(f, "#1: merge"); len(merges) != 0 || f.prs[1].Merged {
		t.Errorf("merged on an outsider's approval: %v", merges)
	}
}

// TestOutsiderRequestForChangesBlocksNothing: a passer-by's request for
// changes neither stops the review nor the merge.
func TestOutsiderRequestForChangesBlocksNothing(t *testing.T) {
	f := newFakeForge(1)
	f.outsiderReview(1, "mallory", forge.ReviewRequestChanges)
	runPool(t, testConfig(1), f, newFakeAgent(approver(f, time.Millisecond)))
	if !f.prs[1].Merged {
		t.Errorf("not merged: %v", f.Effects())
	}
}

// TestProtectionTheFloor: two approvals required, the pool's reviewer
// gives one: one explanatory comment, no merge call, and the pool goes idle.
// When the rule changes to one approval, the PR merges.
func TestProtectionIsTheFloor(t *testing.T) {
	f := newFakeForge(1)
	f.protection = forge.Protection{Protected: true, UserCanMerge: true, RequiredApprovals: 2}
	a := newFakeAgent(approver(f, time.Millisecond))
	cfg := testConfig(1)
	cfg.IdleExit = 0
	runUntil(t, cfg, f, a, func(ctx context.Context, p *Pool) {
		waitFor(ctx, func() bool { return p.track(1).State == lifecycle.AwaitingHuman })
		time.Sleep(20 * cfg.PollInterval) // many cycles: no retries, no second note
		if n := len(effectsWith(f, "#1: comment Merging is on hold: needs 2 approvals; has 1")); n != 1 {
			t.Errorf("hold notes = %d, want 1: %v", n, f.Effects())
		}
		if m := effectsWith(f, "#1: merge"); len(m) != 0 {
			t.Errorf("merge called while the protection refuses it: %v", m)
		}
		f.mu.Lock()
		f.protection.RequiredApprovals = 1
		f.mu.Unlock()
	}, func() bool { return f.isMerged(1) }) // read again with the next full listing
	if _, prompts, _ := a.count(); prompts != 1 {
		t.Errorf("sessions = %d, want 1", prompts)
	}
}

// TestRequiredContextWithoutStatusesIsNotMerged: the protection names a
// required context and nothing reported: the approved PR waits; when the
// context reports success, it merges.
func TestRequiredContextWithoutStatusesIsNotMerged(t *testing.T) {
	f := newFakeForge(1)
	f.protection = forge.Protection{Protected: true, UserCanMerge: true, StatusCheck: true, StatusContexts: []string{"ci/*"}}
	head := f.prs[1].HeadSHA
	cfg := testConfig(1)
	cfg.IdleExit = 0
	runUntil(t, cfg, f, newFakeAgent(approver(f, time.Millisecond)), func(ctx context.Context, p *Pool) {
		waitFor(ctx, func() bool { return p.track(1).State == lifecycle.CIPending })
		time.Sleep(10 * cfg.PollInterval)
		if f.isMerged(1) {
			t.Errorf("merged with a required context unreported")
		}
		f.mu.Lock()
		f.statuses[head] = []forge.Status{{ID: 1, Context: "ci/test", State: "success"}}
		f.mu.Unlock()
	}, func() bool { return f.isMerged(1) })
}

// TestNoStatusesWaitForTheGrace: with nothing required and nothing
// reported, an approved head waits checks_grace before it merges.
func TestNoStatusesWaitForTheGrace(t *testing.T) {
	f := newFakeForge(1)
	cfg := testConfig(1)
	cfg.ChecksGrace = 300 * time.Millisecond
	start := time.Now()
	runPool(t, cfg, f, newFakeAgent(approver(f, time.Millisecond)))
	if !f.prs[1].Merged {
		t.Fatal("not merged after the grace period")
	}
	if merged := f.mergedAt(1); merged.Sub(start) < cfg.ChecksGrace {
		t.Errorf("merged %s after start, before the %s grace period", merged.Sub(start), cfg.ChecksGrace)
	}
}

// TestUnofficialReviewDoesNotKeepAClaimAlive: a dead pool's claim is
// stale; reviews by passers-by after it do not revive it.
func TestUnofficialReviewDoesNotKeepAClaimAlive(t *testing.T) {
	f := newFakeForge(1)
	old := time.Now().Add(-time.Hour)
	f.comments[1] = []forge.Comment{{ID: 100, Author: "pool-bot", Created: old,
		Body: claims.Body(claims.Claim{Instance: "dead-pool", SHA: f.prs[1].HeadSHA, At: old})}}
	f.nextID = 200
	f.outsiderReview(1, "mallory", forge.ReviewComment)
	runPool(t, testConfig(1), f, newFakeAgent(approver(f, time.Millisecond)))
	if !f.prs[1].Merged {
		t.Errorf("a stale claim kept alive by a passer-by's review blocked the PR: %v", f.Effects())
	}
}

// TestReviewerWithoutWriteAccessIsNotedAndHeld: the pool's own reviewer
// approves, but its account's review is not official: the pool retries with
// a back-off, says so once after the third session, starts no fourth
// session of that head (a second after the note, over ten of its
// back-offs) and merges nothing.
func TestReviewerWithoutWriteAccessIsNotedAndHeld(t *testing.T) {
	f := newFakeForge(1)
	a := newFakeAgent(func(pr int) (time.Duration, func(), string) {
		return time.Millisecond, func() { f.outsiderReview(pr, "reviewer", forge.ReviewApproved) }, approvedReply
	})
	cfg := testConfig(1)
	cfg.IdleExit = 0
	const note = "#1: comment Reviews keep failing: 3 reviewer sessions left no review that counts on this head; the approval by reviewer does not count"
	var noted time.Time
	runUntil(t, cfg, f, a, func(context.Context, *Pool) {}, func() bool {
		if noted.IsZero() && len(effectsWith(f, note)) > 0 {
			noted = time.Now()
		}
		return !noted.IsZero() && time.Since(noted) > time.Second
	})
	if n := effectsWith(f, note); len(n) != 1 {
		t.Errorf("want one note after the third session; effects %v", f.Effects())
	}
	if _, prompts, _ := a.count(); prompts != 3 {
		t.Errorf("%d sessions of the head, want 3: none after the note", prompts)
	}
	if n := effectsWith(f, "#1: comment Merging is on hold"); len(n) != 0 || f.prs[1].Merged {
		t.Errorf("want no blocked note and no merge; effects %v", f.Effects())
	}
}

// TestOutsiderApprovalDuringTheSessionParksNothing: an outsider approves
// the head while the first session runs, and that session stops without a
// review (as a reviewer told to stop on another's review would). The pool
// does not take the outsider's approval for the session's outcome: the next
// session reviews, and the PR merges, with no hold note.
func TestOutsiderApprovalDuringTheSessionParksNothing(t *testing.T) {
	f := newFakeForge(1)
	var sessions atomic.Int32
	a := newFakeAgent(func(pr int) (time.Duration, func(), string) {
		if sessions.Add(1) == 1 {
			return time.Millisecond, func() { f.outsiderReview(pr, "mallory", forge.ReviewApproved) },
				"Already reviewed by mallory.\nREVIEW-RESULT: {\"decision\": \"commented\", \"merge_status\": \"none\"}"
		}
		return approver(f, time.Millisecond)(pr)
	})
	runPool(t, testConfig(1), f, a)
	if !f.prs[1].Merged {
		t.Errorf("not merged: %v", f.Effects())
	}
	if n := effectsWith(f, "#1: comment Merging is on hold"); len(n) != 0 {
		t.Errorf("an outsider's approval held the PR: %v", n)
	}
	if n := sessions.Load(); n != 2 {
		t.Errorf("sessions = %d, want 2", n)
	}
}

// runUntil runs a pool until stop says so (checked every few ms), with
// during beside it.
func runUntil(t *testing.T, cfg configs.Config, f *fakeForge, a *fakeAgent, during func(context.Context, *Pool), stop func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := New(ctx, cfg, Deps{Forge: f, Agent: a, Now: f.now})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	go func() {
		during(ctx, p)
		waitFor(ctx, stop)
		stopRun()
	}()
	if _, err := p.Run(runCtx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the pool did not get there in time")
	}
}

// TestMergeQueueWaitsForTheForge: ten approved PRs, a forge that tests
// every other PR against the base for a while after each merge. One merge
// call in flight at a time, about one call per merged PR, no diagnostic
// comment for waiting on the forge, and every PR merged.
func TestMergeQueueWaitsForTheForge(t *testing.T) {
	prs := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	f := newFakeForge(prs...)
	f.recheck, f.mergeDelay = 30*time.Millisecond, 5*time.Millisecond
	for _, n := range prs {
		f.review(n, "reviewer", forge.ReviewApproved)
		f.statuses[f.prs[n].HeadSHA] = []forge.Status{{Context: "ci", State: "success"}}
	}
	cfg := testConfig(4)
	cfg.DiagnosticEvery = 2
	runPool(t, cfg, f, newFakeAgent(approver(f, time.Millisecond)))
	for _, n := range prs {
		if !f.prs[n].Merged {
			t.Errorf("PR #%d not merged", n)
		}
	}
	if f.peakInAir != 1 {
		t.Errorf("merge calls in flight at once = %d, want 1", f.peakInAir)
	}
	if calls := f.calls["merge"]; calls > 2*len(prs) {
		t.Errorf("merge calls = %d for %d PRs, want at most 2 per PR", calls, len(prs))
	}
	if diag := effectsWith(f, "#"); len(diag) > 0 {
		for _, e := range diag {
			if strings.Contains(e, "Merge retry") {
				t.Errorf("a wait for the forge's check counted as a failed attempt: %s", e)
			}
		}
	}
	if read := readsBetweenMerges(f.trail); len(read) > 0 {
		t.Errorf("after a merge the queue read PRs other than the next one merged: %v", read)
	}
	t.Logf("merge calls: %d for %d PRs", f.calls["merge"], len(prs))
}

// readsBetweenMerges lists the reads, between two merges, of a PR other
// than the two merged (the merged one is read again to confirm it).
func readsBetweenMerges(trail []string) []string {
	var out []string
	last := -1
	for i, e := range trail {
		if !strings.HasPrefix(e, "merged ") {
			continue
		}
		if last >= 0 {
			prev, next := strings.TrimPrefix(trail[last], "merged "), strings.TrimPrefix(e, "merged ")
			for _, r := range trail[last+1 : i] {
				if n := strings.TrimPrefix(r, "read "); n != prev && n != next {
					out = append(out, fmt.Sprintf("%s between the merges of %s and %s", r, prev, next))
				}
			}
		}
		last = i
	}
	return out
}

// TestSlotsRefillWhileTheQueueWaits: a merge call that does not come back
// holds neither the discovery loop nor a slot: the other PRs get their
// reviews meanwhile.
func TestSlotsRefillWhileTheQueueWaits(t *testing.T) {
	f := newFakeForge(1, 2, 3)
	f.review(1, "reviewer", forge.ReviewApproved)
	f.mergeGate = make(chan struct{})
	a := newFakeAgent(func(pr int) (time.Duration, func(), string) {
		return time.Millisecond, func() { f.review(pr, "reviewer", forge.ReviewRequestChanges) }, ""
	})
	cfg := testConfig(1)
	cfg.IdleExit = 0
	runUntil(t, cfg, f, a, func(ctx context.Context, p *Pool) {
		waitFor(ctx, func() bool { _, prompts, _ := a.count(); return prompts == 2 })
		close(f.mergeGate) // both reviews ran while the merge call hung
	}, func() bool { return f.isMerged(1) })
}

// TestOpenDependencyHoldsTheMergeWithOneNote: an approved, green PR that
// depends on an open issue gets one note and no merge call over many
// cycles; once the issue is closed it merges.
func TestOpenDependencyHoldsTheMergeWithOneNote(t *testing.T) {
	f := newFakeForge(1)
	f.deps = map[int][]string{1: {"#9"}}
	f.statuses[f.prs[1].HeadSHA] = []forge.Status{{Context: "ci", State: "success"}}
	cfg := testConfig(1)
	cfg.IdleExit, cfg.DiagnosticEvery = 0, 2
	runUntil(t, cfg, f, newFakeAgent(approver(f, time.Millisecond)), func(ctx context.Context, p *Pool) {
		waitFor(ctx, func() bool { return p.track(1).State == lifecycle.DependenciesOpen })
		time.Sleep(20 * cfg.PollInterval)
		if n := len(effectsWith(f, "#1: comment Merging is on hold: it depends on #9")); n != 1 {
			t.Errorf("hold notes = %d, want 1: %v", n, f.Effects())
		}
		if m := effectsWith(f, "#1: merge"); len(m) != 0 {
			t.Errorf("merge called while a dependency is open: %v", m)
		}
		if d := effectsWith(f, "#1: comment Merge retry"); len(d) != 0 {
			t.Errorf("diagnostics while waiting on a dependency: %v", d)
		}
		f.mu.Lock()
		f.deps = nil
		f.mu.Unlock()
	}, func() bool { return f.isMerged(1) })
}

// TestQuotaRefusalIsNotedOnceAndBacksOff: merges refused for the storage
// quota get one note, no diagnostic, and fewer calls as the back-off grows;
// once the forge takes the merge, the PR merges.
func TestQuotaRefusalIsNotedOnceAndBacksOff(t *testing.T) {
	f := newFakeForge(1)
	f.mergeAnswer[1] = forge.MergeResult{Outcome: forge.MergeQuota, Status: 413, Message: `{"message":"quota exceeded"}`}
	f.statuses[f.prs[1].HeadSHA] = []forge.Status{{Context: "ci", State: "success"}}
	cfg := testConfig(1)
	cfg.IdleExit, cfg.DiagnosticEvery = 0, 2
	const cycles = 40
	runUntil(t, cfg, f, newFakeAgent(approver(f, time.Millisecond)), func(ctx context.Context, p *Pool) {
		waitFor(ctx, func() bool { return p.track(1).State == lifecycle.QuotaExceeded })
		time.Sleep(cycles * cfg.PollInterval)
		if n := len(effectsWith(f, "#1: comment Merging is on hold: the forge refused the merge (HTTP 413)")); n != 1 {
			t.Errorf("hold notes = %d, want 1: %v", n, f.Effects())
		}
		if d := effectsWith(f, "#1: comment Merge retry"); len(d) != 0 {
			t.Errorf("diagnostics for a quota refusal: %v", d)
		}
		// back-offs of 1, 2, 4, 8, 16, 32 poll intervals fit about six calls in 40 intervals
		if m := effectsWith(f, "#1: merge"); len(m) > 8 {
			t.Errorf("%d merge calls in %d poll intervals: no back-off", len(m), cycles)
		}
		f.mu.Lock()
		delete(f.mergeAnswer, 1)
		f.mu.Unlock()
	}, func() bool { return f.isMerged(1) })
}

// TestPermanentMergeRefusalsAreNotedOnceAndBackOff: a merge refused by a
// server-side hook (409 PushRejected, which no wait cures) and a merge
// answered 500 time after time get one note, no diagnostic, and fewer
// calls as the back-off grows.
func TestPermanentMergeRefusalsAreNotedOnceAndBackOff(t *testing.T) {
	tests := []struct {
		name, note string
		answer     forge.MergeResult
	}{
		{name: "pre-receive hook", note: "#1: comment Merging is on hold: the forge refused the merge: a hook",
			answer: forgejo.MergeAnswer(409, `{"message":"PushRejected with remote message: User permission denied for writing"}`)},
		{name: "server error", note: "#1: comment Merging is on hold: the forge answered the merge with a server error",
			answer: forgejo.MergeAnswer(500, `{"message":"internal error"}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeForge(1)
			f.mergeAnswer[1] = tc.answer
			f.statuses[f.prs[1].HeadSHA] = []forge.Status{{Context: "ci", State: "success"}}
			cfg := testConfig(1)
			cfg.IdleExit = 0
			const cycles = 40
			runUntil(t, cfg, f, newFakeAgent(approver(f, time.Millisecond)), func(ctx context.Context, p *Pool) {
				waitFor(ctx, func() bool { return len(effectsWith(f, "#1: merge")) > 0 })
				time.Sleep(cycles * cfg.PollInterval)
				if n := len(effectsWith(f, tc.note)); n != 1 {
					t.Errorf("hold notes = %d, want 1: %v", n, f.Effects())
				}
				if d := effectsWith(f, "#1: comment Merge retry"); len(d) != 0 {
					t.Errorf("diagnostics for a refusal: %v", d)
				}
				// back-offs of 1, 2, 4, 8, 16, 32 poll intervals fit about six calls in 40 intervals
				if m := effectsWith(f, "#1: merge"); len(m) > 8 {
					t.Errorf("%d merge calls in %d poll intervals: no back-off", len(m), cycles)
				}
				f.mu.Lock()
				delete(f.mergeAnswer, 1)
				f.mu.Unlock()
				f.push(1, fakeSHA("sha-1-b")) // a new head is reviewed and merged
				f.mu.Lock()
				f.statuses[f.prs[1].HeadSHA] = []forge.Status{{Context: "ci", State: "success"}}
				f.mu.Unlock()
			}, func() bool { return f.isMerged(1) })
		})
	}
}

// TestANoReviewNoteOfThePoolsAccountHoldsAnotherPool: the forge shows the
// no-review note for the head, posted by the pool's account (another pool
// of the repository, or this one before its state was lost): this pool
// starts no session of that head. The same note posted by another account
// is data, not the pool's word: that PR is reviewed and merged.
func TestANoReviewNoteOfThePoolsAccountHoldsAnotherPool(t *testing.T) {
	f := newFakeForge(1, 2)
	for n, author := range map[int]string{1: "pool-bot", 2: "mallory"} {
		body := texts.NoReviewBody(f.prs[n].HeadSHA, "3 reviewer sessions left no review that counts on this head", "allow review")
		f.comments[n] = append(f.comments[n], forge.Comment{ID: int64(100 + n), Author: author, Body: body})
	}
	a := newFakeAgent(approver(f, time.Millisecond))
	runPool(t, testConfig(1), f, a)
	if f.prs[1].Merged || f.claimsOn(1) != 0 {
		t.Errorf("#1: merged %v, %d claims; want no session of the noted head", f.prs[1].Merged, f.claimsOn(1))
	}
	if !f.prs[2].Merged {
		t.Errorf("#2, whose note an outsider imitated, not merged: %v", f.Effects())
	}
}

// TestSessionsThatFailToStartAreNoNoReviewHold: the agent server refuses
// every session's start (its prompt call fails) more times than the
// no-review hold counts; then it works. The head backs off and is tried
// again, with no no-review note and no hold: no session ran, so nothing
// says its reviews cannot count. The PR is reviewed and merged once the
// server answers (TestTwentyPercentFaults: 3 starts failed on forge and
// agent faults, and the PR was held for good).
func TestSessionsThatFailToStartAreNoNoReviewHold(t *testing.T) {
	f := newFakeForge(1)
	a := newFakeAgent(approver(f, time.Millisecond))
	a.setDown("prompt", true)
	cfg := testConfig(1)
	cfg.IdleExit = 0
	runUntil(t, cfg, f, a, func(ctx context.Context, _ *Pool) {
		waitFor(ctx, func() bool { a.mu.Lock(); defer a.mu.Unlock(); return len(a.createdIn) > lifecycle.NoReviewNoteAfter })
		a.setDown("prompt", false)
	}, func() bool { return f.isMerged(1) })
	if n := effectsWith(f, "#1: comment Reviews keep failing"); len(n) != 0 {
		t.Errorf("sessions that never started were noted as leaving no review: %v", n)
	}
}
