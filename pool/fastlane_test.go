package pool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"pool/forge"
	"pool/forgejo"
)

// orderForge is the fake forge that logs the cycles' listings and the
// reviews reads in order, and at each reviews read of another PR whether
// PR watch held a slot.
type orderForge struct {
	*fakeForge
	watch int
	busy  func(n int) bool

	mu  sync.Mutex // guards log
	log []string
}

func (o *orderForge) note(e string) {
	o.mu.Lock()
	o.log = append(o.log, e)
	o.mu.Unlock()
}

func (o *orderForge) ChangedPRs(ctx context.Context, owner, repo string, since time.Time) ([]forgejo.PRChange, time.Time, error) {
	o.note("list")
	return o.fakeForge.ChangedPRs(ctx, owner, repo, since)
}

func (o *orderForge) OpenPRs(ctx context.Context, owner, repo string) ([]forge.PR, error) {
	o.note("list")
	return o.fakeForge.OpenPRs(ctx, owner, repo)
}

func (o *orderForge) Reviews(ctx context.Context, owner, repo string, n int) ([]forge.Review, error) {
	e := fmt.Sprintf("reviews %d", n)
	if n != o.watch && o.busy != nil && o.busy(o.watch) {
		e += fmt.Sprintf(" (#%d in a slot)", o.watch)
	}
	o.note(e)
	return o.fakeForge.Reviews(ctx, owner, repo, n)
}

// TestNewPRIsDecidedAndStartedFirst: two approved PRs wait for their checks
// and are decided again every cycle. A PR opened then is decided first in
// the next cycle, and its session starts before the other two are read
// again: a new PR does not wait for those reads.
func TestNewPRIsDecidedAndStartedFirst(t *testing.T) {
	f := newFakeForge(1, 2)
	for _, n := range []int{1, 2} {
		f.review(n, "reviewer", forge.ReviewApproved)
		f.statuses[f.prs[n].HeadSHA] = []forge.Status{{ID: int64(n), Context: "ci", State: "pending"}}
	}
	o := &orderForge{fakeForge: f, watch: 3}
	a := newFakeAgent(approver(f, 300*time.Millisecond))
	cfg := testConfig(1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := New(ctx, cfg, Deps{Forge: o, Agent: a})
	if err != nil {
		t.Fatal(err)
	}
	o.busy = p.isBusy
	go func() {
		waitFor(ctx, func() bool { // PR 1 decided three times
			o.mu.Lock()
			defer o.mu.Unlock()
			return len(slices.DeleteFunc(slices.Clone(o.log), func(e string) bool { return !strings.HasPrefix(e, "reviews 1") })) >= 3
		})
		f.mu.Lock()
		f.prs[3] = &forge.PR{Number: 3, State: "open", Mergeable: true, HeadSHA: fakeSHA("sha-3-a"), BaseRef: "main",
			Author: "author", Updated: time.Now(), HeadRepo: "o/r", HeadRef: "feature-3", MergeBase: f.base}
		f.mu.Unlock()
		p.Wake(3)
		waitFor(ctx, func() bool { return f.claimsOn(3) > 0 })
		f.mu.Lock()
		for _, n := range []int{1, 2} {
			f.statuses[f.prs[n].HeadSHA] = []forge.Status{{ID: int64(10 + n), Context: "ci", State: "success"}}
		}
		f.mu.Unlock()
	}()
	if _, err := p.Run(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v, %v", err, ctx.Err())
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	first := slices.Index(o.log, "reviews 3")
	if first < 0 || first+1 >= len(o.log) {
		t.Fatalf("PR 3 never decided, or nothing after: %v", o.log)
	}
	listed := first - 1
	for listed >= 0 && o.log[listed] != "list" {
		listed--
	}
	if between := o.log[listed+1 : first]; len(between) != 0 {
		t.Errorf("in the cycle that found PR 3, read before it: %v", between)
	}
	// The slot reads PR 3's reviews again for its claim, at any moment.
	next := slices.IndexFunc(o.log[first+1:], func(e string) bool { return e != "reviews 3" })
	if next < 0 || o.log[first+1+next] != "reviews 1 (#3 in a slot)" {
		t.Errorf("after PR 3 was decided, want PR 1 read with PR 3 in a slot already: %v", o.log[listed:])
	}
}

// overlapForge notes whether PR n's comments were asked for while its
// reviews were being read: the reviews read waits up to a second for the
// comments read to start.
type overlapForge struct {
	*fakeForge
	n        int
	once     sync.Once
	comments chan struct{} // closed when PR n's comments are first asked for

	mu      sync.Mutex // guards overlap
	overlap []bool     // per reviews read of PR n: were its comments asked for meanwhile
}

func (o *overlapForge) Comments(ctx context.Context, owner, repo string, n int) ([]forge.Comment, error) {
	if n == o.n {
		o.once.Do(func() { close(o.comments) })
	}
	return o.fakeForge.Comments(ctx, owner, repo, n)
}

func (o *overlapForge) Reviews(ctx context.Context, owner, repo string, n int) ([]forge.Review, error) {
	if n == o.n {
		asked := false
		select {
		case <-o.comments:
			asked = true
		case <-time.After(time.Second):
		}
		o.mu.Lock()
		o.overlap = append(o.overlap, asked)
		o.mu.Unlock()
	}
	return o.fakeForge.Reviews(ctx, owner, repo, n)
}

// TestNewPRsCommentsAreReadWithItsReviews: a PR opened while the pool runs,
// with a slot free, has its comments (the claims) read while its reviews
// are, not after.
func TestNewPRsCommentsAreReadWithItsReviews(t *testing.T) {
	f := newFakeForge(1)
	f.review(1, "reviewer", forge.ReviewRequestChanges) // waits for its author: no session
	o := &overlapForge{fakeForge: f, n: 2, comments: make(chan struct{})}
	a := newFakeAgent(approver(f, time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := New(ctx, testConfig(1), Deps{Forge: o, Agent: a})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		waitFor(ctx, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.stats.cycles >= 2 })
		f.mu.Lock()
		f.prs[2] = &forge.PR{Number: 2, State: "open", Mergeable: true, HeadSHA: fakeSHA("sha-2-a"), BaseRef: "main",
			Author: "author", Updated: time.Now(), HeadRepo: "o/r", HeadRef: "feature-2", MergeBase: f.base}
		f.mu.Unlock()
		p.Wake(2)
	}()
	if _, err := p.Run(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v, %v", err, ctx.Err())
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.overlap) == 0 || !o.overlap[0] {
		t.Errorf("PR 2's first reviews read overlapped its comments read: %v; want true first", o.overlap)
	}
	if !f.prs[2].Merged {
		t.Error("PR 2 not merged")
	}
}
