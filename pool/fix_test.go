package pool

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"pool/clone"
	"pool/configs"
	"pool/forge"
	"pool/sessionmark"
	"pool/texts"
)

// fakeFixes records the fixes a pool asks to push, and answers with err.
type fakeFixes struct {
	mu    sync.Mutex
	fixes []clone.Fix
	dirs  []string
	marks []string // "reviewer <dir>" or "fixer <dir>", in order
	err   error
}

func (x *fakeFixes) MarkReviewer(dir string, reviewer bool) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	kind := "fixer"
	if reviewer {
		kind = "reviewer"
	}
	x.marks = append(x.marks, kind+" "+dir)
	return nil
}

func (x *fakeFixes) PushFix(_ context.Context, dir string, f clone.Fix) (string, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.fixes, x.dirs = append(x.fixes, f), append(x.dirs, dir)
	return "", x.err
}

// runFixerOnce runs a pool with cfg for one cycle (the fixer's session,
// then its end judged) and returns its work trees.
func runFixerOnce(t *testing.T, cfg configs.Config, f *fakeForge, a *fakeAgent, fixes *fakeFixes) *fakeTrees {
	t.Helper()
	trees := newFakeTrees()
	cfg.Once = true
	trees.inUse = a.worksIn
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := New(ctx, cfg, Deps{Forge: f, Agent: a, Trees: trees, Fixes: fixes})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v, %v", err, ctx.Err())
	}
	return trees
}

// TestTheFixerSessionsCommitsArePushedByThePool: when a fixer session
// ends, the pool pushes what it committed, from its work tree, to the PR's
// own head branch, leased on the head it gave the session, with the fixer
// account's token, checking for the pool's secrets; a fix the checks refuse
// is noted on the PR. A reviewer session's end pushes nothing.
func TestTheFixerSessionsCommitsArePushedByThePool(t *testing.T) {
	for _, refused := range []bool{false, true} {
		f := newFakeForge(1)
		head := f.prs[1].HeadSHA
		f.review(1, "reviewer", forge.ReviewApproved)
		f.statuses[head] = []forge.Status{{ID: 1, Context: "ci", State: "failure"}}
		a := newFakeAgent(func(int) (time.Duration, func(), string) {
			return time.Millisecond, nil, "Committed.\nREVIEW-RESULT: {\"decision\": \"commented\", \"merge_status\": \"ci_failing\"}"
		})
		fixes := &fakeFixes{}
		if refused {
			fixes.err = &clone.RefusedError{Reason: "commit 1234 has 2 parents"}
		}
		cfg := testConfig(1)
		cfg.Fixers.Token, cfg.WebhookSecret = "fixer-token", "hook-secret"
		trees := runFixerOnce(t, cfg, f, a, fixes)
		if len(fixes.fixes) != 1 {
			t.Fatalf("refused=%v: %d pushes asked for, want 1 (the fixer's; prompts %d)", refused, len(fixes.fixes), len(a.prompts))
		}
		got := fixes.fixes[0]
		want := clone.Fix{PR: 1, Head: head, URL: "http://forge.test/o/r.git", Branch: "feature-1", Token: "fixer-token"}
		if got.PR != want.PR || got.Head != want.Head || got.URL != want.URL || got.Branch != want.Branch || got.Token != want.Token ||
			!slices.Contains(got.Secrets, "t") || !slices.Contains(got.Secrets, "fixer-token") || !slices.Contains(got.Secrets, "hook-secret") {
			t.Errorf("refused=%v: push %+v, want %+v with the pool's token, the fixer's and the webhook secret as secrets", refused, got, want)
		}
		if !slices.Equal(fixes.marks, []string{"fixer " + fixes.dirs[0]}) {
			t.Errorf("refused=%v: trees marked %v, want the fixer's tree marked a fixer's before its session", refused, fixes.marks)
		}
		if !strings.Contains(strings.Join(trees.effects, "\n"), "take "+fixes.dirs[0]+" ") {
			t.Errorf("pushed from %s, not a tree the session was given: %v", fixes.dirs[0], trees.effects)
		}
		note := texts.FixRefused("commit 1234 has 2 parents")
		var noted bool
		for _, c := range f.comments[1] {
			noted = noted || strings.Contains(c.Body, note)
		}
		if noted != refused {
			t.Errorf("refused=%v: noted %v on the PR: %v", refused, noted, f.effects)
		}
	}
}

// TestAnAdoptedFixerSessionsCommitsArePushed: a fixer session a killed
// pool left is adopted after the restart, and when it ends its commits go
// the way a fixer session's of this run do: pushed by the pool from its
// tree, leased on the head the session was given (its record's, which the
// author may have moved since), with the fixer account's token. An adopted
// reviewer session's end pushes nothing.
func TestAnAdoptedFixerSessionsCommitsArePushed(t *testing.T) {
	f := newFakeForge(1, 2)
	a := newFakeAgent(approver(f, time.Millisecond))
	f.review(1, "reviewer", forge.ReviewApproved)
	f.review(2, "reviewer", forge.ReviewApproved)
	given := strings.Repeat("a", 40) // the head the fixer was started on
	a.sessions["old-fix"] = &fakeSession{id: "old-fix", title: texts.SessionTitle("o/r", 1), dir: "/trees/fix-old", prompted: true, done: true,
		reply: "Committed.\nREVIEW-RESULT: {\"decision\": \"commented\", \"merge_status\": \"ci_failing\"}"}
	a.sessions["old-rev"] = &fakeSession{id: "old-rev", title: texts.SessionTitle("o/r", 2), dir: "/trees/rev-old", prompted: true, done: true, reply: approvedReply}
	trees := newFakeTrees()
	trees.live["/trees/fix-old"], trees.live["/trees/rev-old"] = true, true
	trees.records = map[string]sessionmark.Record{
		"/trees/fix-old": {Repo: "o/r", PR: 1, Head: given, Session: "old-fix", Fixer: true},
		"/trees/rev-old": {Repo: "o/r", PR: 2, Head: f.prs[2].HeadSHA, Session: "old-rev"},
	}
	fixes := &fakeFixes{}
	cfg := testConfig(2)
	cfg.Fixers.Token = "fixer-token"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	trees.inUse = a.worksIn
	p, err := New(ctx, cfg, Deps{Forge: f, Agent: a, Trees: trees, Fixes: fixes})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v, %v", err, ctx.Err())
	}
	fixes.mu.Lock()
	defer fixes.mu.Unlock()
	if !slices.Equal(fixes.dirs, []string{"/trees/fix-old"}) {
		t.Fatalf("pushes asked from %v, want one, from the adopted fixer's tree /trees/fix-old", fixes.dirs)
	}
	got := fixes.fixes[0]
	want := clone.Fix{PR: 1, Head: given, URL: "http://forge.test/o/r.git", Branch: "feature-1", Token: "fixer-token"}
	if got.PR != want.PR || got.Head != want.Head || got.URL != want.URL || got.Branch != want.Branch || got.Token != want.Token ||
		!slices.Contains(got.Secrets, "t") || !slices.Contains(got.Secrets, "fixer-token") {
		t.Errorf("push %+v, want %+v with the pool's token and the fixer's as secrets", got, want)
	}
}

// TestAFixForAClosedPRIsNeitherPushedNorNoted: a PR closed or merged while
// its fixer session ran gets neither the fixer's commits (they would land
// on the branch of a PR that is done) nor a note that they were not pushed
// (seed 6 of the simulation at 10 days: two such notes on one head, the
// first after the PR was closed, the second after it was merged).
func TestAFixForAClosedPRIsNeitherPushedNorNoted(t *testing.T) {
	for _, merged := range []bool{false, true} {
		f := newFakeForge(1)
		head := f.prs[1].HeadSHA
		f.review(1, "reviewer", forge.ReviewApproved)
		f.statuses[head] = []forge.Status{{ID: 1, Context: "ci", State: "failure"}}
		done := func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.prs[1].State, f.prs[1].Merged = "closed", merged
		}
		a := newFakeAgent(func(int) (time.Duration, func(), string) {
			return time.Millisecond, done, "Committed.\nREVIEW-RESULT: {\"decision\": \"commented\", \"merge_status\": \"ci_failing\"}"
		})
		fixes := &fakeFixes{err: &clone.RefusedError{Reason: "the head moved since the fixer started"}}
		runFixerOnce(t, testConfig(1), f, a, fixes)
		if len(a.prompts) == 0 {
			t.Fatalf("merged=%v: no session ran", merged)
		}
		if len(fixes.fixes) != 0 {
			t.Errorf("merged=%v: %d pushes asked for, want none: the PR is done", merged, len(fixes.fixes))
		}
		for _, c := range f.comments[1] {
			if strings.Contains(c.Body, "were not pushed") {
				t.Errorf("merged=%v: noted %q on a PR that is done", merged, c.Body)
			}
		}
	}
}
