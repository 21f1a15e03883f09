package pool

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"pool/claims"
	"pool/forge"
	"pool/lifecycle"
	"pool/texts"
)

// TestAdoptionSurvivesAFailedRead: a restarted pool finds the session a
// previous run left working on PR 1, and its first read of the PR fails.
// The session is still followed: its tree stays, and no second session
// starts for the head it reviews.
func TestAdoptionSurvivesAFailedRead(t *testing.T) {
	f := newFakeForge(1)
	a := newFakeAgent(approver(f, time.Millisecond))
	old := &fakeSession{id: "old-1", title: texts.SessionTitle("o/r", 1), dir: "/trees/pr-1-old", prompted: true, busy: true}
	a.sessions[old.id] = old
	a.active = 1
	f.failTimes["pr"] = 1 // the adoption's read of PR 1
	trees := newFakeTrees()
	trees.live[old.dir] = true
	runWithTrees(t, testConfig(1), f, a, trees, func(ctx context.Context, _ *Pool) {
		time.Sleep(300 * time.Millisecond) // many poll intervals: time for a second session
		f.review(1, "reviewer", forge.ReviewApproved)
		a.mu.Lock()
		old.busy, old.done, old.reply = false, true, approvedReply
		a.active--
		a.mu.Unlock()
	})
	if !f.isMerged(1) {
		t.Fatal("PR 1 not merged")
	}
	if _, prompts, _ := a.count(); prompts != 0 {
		t.Errorf("%d new sessions prompted, want 0: the left session was still reviewing the head", prompts)
	}
	if slices.Contains(trees.effects, "prune keeping []") {
		t.Errorf("tree effects %v: the left session's tree was pruned while it worked", trees.effects)
	}
}

// TestAClaimOutlivesItsTTLWhileTheSessionRuns: pool A's session runs five
// claim lives (the session timeout is longer than the claim's life). Pool
// B, on the same forge with an agent server of its own, never takes the PR
// over: A refreshes its claim while the session runs.
func TestAClaimOutlivesItsTTLWhileTheSessionRuns(t *testing.T) {
	f := newFakeForge(1)
	ttl := 200 * time.Millisecond
	a := newFakeAgent(approver(f, 5*ttl))
	b := newFakeAgent(approver(f, 5*ttl))
	cfg := testConfig(1)
	cfg.ClaimTTL, cfg.SessionTimeout = ttl, time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pa, err := New(ctx, cfg, Deps{Forge: f, Agent: a})
	if err != nil {
		t.Fatal(err)
	}
	cfgB := cfg
	cfgB.InstanceID, cfgB.IdleExit = "pool-b", 0
	pb, err := New(ctx, cfgB, Deps{Forge: f, Agent: b})
	if err != nil {
		t.Fatal(err)
	}
	ctxB, stopB := context.WithCancel(ctx)
	doneA, doneB := make(chan struct{}), make(chan struct{})
	go func() { defer close(doneA); _, _ = pa.Run(ctx) }()
	waitFor(ctx, func() bool { _, prompts, _ := a.count(); return prompts == 1 })
	go func() { defer close(doneB); _, _ = pb.Run(ctxB) }()
	<-doneA
	stopB()
	<-doneB
	if ctx.Err() != nil {
		t.Fatal("pools did not finish in time")
	}
	if _, prompts, _ := b.count(); prompts != 0 {
		t.Errorf("pool B started %d sessions on the head pool A's session reviewed, want 0; effects %v", prompts, f.Effects())
	}
	if !f.isMerged(1) {
		t.Error("PR 1 not merged")
	}
}

// TestChangesThatMoveNoUpdateTimeAreDecidedAgain: the forge changes no
// update time when the author of a fork PR lets maintainers edit it, or
// when it finds a PR mergeable again after its base moved. A listing's copy
// that shows either is decided again, though the decision on the old copy
// (a block, a conflict) held until the PR changed.
func TestChangesThatMoveNoUpdateTimeAreDecidedAgain(t *testing.T) {
	p := &Pool{}
	at := time.Now()
	forever := at.Add(time.Hour)
	fork := forge.PR{Number: 1, HeadSHA: "h1", HeadRepo: "someone/r", Updated: at}
	tr := lifecycle.Track{HeadSHA: "h1", State: lifecycle.AwaitingHuman}
	for _, tt := range []struct {
		name   string
		change func(*forge.PR)
	}{
		{"maintainer edits allowed", func(pr *forge.PR) { pr.MaintainerCanEdit = true }},
		{"mergeable again", func(pr *forge.PR) { pr.Mergeable = true }},
	} {
		p.index.remember(fork, tr, 0, lifecycle.Action{Kind: lifecycle.Wait}, forever)
		if _, ok := p.index.unchanged(fork, tr, 0, at); !ok {
			t.Fatalf("%s: the copy decided on reads changed", tt.name)
		}
		changed := fork
		tt.change(&changed)
		if _, ok := p.index.unchanged(changed, tr, 0, at); ok {
			t.Errorf("%s: the PR is not decided again", tt.name)
		}
	}
}

// TestAWaitOnAReviewersConflictEnds: a conflict a reviewer reported, which
// the forge has not confirmed, is decided again once ConflictSettle has
// passed; a noted conflict and a work in progress wait for a change.
func TestAWaitOnAReviewersConflictEnds(t *testing.T) {
	p := &Pool{}
	now := time.Now()
	wait := lifecycle.Action{Kind: lifecycle.Wait}
	hinted := lifecycle.Track{HeadSHA: "h1", State: lifecycle.Conflict, ConflictHint: "h1", HintedAt: now}
	if got, want := p.quietUntil(hinted, wait, now), now.Add(lifecycle.ConflictSettle); !got.Equal(want) {
		t.Errorf("hinted conflict quiet until %s, want %s", got, want)
	}
	for _, tr := range []lifecycle.Track{{HeadSHA: "h1", State: lifecycle.Conflict, ConflictSHA: "h1"},
		{HeadSHA: "h1", State: lifecycle.WorkInProgress}} {
		if got := p.quietUntil(tr, wait, now); got.Before(now.Add(24 * time.Hour)) {
			t.Errorf("%s: quiet until %s, want until the PR changes", tr.State, got)
		}
	}
}

// TestANoteWhoseAnswerWasLostIsNotPostedAgain: the forge takes the
// conflict note, and the no-review note, but their answers are lost. The
// pool finds them on the forge and posts neither again.
func TestANoteWhoseAnswerWasLostIsNotPostedAgain(t *testing.T) {
	for _, tt := range []struct {
		name, note string
		setup      func(*fakeForge) *fakeAgent
	}{
		{"conflict", "Merge conflict detected", func(f *fakeForge) *fakeAgent {
			f.mergeAnswer[1] = forge.MergeResult{Outcome: forge.MergeConflict, Status: 409}
			return newFakeAgent(approver(f, time.Millisecond))
		}},
		{"no review", "Reviews keep failing", func(f *fakeForge) *fakeAgent {
			return newFakeAgent(func(int) (time.Duration, func(), string) { return time.Millisecond, nil, "no verdict" })
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeForge(1)
			a := tt.setup(f)
			f.lostNotes[tt.note] = 1
			cfg := testConfig(1)
			cfg.IdleExit, cfg.ClaimTTL = 0, 100*time.Millisecond // back-offs after sessions: up to the claim TTL
			notes := func() int {
				n := 0
				for _, e := range f.Effects() {
					if strings.HasPrefix(e, "#1: comment "+tt.note) {
						n++
					}
				}
				return n
			}
			runUntil(t, cfg, f, a, func(ctx context.Context, _ *Pool) {
				waitFor(ctx, func() bool { return notes() >= 1 })
				time.Sleep(50 * cfg.PollInterval) // time for a second note
			}, func() bool { return true })
			if f.lostNotes[tt.note] != 0 {
				t.Fatal("no answer was lost: the test tests nothing")
			}
			if n := notes(); n != 1 {
				t.Errorf("%d notes %q, want 1\n%v", n, tt.note, f.Effects())
			}
		})
	}
}

// TestAClaimOfItsOwnGoneStaleIsNoTakeover: a refresh came late, so both
// this pool's claim and the dead pool's before it are stale. The new claim
// names the dead pool as the one taken over, not this pool itself.
func TestAClaimOfItsOwnGoneStaleIsNoTakeover(t *testing.T) {
	p := &Pool{instance: "pool-a"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	post := func(id int64, instance string) forge.Comment {
		return forge.Comment{ID: id, Author: "bot", Created: at, Updated: at,
			Body: claims.Body(claims.Claim{Instance: instance, SHA: "h1", At: at})}
	}
	v := claims.View{HeadSHA: "h1", TTL: time.Minute, Now: at.Add(time.Hour), Trusted: []string{"bot"},
		Comments: []forge.Comment{post(1, "dead-pool"), post(2, "pool-a")}}
	if got := p.takenOver(v); got != "dead-pool" {
		t.Errorf("takenOver = %q, want dead-pool", got)
	}
	v.Comments = v.Comments[1:]
	if got := p.takenOver(v); got != "" {
		t.Errorf("takenOver with only its own stale claim = %q, want none", got)
	}
}

// TestAnUnverifiedClaimIsTakenBack: the pool read no claim on the head and
// posted its own after another pool's (the forge answered late); then the
// answer of its post was lost, or its read-back of the claims failed. It
// cannot tell whether it won and starts no session: its claim is taken
// back, not left on the PR beside the winner's for a claim's life (TestSim:
// "#4 at update-4-...: 2 claims", "#89 at pr-89-1: 2 claims").
func TestAnUnverifiedClaimIsTakenBack(t *testing.T) {
	for name, fail := range map[string]func(f *fakeForge){
		"read-back failed": func(f *fakeForge) { f.failTimes["comments"] = 1 },
		"answer lost":      func(f *fakeForge) { f.lostNotes["Review claimed"] = 1 },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeForge(1)
			ctx := context.Background()
			p, err := New(ctx, testConfig(1), Deps{Forge: f, Agent: newFakeAgent(nil)})
			if err != nil {
				t.Fatal(err)
			}
			pr, _ := f.PR(ctx, "o", "r", 1)
			other := claims.Claim{Instance: "other-pool", SHA: pr.HeadSHA, At: time.Now().UTC()}
			if _, err := f.PostComment(ctx, "o", "r", 1, texts.Sign(claims.Body(other))); err != nil {
				t.Fatal(err)
			}
			first := make(chan viewResult, 1)
			first <- viewResult{view: claims.View{HeadSHA: pr.HeadSHA, TTL: time.Hour, Now: time.Now()}} // read before the other's claim
			fail(f)
			won, err := p.claim(ctx, pr, first)
			if won || err == nil {
				t.Fatalf("claim = %v, %v; want false and the error", won, err)
			}
			if got := f.claimsOn(1); got != 1 {
				t.Errorf("%d claims on the PR after the claim, want 1 (the other pool's): %v", got, f.Effects())
			}
		})
	}
}

// TestANoteTakenBackIsDeletedThoughTheForgeFailsOnce: the pool posted a
// note another pool had posted first, and the forge answered its read-back
// of the notes, or the first delete of its copy, 502, or lost the answer to
// its post. The copy goes all the same: left, the PR shows the note twice
// (TestSim: "#124 at pr-124-1: diagnostic 8 after 34s", "#138 at
// pr-138-1: diagnostic 3 after 373ms", "#151 at pr-151-2: diagnostic 2
// after 27s").
func TestANoteTakenBackIsDeletedThoughTheForgeFailsOnce(t *testing.T) {
	for name, fail := range map[string]func(f *fakeForge){
		"read-back failed": func(f *fakeForge) { f.failTimes["comments"] = 1 },
		"delete failed":    func(f *fakeForge) { f.failTimes["delete comment"] = 1 },
		"answer lost":      func(f *fakeForge) { f.lostNotes["the note"] = 1 },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { // the second delete waits seconds
				f := newFakeForge(1)
				ctx := context.Background()
				p, err := New(ctx, testConfig(1), Deps{Forge: f, Agent: newFakeAgent(nil)})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.PostComment(ctx, "o", "r", 1, texts.Sign("the note")); err != nil { // the other pool's
					t.Fatal(err)
				}
				fail(f)
				_ = p.postFirst(ctx, 1, "the note", func(c forge.Comment) bool { return c.Body == texts.Sign("the note") }) // a lost answer's error
				f.mu.Lock()
				notes := len(f.comments[1])
				f.mu.Unlock()
				if notes != 1 {
					t.Errorf("%d notes on the PR, want 1: %v", notes, f.Effects())
				}
			})
		})
	}
}

// TestARenewalLateForAStaleClaimYieldsToTheTakeover: the pool read its
// own claim on the head alive, seconds before its life ended, and renewed
// it; another pool, reading it stale, had taken the head over meanwhile.
// The late edit revived the stale claim, and both pools started a session
// (TestSim seed 1: "#161 at pr-161-1: session 3 started while another ran
// there", a fixer each). The pool yields to the takeover and takes its
// claim back.
func TestARenewalLateForAStaleClaimYieldsToTheTakeover(t *testing.T) {
	f := newFakeForge(1)
	ctx := context.Background()
	p, err := New(ctx, testConfig(1), Deps{Forge: f, Agent: newFakeAgent(nil)})
	if err != nil {
		t.Fatal(err)
	}
	pr, _ := f.PR(ctx, "o", "r", 1)
	ours, err := f.PostComment(ctx, "o", "r", 1, texts.Sign(claims.Body(claims.Claim{Instance: "pool-test", SHA: pr.HeadSHA, At: time.Now().UTC()})))
	if err != nil {
		t.Fatal(err)
	}
	read, _ := f.Comments(ctx, "o", "r", 1) // the pool's read: its claim alone, alive
	takeover := claims.Claim{Instance: "other-pool", SHA: pr.HeadSHA, At: time.Now().UTC(), Takeover: "pool-test"}
	if _, err := f.PostComment(ctx, "o", "r", 1, texts.Sign(claims.Body(takeover))); err != nil {
		t.Fatal(err)
	}
	first := make(chan viewResult, 1)
	first <- viewResult{view: p.view(pr, read, nil)}
	won, err := p.claim(ctx, pr, first)
	if err != nil || won {
		t.Fatalf("claim = %v, %v; want false: another pool took the head over", won, err)
	}
	cs, _ := f.Comments(ctx, "o", "r", 1)
	for _, c := range cs {
		if c.ID == ours.ID {
			t.Errorf("the pool's claim stands beside the takeover: %v", f.Effects())
		}
	}
}

// TestAClaimLeftFromBeforeARestartIsTakenBack: the PR carries another
// pool's live claim and, after it, one of this pool's that the pool does
// not know it made (its post was in flight when it was killed). The
// pool's first cycle sees the head claimed by the other pool and deletes
// its own claim; the winner's stays, and no session starts.
func TestAClaimLeftFromBeforeARestartIsTakenBack(t *testing.T) {
	f := newFakeForge(1)
	ctx := context.Background()
	head := f.prs[1].HeadSHA
	now := time.Now().UTC()
	f.comments[1] = []forge.Comment{{ID: 100, Author: "other-pool-bot", Created: now,
		Body: claims.Body(claims.Claim{Instance: "other", SHA: head, At: now})}}
	f.nextID = 200
	ours, err := f.PostComment(ctx, "o", "r", 1, texts.Sign(claims.Body(claims.Claim{Instance: "pool-test", SHA: head, At: now})))
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(1)
	cfg.TrustedClaimers = []string{"other-pool-bot"}
	a := newFakeAgent(nil)
	p, err := New(ctx, cfg, Deps{Forge: f, Agent: a})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.cycle(ctx, ctx); err != nil {
		t.Fatal(err)
	}
	cs, _ := f.Comments(ctx, "o", "r", 1)
	var ids []int64
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	if len(ids) != 1 || ids[0] != 100 {
		t.Errorf("comments %v, want the other pool's claim (100) alone: the pool's own (%d) lost", ids, ours.ID)
	}
	if n, _, _ := a.count(); n != 0 {
		t.Errorf("%d sessions started, want none: the other pool holds the head", n)
	}
}
