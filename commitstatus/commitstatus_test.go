package commitstatus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pool/describe"
	"pool/forge"
	"pool/forgejo"
	"pool/statuspage"
)

// fakeForge records status writes as plain strings.
type fakeForge struct {
	existing map[string][]forge.Status
	reads    int
	writes   []string
	failPost error
	// loseAnswers: a write lands on the forge, but its answer is lost (a
	// timeout, or the pool's context ended while it waited).
	loseAnswers bool
}

func (f *fakeForge) StatusHistory(_ context.Context, _, _, sha string) ([]forge.Status, error) {
	f.reads++
	return f.existing[sha], nil
}

func (f *fakeForge) PostStatus(_ context.Context, owner, repo, sha string, s forgejo.NewStatus) error {
	if f.failPost != nil {
		return f.failPost
	}
	f.writes = append(f.writes, fmt.Sprintf("%s/%s@%s %s=%s %q %s", owner, repo, sha, s.Context, s.State, s.Description, s.TargetURL))
	if f.loseAnswers {
		if f.existing == nil {
			f.existing = map[string][]forge.Status{}
		}
		f.existing[sha] = append(f.existing[sha], forge.Status{ID: int64(len(f.writes)), Context: s.Context,
			State: s.State, Description: s.Description, TargetURL: s.TargetURL})
		return context.DeadlineExceeded
	}
	return nil
}

// TestAWriteWhoseAnswerWasLostIsNotWrittenAgain: a status that reached the
// forge although its answer was lost (the pool stopping mid-call) is read
// back before the next write, not written twice.
func TestAWriteWhoseAnswerWasLostIsNotWrittenAgain(t *testing.T) {
	f := &fakeForge{loseAnswers: true}
	p := newPublisher(f)
	merged := statuspage.PR{Number: 3, Head: "h1", Next: "merged", Done: true, Merged: true}
	p.Sync(context.Background(), status(merged))
	p.Sync(context.Background(), status(merged))
	if len(f.writes) != 1 {
		t.Errorf("writes:\n%q\nwant the one", f.writes)
	}
}

func newPublisher(f *fakeForge) *Publisher {
	return &Publisher{Forge: f, Owner: "o", Repo: "r", Context: "pool", PageURL: "https://pool.example/"}
}

func status(prs ...statuspage.PR) statuspage.Status { return statuspage.Status{PRs: prs} }

func TestWritesOnlyWhenTheTextChanges(t *testing.T) {
	f := &fakeForge{}
	p := newPublisher(f)
	ctx := context.Background()
	queued := statuspage.PR{Number: 3, Head: "h1", Next: "queued for review (2 ahead)"}
	p.Sync(ctx, status(queued))
	p.Sync(ctx, status(queued))
	queued.Next = "queued for review (next)"
	p.Sync(ctx, status(queued))
	p.Sync(ctx, status(queued))
	merged := statuspage.PR{Number: 3, Head: "h1", Next: "merged", Done: true, Merged: true}
	p.Sync(ctx, status(merged))
	p.Sync(ctx, status(merged))
	want := []string{
		`o/r@h1 pool=pending "queued for review (2 ahead)" https://pool.example/#pr-3`,
		`o/r@h1 pool=pending "queued for review (next)" https://pool.example/#pr-3`,
		`o/r@h1 pool=success "merged" https://pool.example/#pr-3`,
	}
	if !slices.Equal(f.writes, want) {
		t.Errorf("writes:\n%q\nwant\n%q", f.writes, want)
	}
	if f.reads != 1 {
		t.Errorf("read the forge's statuses %d times, want once per head", f.reads)
	}
}

// TestCommitTextOverridesNext: a PR whose place in the merge queue moves
// keeps one commit status text, written once.
func TestCommitTextOverridesNext(t *testing.T) {
	f := &fakeForge{}
	p := newPublisher(f)
	ctx := context.Background()
	for ahead := 3; ahead >= 0; ahead-- {
		p.Sync(ctx, status(statuspage.PR{Number: 3, Head: "h1", Next: fmt.Sprintf("approved; queued to merge (%d ahead)", ahead), Commit: "approved; merging"}))
	}
	want := []string{`o/r@h1 pool=pending "approved; merging" https://pool.example/#pr-3`}
	if !slices.Equal(f.writes, want) {
		t.Errorf("writes:\n%q\nwant\n%q", f.writes, want)
	}
}

func TestAStatusAlreadyOnTheForgeIsNotWrittenAgain(t *testing.T) {
	f := &fakeForge{existing: map[string][]forge.Status{"h1": {
		{ID: 1, Context: "pool", State: "pending", Description: "reviewing since 10:40 UTC", TargetURL: "https://pool.example/#pr-3"},
		{ID: 2, Context: "ci/test", State: "pending"},
		{ID: 3, Context: "pool", State: "pending", Description: "approved; waiting for ci/test", TargetURL: "https://pool.example/#pr-3"},
	}}}
	newPublisher(f).Sync(context.Background(), status(statuspage.PR{Number: 3, Head: "h1", Next: "approved; waiting for ci/test"}))
	if len(f.writes) != 0 {
		t.Errorf("rewrote what the forge already shows: %q", f.writes)
	}
}

func TestANewHeadGetsItsOwnStatus(t *testing.T) {
	f := &fakeForge{}
	p := newPublisher(f)
	p.Sync(context.Background(), status(statuspage.PR{Number: 3, Head: "h1", Next: "changes requested; waiting for a new push"}))
	p.Sync(context.Background(), status(statuspage.PR{Number: 3, Head: "h2", Next: "changes requested; waiting for a new push"}))
	if len(f.writes) != 2 || f.writes[1][:len("o/r@h2")] != "o/r@h2" {
		t.Errorf("writes = %q, want one per head", f.writes)
	}
}

func TestNothingForClosedOrHeadlessPRsAndNoLinkWithoutAPage(t *testing.T) {
	f := &fakeForge{}
	p := newPublisher(f)
	p.PageURL = ""
	p.Sync(context.Background(), status(
		statuspage.PR{Number: 1, Head: "h1", Next: "closed without merge", Done: true},
		statuspage.PR{Number: 2, Next: "queued for review (next)"},
		statuspage.PR{Number: 4, Head: "h4", Next: "conflict with main; rebase needed"},
	))
	want := []string{`o/r@h4 pool=pending "conflict with main; rebase needed" `}
	if !slices.Equal(f.writes, want) {
		t.Errorf("writes = %q, want %q", f.writes, want)
	}
}

func TestAFailedWriteIsRetried(t *testing.T) {
	f := &fakeForge{failPost: errors.New("forgejo: HTTP 500")}
	p := newPublisher(f)
	pr := statuspage.PR{Number: 5, Head: "h5", Next: "reviewing since 10:42 UTC"}
	p.Sync(context.Background(), status(pr))
	f.failPost = nil
	p.Sync(context.Background(), status(pr))
	if len(f.writes) != 1 {
		t.Errorf("writes after a failure = %q, want the retry", f.writes)
	}
}

func TestNeverFailure(t *testing.T) {
	f := &fakeForge{}
	p := newPublisher(f)
	for _, pr := range []statuspage.PR{
		{Number: 1, Head: "a", State: "ci_failing", Next: "approved; checks failing: ci/test; fixer started"},
		{Number: 2, Head: "b", State: "merge_failed", Next: "merge retry 12: 405 try again later"},
		{Number: 3, Head: "c", State: "conflict", Next: "conflict with main; rebase needed"},
	} {
		p.Sync(context.Background(), status(pr))
	}
	for _, w := range f.writes {
		if !slices.Contains([]string{"pending", "success"}, stateOf(w)) {
			t.Errorf("wrote %s", w)
		}
	}
}

func stateOf(write string) string {
	var sha, ctxState string
	fmt.Sscanf(write, "%s %s", &sha, &ctxState)
	_, state, _ := strings.Cut(ctxState, "=")
	return state
}

// When the branch protection waits for a context the pool's matches, a
// pending pool status would hold the merge: it is success from the start.
func TestSuccessWhenTheProtectionRequiresTheContext(t *testing.T) {
	f := &fakeForge{}
	p := newPublisher(f)
	p.Required = func() bool { return true }
	p.Sync(context.Background(), status(statuspage.PR{Number: 6, Head: "h6", Next: "queued for review (next)"}))
	want := []string{`o/r@h6 pool=success "queued for review (next)" https://pool.example/#pr-6`}
	if !slices.Equal(f.writes, want) {
		t.Errorf("writes = %q, want %q", f.writes, want)
	}
}

// TestLinksToTheRowOfItsRepository: on the page of several repositories,
// a status links to its repository's row.
func TestLinksToTheRowOfItsRepository(t *testing.T) {
	f := &fakeForge{}
	p := newPublisher(f)
	p.OnePageOfSeveral = true
	p.Sync(context.Background(), status(statuspage.PR{Number: 3, Head: "h1", Next: "queued for review (next)"}))
	want := []string{`o/r@h1 pool=pending "queued for review (next)" https://pool.example/#pr-o/r-3`}
	if !slices.Equal(f.writes, want) {
		t.Errorf("writes %q, want %q", f.writes, want)
	}
}

// TestAPRMissingFromOneSnapshotIsNotWrittenAgain: a PR that drops out of
// the status for a sync or two (between its merge and its settling) and
// comes back keeps what was written on it: no second write, no second
// read. One missing for forgetAfter syncs in a row is forgotten.
func TestAPRMissingFromOneSnapshotIsNotWrittenAgain(t *testing.T) {
	f := &fakeForge{}
	p := newPublisher(f)
	ctx := context.Background()
	merged := statuspage.PR{Number: 3, Head: "h1", Next: "merged", Done: true, Merged: true}
	p.Sync(ctx, status(merged))
	p.Sync(ctx, status())
	p.Sync(ctx, status())
	p.Sync(ctx, status(merged))
	if len(f.writes) != 1 || f.reads != 1 {
		t.Errorf("writes %q, reads %d; want the one write and one read", f.writes, f.reads)
	}
	for range forgetAfter {
		p.Sync(ctx, status())
	}
	if len(p.written) != 0 {
		t.Errorf("after %d syncs without it, still remembered: %v", forgetAfter, p.written)
	}
}

// mapMemory is a Memory in a map, as the state store keeps it.
type mapMemory map[Head]forgejo.NewStatus

func (m mapMemory) Written() (map[Head]forgejo.NewStatus, error) {
	out := map[Head]forgejo.NewStatus{}
	for k, v := range m {
		out[k] = v
	}
	return out, nil
}
func (m mapMemory) Remember(h Head, s forgejo.NewStatus) error { m[h] = s; return nil }
func (m mapMemory) Forget(h Head) error                        { delete(m, h); return nil }

// TestMemoryWritesOnceAndNotAgainAfterARestart: with a memory, a head never
// seen is written without a read (one request), and a restarted publisher
// with the same memory neither reads nor writes a status that has not
// changed; one that has is written once.
func TestMemoryWritesOnceAndNotAgainAfterARestart(t *testing.T) {
	ctx := context.Background()
	mem := mapMemory{}
	f := &fakeForge{}
	p := newPublisher(f)
	p.Memory = mem
	a := statuspage.PR{Number: 1, Head: "h1", Next: "labelled needs feedback: humans only"}
	b := statuspage.PR{Number: 2, Head: "h2", Next: "queued for review"}
	p.Sync(ctx, status(a, b))
	if f.reads != 0 || len(f.writes) != 2 {
		t.Fatalf("first start: %d reads, writes %q; want no read, two writes", f.reads, f.writes)
	}
	restarted := newPublisher(f)
	restarted.Memory = mem
	b.Next = "reviewing since 10:00 UTC"
	restarted.Sync(ctx, status(a, b))
	if f.reads != 0 || len(f.writes) != 3 || !strings.Contains(f.writes[2], "reviewing since") {
		t.Errorf("after a restart: %d reads, writes %q; want no read, one more write for PR 2", f.reads, f.writes)
	}
}

// TestMemoryOfALostAnswerReadsFirst: a write whose answer was lost is
// remembered as unsure, so even a restarted publisher reads the forge
// before writing, and does not write the same status twice.
func TestMemoryOfALostAnswerReadsFirst(t *testing.T) {
	ctx := context.Background()
	mem := mapMemory{}
	f := &fakeForge{loseAnswers: true}
	p := newPublisher(f)
	p.Memory = mem
	merged := statuspage.PR{Number: 3, Head: "h1", Next: "merged", Done: true, Merged: true}
	p.Sync(ctx, status(merged))
	restarted := newPublisher(f)
	restarted.Memory = mem
	restarted.Sync(ctx, status(merged))
	if len(f.writes) != 1 || f.reads != 1 {
		t.Errorf("writes %q, %d reads; want the one write, read back once", f.writes, f.reads)
	}
}

// TestTheCarIsWrittenAsTheTrainMoves: the pool's status on a PR riding a
// merge train names its car and train; it is written once per place, and
// again when a car ahead lands (car 2 of 3 becomes car 1 of 2), pending
// until the PR merges.
func TestTheCarIsWrittenAsTheTrainMoves(t *testing.T) {
	f := &fakeForge{}
	p := newPublisher(f)
	ctx := context.Background()
	row := func(car, cars int) statuspage.PR {
		text := describe.TrainPlace(car, cars, "main")
		return statuspage.PR{Number: 5, Head: "h5", Next: text, Commit: text, Car: car, Cars: cars, Train: "main"}
	}
	p.Sync(ctx, status(row(2, 3)))
	p.Sync(ctx, status(row(2, 3)))
	p.Sync(ctx, status(row(1, 2)))
	want := []string{
		`o/r@h5 pool=pending "approved, checks green; car 2 of 3 on main's merge train" https://pool.example/#pr-5`,
		`o/r@h5 pool=pending "approved, checks green; car 1 of 2 on main's merge train" https://pool.example/#pr-5`,
	}
	if !slices.Equal(f.writes, want) {
		t.Errorf("writes:\n%q\nwant:\n%q", f.writes, want)
	}
}
