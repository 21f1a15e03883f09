package pool

import (
	"context"
	"errors"
	"fmt"
	"pool/forge"
	"pool/texts"
	"slices"
	"strings"
	"testing"
	"time"

	"pool/agent"
	"pool/claims"
	"pool/configs"
	"pool/forgejo"
	"pool/lifecycle"
	"pool/report"
)

// testConfig is the defaults with fakes' addresses and times short enough
// for tests (below the floors a user may set: the servers are fakes).
func testConfig(workers int) configs.Config {
	cfg := configs.Default()
	cfg.ForgejoURL, cfg.Token, cfg.Owner, cfg.Name = "http://forge.test", "t", "o", "r"
	cfg.AgentURL, cfg.Workers, cfg.InstanceID = "http://agent.test", workers, "pool-test"
	cfg.PollInterval, cfg.StatusInterval = 20*time.Millisecond, 2*time.Millisecond
	cfg.IdleExit, cfg.SessionTimeout, cfg.ShutdownTimeout = 3, time.Minute, time.Second
	cfg.ChecksGrace = 0 // the fakes report no CI: no wait for one
	// The fakes' sessions file their reviews as "reviewer", with no session
	// mark: a listed human's reviews count without one (vouch_test.go has
	// the reviewer account whose reviews need it).
	cfg.HumanReviewers = []string{"reviewer"}
	return cfg
}

const approvedReply = "LGTM\nREVIEW-RESULT: {\"decision\": \"approved\", \"merge_status\": \"none\"}"

// approver is a reviewer that approves after d and leaves merging to the pool.
func approver(f *fakeForge, d time.Duration) func(int) (time.Duration, func(), string) {
	return func(pr int) (time.Duration, func(), string) {
		return d, func() { f.review(pr, "reviewer", forge.ReviewApproved) }, approvedReply
	}
}

func runPool(t *testing.T, cfg configs.Config, f *fakeForge, a Agent) Report {
	return runPoolWith(t, cfg, f, a, nil)
}

// runPoolWith runs a pool to its end; during, if set, runs beside it.
func runPoolWith(t *testing.T, cfg configs.Config, f *fakeForge, a Agent, during func(context.Context, *Pool)) Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := New(ctx, cfg, Deps{Forge: f, Agent: a})
	if err != nil {
		t.Fatal(err)
	}
	if during != nil {
		go during(ctx, p)
	}
	rep, err := p.Run(ctx)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("pool did not finish in time")
	}
	return rep
}

func TestRunMergesEveryPRWithinTheSlotLimit(t *testing.T) {
	f := newFakeForge(1, 2, 3, 4, 5, 6)
	a := newFakeAgent(approver(f, 10*time.Millisecond))
	rep := runPool(t, testConfig(2), f, a)

	for n, pr := range f.prs {
		if !pr.Merged {
			t.Errorf("PR #%d not merged", n)
		}
		if c := f.claimsOn(n); c != 1 {
			t.Errorf("PR #%d has %d claims, want 1", n, c)
		}
	}
	sessions, prompts, peak := a.count()
	if sessions != 0 || prompts != 6 {
		t.Errorf("sessions left %d, prompts %d; want 0 and 6", sessions, prompts)
	}
	if peak > 2 || rep.PeakSlots > 2 {
		t.Errorf("peak concurrency %d (slots %d), want at most 2", peak, rep.PeakSlots)
	}
	if rep.Reviewed != 6 || rep.Merged != 6 || len(rep.PendingMerge) != 0 {
		t.Errorf("report %+v", rep)
	}
	for _, p := range a.prompts {
		if !strings.HasPrefix(p, "Review PR #") || strings.Contains(p, "Repo: o/r.") == false {
			t.Errorf("prompt does not start as contracted: %q", firstLine(p))
		}
	}
}

func TestReviewerClaimingMergedIsNotBelieved(t *testing.T) {
	f := newFakeForge(1)
	f.mergeAnswer[1] = forge.MergeResult{Outcome: forge.MergeNotReady, Status: 405, Message: "Please try again later"}
	liar := func(pr int) (time.Duration, func(), string) {
		return time.Millisecond, func() { f.review(pr, "reviewer", forge.ReviewApproved) },
			"REVIEW-RESULT: {\"decision\": \"approved\", \"merge_status\": \"merged\"}"
	}
	cfg := testConfig(1)
	cfg.IdleExit = 0
	cfg.Once = true
	rep := runPool(t, cfg, f, newFakeAgent(liar))
	if f.prs[1].Merged {
		t.Fatal("fake merged despite the 405 answer")
	}
	if rep.Merged != 0 || !slices.Equal(rep.PendingMerge, []int{1}) {
		t.Errorf("report counts an unmerged PR as merged: %+v", rep)
	}
}

func TestGarbageFromTheAgentIsAResultNotACrash(t *testing.T) {
	f := newFakeForge(1)
	calls := 0
	a := newFakeAgent(func(pr int) (time.Duration, func(), string) {
		calls++
		if calls == 1 {
			return time.Millisecond, nil, "}}} not json REVIEW-RESULT: {oops"
		}
		return time.Millisecond, func() { f.review(pr, "reviewer", forge.ReviewApproved) }, approvedReply
	})
	rep := runPool(t, testConfig(1), f, a)
	if !f.prs[1].Merged {
		t.Errorf("PR not merged after the agent's garbage answer")
	}
	if _, prompts, _ := a.count(); prompts != 2 {
		t.Errorf("prompts = %d, want 2 (garbage, then a real review)", prompts)
	}
	if rep.Merged != 1 {
		t.Errorf("report %+v", rep)
	}
}

func TestSkipLabelAndForeignClaims(t *testing.T) {
	f := newFakeForge(1, 2, 3, 4)
	f.prs[1].Labels = []string{"Needs Feedback"}
	now := time.Now()
	// PR 2: a live claim by another trusted pool blocks it.
	f.comments[2] = []forge.Comment{{ID: 100, Author: "other-pool-bot", Created: now,
		Body: claims.Body(claims.Claim{Instance: "other", SHA: f.prs[2].HeadSHA, At: now})}}
	// PR 3: the same claim by an untrusted account does not.
	f.comments[3] = []forge.Comment{{ID: 101, Author: "mallory", Created: now,
		Body: claims.Body(claims.Claim{Instance: "fake", SHA: f.prs[3].HeadSHA, At: now})}}
	f.nextID = 200
	cfg := testConfig(2)
	cfg.TrustedClaimers = []string{"other-pool-bot"}
	rep := runPool(t, cfg, f, newFakeAgent(approver(f, time.Millisecond)))

	want := map[int]bool{1: false, 2: false, 3: true, 4: true}
	for n, merged := range want {
		if f.prs[n].Merged != merged {
			t.Errorf("PR #%d merged = %v, want %v", n, f.prs[n].Merged, merged)
		}
	}
	if rep.Skipped != 1 {
		t.Errorf("skipped = %d, want 1", rep.Skipped)
	}
}

func TestPendingChecksCostOneSession(t *testing.T) {
	f := newFakeForge(1)
	head := f.prs[1].HeadSHA
	f.statuses[head] = []forge.Status{{ID: 1, Context: "ci", State: "pending"}}
	a := newFakeAgent(approver(f, time.Millisecond))
	cfg := testConfig(1)
	cfg.DiagnosticEvery = 4
	runPoolWith(t, cfg, f, a, func(ctx context.Context, p *Pool) {
		waitFor(ctx, func() bool { return len(effectsWith(f, "#1: comment Merge retry")) > 0 })
		f.mu.Lock()
		f.statuses[head] = []forge.Status{{ID: 2, Context: "ci", State: "success"}}
		f.mu.Unlock()
	})
	if !f.prs[1].Merged {
		t.Fatal("not merged after checks passed")
	}
	if _, prompts, _ := a.count(); prompts != 1 {
		t.Errorf("sessions = %d, want 1 for a PR whose checks were pending a while", prompts)
	}
	diag := 0
	for _, e := range f.Effects() {
		if strings.HasPrefix(e, "#1: comment Merge retry") {
			diag++
		}
	}
	if diag == 0 {
		t.Errorf("no diagnostic comment after many pending cycles: %v", f.Effects())
	}
}

func TestConflictIsNotedOnceAndNotRetried(t *testing.T) {
	f := newFakeForge(1)
	f.mergeAnswer[1] = forge.MergeResult{Outcome: forge.MergeConflict, Status: 409}
	rep := runPool(t, testConfig(1), f, newFakeAgent(approver(f, time.Millisecond)))
	merges, notes := 0, 0
	for _, e := range f.Effects() {
		if strings.HasPrefix(e, "#1: merge") {
			merges++
		}
		if strings.HasPrefix(e, "#1: comment Merge conflict detected. The implementing agent needs to rebase this branch onto latest main.") {
			notes++
		}
	}
	if merges != 1 || notes != 1 || rep.Conflicts != 1 {
		t.Errorf("merges %d, conflict notes %d, report %+v; want 1, 1, 1\n%v", merges, notes, rep, f.Effects())
	}
}

// TestLostMergeRaceIsNoConflict: Forgejo answers 409 with its error struct
// when another merge of the PR won the race; the PR is merged, and the pool
// must not post a conflict comment.
func TestLostMergeRaceIsNoConflict(t *testing.T) {
	f := newFakeForge(1)
	f.lostRace[1] = true
	rep := runPool(t, testConfig(1), f, newFakeAgent(approver(f, time.Millisecond)))
	for _, e := range f.Effects() {
		if strings.Contains(e, "Merge conflict detected") {
			t.Errorf("a conflict comment on a merged PR: %q", e)
		}
	}
	if !f.prs[1].Merged || rep.Merged != 1 || rep.Conflicts != 0 {
		t.Errorf("merged %v, report %+v; want merged, counted, no conflict", f.prs[1].Merged, rep)
	}
}

func TestForgeErrorsAreRetriedNotFatal(t *testing.T) {
	f := newFakeForge(1)
	f.failOps["list"] = &forgejo.Error{Op: "list", Status: 500, Retryable: true, Err: errors.New("boom")}
	go func() {
		time.Sleep(100 * time.Millisecond)
		f.mu.Lock()
		delete(f.failOps, "list")
		f.mu.Unlock()
	}()
	runPool(t, testConfig(1), f, newFakeAgent(approver(f, time.Millisecond)))
	if !f.prs[1].Merged {
		t.Error("not merged once the forge recovered")
	}
}

func TestRejectedTokenIsFatal(t *testing.T) {
	f := newFakeForge(1)
	f.failOps["list"] = &forgejo.Error{Op: "list", Status: 401, Err: forgejo.ErrUnauthorized}
	ctx := context.Background()
	p, err := New(ctx, testConfig(1), Deps{Forge: f, Agent: newFakeAgent(approver(f, time.Millisecond))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx); !errors.Is(err, forgejo.ErrUnauthorized) {
		t.Errorf("Run = %v, want ErrUnauthorized", err)
	}
}

func TestChangesRequestedWaitsForNewHead(t *testing.T) {
	f := newFakeForge(1)
	reviews := 0
	a := newFakeAgent(func(pr int) (time.Duration, func(), string) {
		reviews++
		if reviews == 1 {
			return time.Millisecond, func() { f.review(pr, "reviewer", forge.ReviewRequestChanges) },
				"REVIEW-RESULT: {\"decision\": \"changes_requested\", \"merge_status\": \"none\"}"
		}
		return time.Millisecond, func() { f.review(pr, "reviewer", forge.ReviewApproved) }, approvedReply
	})
	cfg := testConfig(1)
	cfg.IdleExit = 50 // the push below must come before the idle exit
	rep := runPoolWith(t, cfg, f, a, func(ctx context.Context, p *Pool) {
		waitFor(ctx, func() bool { return p.track(1).State == lifecycle.ChangesRequested })
		f.push(1, fakeSHA("sha-1-b"))
	})
	if !f.prs[1].Merged {
		t.Fatal("not merged after the fix was pushed")
	}
	if reviews != 2 {
		t.Errorf("sessions = %d, want 2 (changes requested, then re-review of the new head)", reviews)
	}
	if !strings.Contains(a.prompts[1], "Head SHA: "+fakeSHA("sha-1-b")) || !strings.Contains(a.prompts[1], "reviewed before") {
		t.Errorf("re-review prompt: %q", a.prompts[1])
	}
	if rep.ChangesRequested != 1 {
		t.Errorf("report %+v", rep)
	}
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) {
	for !cond() && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
}

func TestRelaunchAdoptsSessionsInsteadOfStartingNewOnes(t *testing.T) {
	f := newFakeForge(1, 2)
	a := newFakeAgent(approver(f, time.Millisecond))
	// A previous run left a finished session for PR 1 (its reviewer approved)
	// and a session for PR 2 that it never got to prompt.
	f.review(1, "reviewer", forge.ReviewApproved)
	a.sessions["old-1"] = &fakeSession{id: "old-1", title: texts.SessionTitle("o/r", 1), prompted: true, done: true, reply: approvedReply}
	a.sessions["old-2"] = &fakeSession{id: "old-2", title: texts.SessionTitle("o/r", 2)}
	rep := runPool(t, testConfig(2), f, a)

	if !f.prs[1].Merged || !f.prs[2].Merged {
		t.Fatalf("merged: #1 %v, #2 %v", f.prs[1].Merged, f.prs[2].Merged)
	}
	sessions, prompts, _ := a.count()
	if prompts != 1 {
		t.Errorf("prompts = %d, want 1 (only PR 2; PR 1's session was adopted)", prompts)
	}
	if sessions != 0 {
		t.Errorf("%d sessions left", sessions)
	}
	if rep.Reviewed != 2 {
		t.Errorf("report %+v", rep)
	}
}

// TestRelaunchLeavesAnotherRepositorysSessions: on an agent server shared
// with a pool of another repository, whose PRs have the same numbers, a
// relaunch adopts its own session (here in the old title form, as a single
// repository pool may) and neither adopts nor deletes the other pool's.
func TestRelaunchLeavesAnotherRepositorysSessions(t *testing.T) {
	f := newFakeForge(1, 2)
	a := newFakeAgent(approver(f, time.Millisecond))
	f.review(2, "reviewer", forge.ReviewApproved)
	a.sessions["theirs-1"] = &fakeSession{id: "theirs-1", title: texts.SessionTitle("o/other", 1), prompted: true, busy: true}
	a.sessions["theirs-2"] = &fakeSession{id: "theirs-2", title: texts.SessionTitle("o/other", 2)} // never prompted
	a.sessions["old-2"] = &fakeSession{id: "old-2", title: texts.SessionTitlePrefix + "PR-2", prompted: true, done: true, reply: approvedReply}
	cfg := testConfig(2)
	cfg.SessionTimeout = time.Second // a pool that took theirs-1 would time it out and delete it
	runPool(t, cfg, f, a)

	if !f.prs[1].Merged || !f.prs[2].Merged {
		t.Fatalf("merged: #1 %v, #2 %v", f.prs[1].Merged, f.prs[2].Merged)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var left []string
	for id := range a.sessions {
		left = append(left, id)
	}
	slices.Sort(left)
	if want := []string{"theirs-1", "theirs-2"}; !slices.Equal(left, want) {
		t.Errorf("sessions left %v, want %v: the other repository's, untouched", left, want)
	}
	if len(a.prompts) != 1 {
		t.Errorf("%d prompts, want 1: PR 1 gets its own session, PR 2's old one is adopted", len(a.prompts))
	}
	if len(a.aborted) != 0 {
		t.Errorf("aborted %v", a.aborted)
	}
	if s := a.sessions["theirs-1"]; s == nil || !s.busy {
		t.Errorf("the other pool's running session was disturbed: %+v", s)
	}
}

func TestLostStateRebuildsAttemptsFromDiagnostics(t *testing.T) {
	f := newFakeForge(1)
	f.review(1, "reviewer", forge.ReviewApproved)
	f.statuses[f.prs[1].HeadSHA] = []forge.Status{{ID: 1, Context: "ci", State: "pending"}}
	f.comments[1] = []forge.Comment{
		{ID: 50, Author: "pool-bot", Body: texts.Sign(texts.DiagnosticBody(20, "pending", "checks pending", ""))},
		{ID: 51, Author: "mallory", Body: texts.DiagnosticBody(90, "pending", "checks pending", "")},
	}
	f.nextID = 100
	cfg := testConfig(1)
	cfg.IdleExit, cfg.Once = 0, true
	p, err := New(context.Background(), cfg, Deps{Forge: f, Agent: newFakeAgent(approver(f, time.Millisecond))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := p.track(1).Attempts; got != 20 {
		t.Errorf("attempts = %d, want 20 (recovered from our own marker; a wait for checks makes no merge call)", got)
	}
}

// fakeDigests serves one open item until the PR's head moves, then none.
type fakeDigests struct {
	f     *fakeForge
	calls int
}

func (d *fakeDigests) Digest(_ context.Context, n int) (report.Digest, error) {
	d.calls++
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	if d.f.prs[n].HeadSHA != fakeSHA("sha-1-b") {
		return report.Digest{}, nil
	}
	return report.Digest{PR: n, Items: []forge.Item{{Reason: "changes-requested", Source: "review", ID: 9,
		Body: "please handle the nil case", Answers: "r9-0badc0de"}}}, nil
}

func TestReReviewPromptCarriesOpenItems(t *testing.T) {
	f := newFakeForge(1)
	reviews := 0
	a := newFakeAgent(func(pr int) (time.Duration, func(), string) {
		reviews++
		if reviews == 1 {
			return time.Millisecond, func() { f.review(pr, "reviewer", forge.ReviewRequestChanges) }, ""
		}
		return time.Millisecond, func() { f.review(pr, "reviewer", forge.ReviewApproved) }, approvedReply
	})
	cfg := testConfig(1)
	cfg.IdleExit = 50
	d := &fakeDigests{f: f}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := New(ctx, cfg, Deps{Forge: f, Agent: a, Digests: d})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		waitFor(ctx, func() bool { return p.track(1).State == lifecycle.ChangesRequested })
		f.push(1, fakeSHA("sha-1-b"))
	}()
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(a.prompts) != 2 {
		t.Fatalf("prompts = %d, want 2", len(a.prompts))
	}
	if strings.Contains(a.prompts[0], "r9-0badc0de") {
		t.Errorf("first review got items it should not have")
	}
	for _, want := range []string{"please handle the nil case", `"answers":"r9-0badc0de"`, "<!-- pool-agent-reply answers=<token> -->"} {
		if !strings.Contains(a.prompts[1], want) {
			t.Errorf("re-review prompt lacks %q:\n%s", want, a.prompts[1])
		}
	}
	if d.calls < 2 {
		t.Errorf("digest read %d times, want a read before and after the re-review", d.calls)
	}
}

// TestQuietCycleCostsOneRequest: with 500 open PRs that all wait for their
// authors, a cycle in which nothing changed asks the forge one question.
func TestQuietCycleCostsOneRequest(t *testing.T) {
	nums := make([]int, 500)
	for i := range nums {
		nums[i] = i + 1
	}
	f := newFakeForge(nums...)
	for _, n := range nums {
		f.review(n, "reviewer", forge.ReviewRequestChanges)
	}
	cfg := testConfig(4)
	cfg.IdleExit = 6
	p, err := New(context.Background(), cfg, Deps{Forge: f, Agent: newFakeAgent(approver(f, time.Millisecond))})
	if err != nil {
		t.Fatal(err)
	}
	before := f.requests()
	rep, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	spent := f.requests() - before
	// First cycle: the forge's clock, one full listing, each PR's reviews. Then five quiet cycles.
	firstCycle := 2 + len(nums)
	quiet := rep.Cycles - 1
	if quiet != 5 {
		t.Fatalf("cycles = %d, want 6", rep.Cycles)
	}
	if perQuiet := float64(spent-firstCycle) / float64(quiet); perQuiet != 1 {
		t.Errorf("requests per quiet cycle = %.1f (%v), want 1", perQuiet, f.calls)
	}
}

// hangingThenApproving hangs its first session forever, then approves.
func hangingThenApproving(f *fakeForge) func(int) (time.Duration, func(), string) {
	calls := 0
	return func(pr int) (time.Duration, func(), string) {
		calls++
		if calls == 1 {
			return time.Hour, nil, ""
		}
		return time.Millisecond, func() { f.review(pr, "reviewer", forge.ReviewApproved) }, approvedReply
	}
}

func TestSessionTimeoutAbortsAndRequeues(t *testing.T) {
	f := newFakeForge(1)
	a := newFakeAgent(hangingThenApproving(f))
	cfg := testConfig(1)
	cfg.SessionTimeout = 100 * time.Millisecond
	runPool(t, cfg, f, a)
	if !f.prs[1].Merged {
		t.Fatal("PR not merged after the hung session was aborted")
	}
	if len(a.aborted) == 0 || a.aborted[0] != "ses_1" {
		t.Errorf("aborted = %v, want the hung ses_1 first", a.aborted)
	}
}

func TestPermissionAskIsTreatedAsStuck(t *testing.T) {
	f := newFakeForge(1)
	a := newFakeAgent(hangingThenApproving(f))
	a.asks = []agent.Permission{{ID: "per_1", SessionID: "ses_1", Type: "bash", Patterns: []string{"rm -rf /"}}}
	runPool(t, testConfig(1), f, a)
	if !f.prs[1].Merged {
		t.Fatal("PR not merged after the stuck session was aborted")
	}
	if len(a.aborted) == 0 || a.aborted[0] != "ses_1" {
		t.Errorf("aborted = %v, want the stuck ses_1", a.aborted)
	}
}

func TestShutdownLeavesRunningSessionsForTheNextStart(t *testing.T) {
	for _, abort := range []bool{false, true} {
		t.Run(fmt.Sprintf("abort_on_exit=%v", abort), func(t *testing.T) {
			f := newFakeForge(1)
			a := newFakeAgent(func(int) (time.Duration, func(), string) { return time.Hour, nil, "" })
			cfg := testConfig(1)
			cfg.AbortOnExit = abort
			ctx, cancel := context.WithCancel(context.Background())
			p, err := New(ctx, cfg, Deps{Forge: f, Agent: a})
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				waitFor(ctx, func() bool { _, prompts, _ := a.count(); return prompts == 1 })
				cancel()
			}()
			rep, err := p.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sessions, _, _ := a.count()
			if abort && (sessions != 0 || len(a.aborted) != 1) {
				t.Errorf("abort on exit: %d sessions left, aborted %v; want 0 and one abort", sessions, a.aborted)
			}
			if !abort && (sessions != 1 || len(a.aborted) != 0) {
				t.Errorf("default exit: %d sessions left, aborted %v; want the session left running", sessions, a.aborted)
			}
			if f.claimsOn(1) != 1 || rep.Reviewed != 0 {
				t.Errorf("claims %d, report %+v", f.claimsOn(1), rep)
			}
		})
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	f := newFakeForge(1, 2)
	f.review(2, "reviewer", forge.ReviewApproved)
	a := newFakeAgent(approver(f, time.Millisecond))
	cfg := testConfig(2)
	cfg.DryRun = true
	runPool(t, cfg, f, a)
	if effects := f.Effects(); len(effects) != 0 {
		t.Errorf("dry run changed the forge: %v", effects)
	}
	if sessions, prompts, _ := a.count(); sessions != 0 || prompts != 0 {
		t.Errorf("dry run started sessions: %d, prompts %d", sessions, prompts)
	}
	if f.prs[2].Merged {
		t.Error("dry run merged")
	}
}

// TestLostPromptAnswerKeepsTheSession: the agent server takes a prompt but
// its answer is lost; the pool finds the prompt in the session and follows
// it, rather than deleting a running reviewer and starting a second one on
// the same head.
func TestLostPromptAnswerKeepsTheSession(t *testing.T) {
	f := newFakeForge(1)
	a := newFakeAgent(approver(f, 50*time.Millisecond))
	a.lostAnswers = 1
	runPool(t, testConfig(1), f, a)
	if !f.prs[1].Merged {
		t.Errorf("PR #1 not merged")
	}
	if sessions, prompts, _ := a.count(); prompts != 1 || sessions != 0 {
		t.Errorf("%d prompts and %d sessions left; want one prompt and none left", prompts, sessions)
	}
}

// TestFailingStepsAreNotIdle: cycles in which a PR's step failed (the forge
// answering errors for its reviews) are work still to do, not idle ones:
// the pool does not reach its idle exit before the forge answers again and
// the PR merges.
func TestFailingStepsAreNotIdle(t *testing.T) {
	f := newFakeForge(1)
	f.mu.Lock()
	f.failOps["reviews"] = errors.New("HTTP 502: bad gateway")
	f.mu.Unlock()
	a := newFakeAgent(approver(f, 10*time.Millisecond))
	cfg := testConfig(1) // idle exit after 3 quiet cycles of 20 ms
	rep := runPoolWith(t, cfg, f, a, func(ctx context.Context, p *Pool) {
		select {
		case <-time.After(20 * cfg.PollInterval):
		case <-ctx.Done():
		}
		f.mu.Lock()
		delete(f.failOps, "reviews")
		f.mu.Unlock()
	})
	if !f.prs[1].Merged || rep.Merged != 1 {
		t.Errorf("PR #1 merged %v, report %d merged: the pool left while its step was failing", f.prs[1].Merged, rep.Merged)
	}
}

// TestAQueuedPRListedClosedIsNotIdle: a PR whose merge call went through
// but whose answer was lost is listed closed before the merge queue reads
// it again. The queue still holds it, so the cycle is not idle: the pool
// must not reach its idle exit before the queue has settled the merge (a
// fault run left with "11 merged, want 12").
func TestAQueuedPRListedClosedIsNotIdle(t *testing.T) {
	f := newFakeForge(1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := New(ctx, testConfig(1), Deps{Forge: f, Agent: newFakeAgent(approver(f, 0))})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	head := f.prs[1].HeadSHA
	f.prs[1].Merged, f.prs[1].State = true, "closed"
	f.touch(1)
	f.mu.Unlock()
	p.queue.add(1, head, p.now())
	res, err := p.cycle(ctx, ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.quiet() || res.queued != 1 {
		t.Errorf("cycle %+v with PR #1 in the merge queue: want 1 queued, not quiet", res)
	}
}

// TestWaitingChecksAreNoSpam: an approved PR whose check stays pending and
// one whose check fails, fixers off, decided for 200 poll intervals: no
// merge call is made, so no attempt is counted, and the diagnostics come
// further and further apart (after 10, 20, 40, 80 intervals: at most five
// each), without a word of a fixer.
func TestWaitingChecksAreNoSpam(t *testing.T) {
	f := newFakeForge(1, 2)
	f.statuses[f.prs[1].HeadSHA] = []forge.Status{{ID: 1, Context: "ci", State: "pending"}}
	f.statuses[f.prs[2].HeadSHA] = []forge.Status{{ID: 2, Context: "ci", State: "failure"}}
	cfg := testConfig(2)
	cfg.IdleExit, cfg.DiagnosticEvery, cfg.Fixers.Enabled = 0, 10, false
	const cycles = 200
	runUntil(t, cfg, f, newFakeAgent(approver(f, time.Millisecond)), func(ctx context.Context, p *Pool) {
		waitFor(ctx, func() bool {
			return p.track(1).State == lifecycle.CIPending && p.track(2).State == lifecycle.CIFailing
		})
		time.Sleep(cycles * cfg.PollInterval)
		for n := 1; n <= 2; n++ {
			if a := p.track(n).Attempts; a != 0 {
				t.Errorf("#%d: %d attempts counted, want 0: no merge call was made", n, a)
			}
			diags := effectsWith(f, fmt.Sprintf("#%d: comment Merge retry", n))
			if len(diags) == 0 || len(diags) > 5 {
				t.Errorf("#%d: %d diagnostics in %d poll intervals, want 1 to 5: %v", n, len(diags), cycles, diags)
			}
			f.mu.Lock()
			for _, c := range f.comments[n] {
				if strings.Contains(c.Body, "fixer") && !strings.Contains(c.Body, "fixers are off") {
					t.Errorf("#%d: a comment speaks of a fixer with fixers off: %q", n, c.Body)
				}
			}
			f.mu.Unlock()
		}
	}, func() bool { return true })
}
