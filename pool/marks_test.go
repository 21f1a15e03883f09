package pool

import (
	"context"
	"strings"
	"testing"
	"time"

	"pool/forge"
	"pool/forgejo"
	"pool/lifecycle"
	"pool/store"
)

// TestFailedConflictNoteIsPostedNextTime: the merge finds a conflict and
// posting its note fails; the conflict is remembered, not the note, so the
// next pass posts it, once, and the PR is not merged again.
func TestFailedConflictNoteIsPostedNextTime(t *testing.T) {
	f := newFakeForge(1)
	f.mergeAnswer[1] = forge.MergeResult{Outcome: forge.MergeConflict, Status: 409}
	f.failNotes["Merge conflict detected"] = 1
	rep := runPool(t, testConfig(1), f, newFakeAgent(approver(f, time.Millisecond)))
	merges, notes := 0, 0
	for _, e := range f.Effects() {
		if strings.HasPrefix(e, "#1: merge") {
			merges++
		}
		if strings.HasPrefix(e, "#1: comment Merge conflict detected.") {
			notes++
		}
	}
	if f.failNotes["Merge conflict detected"] != 0 {
		t.Fatalf("the note's post never failed: the test tests nothing")
	}
	if merges != 1 || notes != 1 {
		t.Errorf("merges %d, conflict notes %d, report %+v; want 1 merge and the note posted once after its failure\n%v", merges, notes, rep, f.Effects())
	}
}

// TestFailedDisarmIsRetried: an auto-merge an older pool armed is
// cancelled; when the cancel fails, the next decision cancels it again.
func TestFailedDisarmIsRetried(t *testing.T) {
	f := newFakeForge(1)
	f.failTimes["cancel auto-merge"] = 1
	st, err := store.Open(t.TempDir(), "o", "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	head := f.prs[1].HeadSHA
	armed := lifecycle.Track{State: lifecycle.MergeScheduled, HeadSHA: head, HeadSeen: time.Now(), ArmedSHA: head}
	if err := st.Save(1, armed); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := New(ctx, testConfig(1), Deps{Forge: f, Agent: newFakeAgent(approver(f, time.Millisecond)), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	cancels := 0
	for _, e := range f.Effects() {
		if e == "#1: cancel auto-merge" {
			cancels++
		}
	}
	if f.calls["cancel auto-merge"] < 2 || cancels != 1 {
		t.Errorf("%d cancel calls, %d that went through; want the failed one tried again, once\n%v",
			f.calls["cancel auto-merge"], cancels, f.Effects())
	}
}

// TestASessionsEndIsDecidedByTheLoop: a reviewer approves, and the follower
// cannot decide after it (the forge fails its read of the reviews), while
// the list of changed PRs does not show the review yet. The loop must
// decide the PR again rather than reuse its decision from before the
// session: one session per head, and the PR merges.
func TestASessionsEndIsDecidedByTheLoop(t *testing.T) {
	f := newFakeForge(1)
	f.quiet = true
	a := newFakeAgent(func(pr int) (time.Duration, func(), string) {
		return 5 * time.Millisecond, func() {
			f.review(pr, "reviewer", forge.ReviewApproved)
			f.mu.Lock()
			f.failTimes["reviews"] = 1 // the follower's read after the session
			f.mu.Unlock()
		}, approvedReply
	})
	cfg := testConfig(1)
	cfg.ClaimTTL = time.Hour // a decision to review holds for ClaimTTL/6 while the PR does not change
	runPool(t, cfg, f, a)
	if sessions, prompts, _ := a.count(); prompts != 1 || !f.prs[1].Merged {
		t.Errorf("%d prompts (%d sessions left), merged %v; want one session and the PR merged", prompts, sessions, f.prs[1].Merged)
	}
}

// TestASessionsEndIsObservedOnce: a session ends with no review. Its
// follower decides nothing: it hands the PR back to the loop, which
// observes it once (one read of its reviews), backs it off and starts no
// second session. A follower that decided too read the reviews three times.
func TestASessionsEndIsObservedOnce(t *testing.T) {
	f := newFakeForge(1)
	ended := make(chan int, 1)
	a := newFakeAgent(func(int) (time.Duration, func(), string) {
		return time.Millisecond, func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			ended <- f.calls["reviews"]
		}, "no verdict"
	})
	cfg := testConfig(1)
	cfg.PollInterval, cfg.IdleExit = time.Hour, 0 // the back-off after the session is the poll interval
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := New(ctx, cfg, Deps{Forge: f, Agent: a})
	if err != nil {
		t.Fatal(err)
	}
	before := -1
	go func() {
		before = <-ended
		waitFor(ctx, func() bool { return p.track(1).Failures > 0 }) // the loop judged the session
		time.Sleep(500 * time.Millisecond)                           // and nobody reads the PR again
		cancel()
	}()
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	after := f.calls["reviews"] - before
	f.mu.Unlock()
	if _, prompts, _ := a.count(); before < 0 || after != 1 || prompts != 1 {
		t.Errorf("%d reads of the reviews after the session, %d sessions; want 1 read (the loop's) and 1 session", after, prompts)
	}
}

// TestOnceJudgesTheSessionsEnd: with --once, a session that ends while a
// cycle is still stepping another PR (slow to read) is judged before the
// pool exits: its PR, approved, is merged. A pool that counted only the
// busy slots exited after that cycle with the approval never decided.
func TestOnceJudgesTheSessionsEnd(t *testing.T) {
	f := newFakeForge(1, 2)
	f.review(2, "reviewer", forge.ReviewApproved)
	f.statuses[f.prs[2].HeadSHA] = []forge.Status{{ID: 1, Context: "ci", State: "pending"}}
	f.reviewsDelay = map[int]time.Duration{2: 300 * time.Millisecond} // #2 is decided every cycle, slowly
	cfg := testConfig(1)
	cfg.IdleExit, cfg.Once = 0, true
	rep := runPool(t, cfg, f, newFakeAgent(approver(f, 50*time.Millisecond)))
	if !f.prs[1].Merged {
		t.Errorf("PR #1, approved by its session, is not merged at exit: %+v\n%v", rep, f.Effects())
	}
}

// TestFailedNoReviewNoteIsPostedNextTime: sessions keep leaving no counted
// review; the note saying so fails once when it is due, and the next
// session that leaves none posts it, once.
func TestFailedNoReviewNoteIsPostedNextTime(t *testing.T) {
	f := newFakeForge(1)
	f.failNotes["Reviews keep failing"] = 1
	a := newFakeAgent(func(int) (time.Duration, func(), string) { return time.Millisecond, func() {}, "no verdict" })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	p, err := New(ctx, testConfig(1), Deps{Forge: f, Agent: a})
	if err != nil {
		t.Fatal(err)
	}
	go func() { // sessions never review: the pool never idles; stop after enough of them
		waitFor(ctx, func() bool { _, prompts, _ := a.count(); return prompts >= 6 })
		cancel()
	}()
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	notes := 0
	for _, e := range f.Effects() {
		if strings.HasPrefix(e, "#1: comment Reviews keep failing") {
			notes++
		}
	}
	if f.failNotes["Reviews keep failing"] != 0 {
		t.Fatalf("the note's post never failed: the test tests nothing\n%v", f.Effects())
	}
	if notes != 1 {
		t.Errorf("%d notes that sessions leave no review, want the failed one posted once\n%v", notes, f.Effects())
	}
}

// TestOneActionIsCarriedOutOnce: the merge queue and the loop decide the
// same note before either recorded it (marks are recorded after the
// action) and both hand it to act at once. The note is posted once.
func TestOneActionIsCarriedOutOnce(t *testing.T) {
	f := newFakeForge(1)
	f.commentDelay = 300 * time.Millisecond // the first post is still on its way when the second act comes
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := New(ctx, testConfig(1), Deps{Forge: f, Agent: newFakeAgent(approver(f, time.Millisecond))})
	if err != nil {
		t.Fatal(err)
	}
	pr := *f.prs[1]
	next, act, ok := p.updateAnswered(pr, forgejo.UpdateResult{Outcome: forgejo.ClassifyUpdate(403), Status: 403}, "merge", "", "")
	if !ok || act.Kind != lifecycle.NoteBlocked {
		t.Fatalf("a refused update decided %+v, want a note", act)
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- p.act(ctx, pr, next, act) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	notes := 0
	for _, e := range f.Effects() {
		if strings.HasPrefix(e, "#1: comment Merging is on hold") {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("%d hold notes from one decision carried out twice at once, want 1\n%v", notes, f.Effects())
	}
}
