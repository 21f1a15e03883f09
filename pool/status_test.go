package pool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"pool/forge"
	"pool/forgejo"
	"pool/statuspage"
)

// recordingMetrics records the pool's metric calls as plain strings.
type recordingMetrics struct {
	mu     sync.Mutex
	calls  []string
	cycles int
}

func (m *recordingMetrics) add(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, s)
}
func (m *recordingMetrics) SessionStarted(kind string)     { m.add("started " + kind) }
func (m *recordingMetrics) SessionFinished(outcome string) { m.add("finished " + outcome) }
func (m *recordingMetrics) MergeCalled(outcome string)     { m.add("merge " + outcome) }
func (m *recordingMetrics) Merged(by string)               { m.add("merged by " + by) }
func (m *recordingMetrics) RetryAttempted()                { m.add("retry") }
func (m *recordingMetrics) ClaimRace(won bool)             { m.add(fmt.Sprint("claim won=", won)) }
func (m *recordingMetrics) HeadUpdated()                   { m.add("updated") }
func (m *recordingMetrics) TrainFormed()                   { m.add("train formed") }
func (m *recordingMetrics) CarFormed()                     { m.add("car formed") }
func (m *recordingMetrics) CarEjected()                    { m.add("car ejected") }
func (m *recordingMetrics) CycleDone(time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cycles++
}

func (m *recordingMetrics) count(s string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.calls {
		if c == s {
			n++
		}
	}
	return n
}

func runWithMetrics(t *testing.T, f *fakeForge, a *fakeAgent, workers int, during func(context.Context, *Pool)) (*Pool, *recordingMetrics) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m := &recordingMetrics{}
	p, err := New(ctx, testConfig(workers), Deps{Forge: f, Agent: a, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	if during != nil {
		go during(ctx, p)
	}
	if _, err := p.Run(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v (ctx %v)", err, ctx.Err())
	}
	return p, m
}

func nextTexts(st statuspage.Status) map[int]string {
	out := map[int]string{}
	for _, pr := range st.PRs {
		out[pr.Number] = pr.Next
	}
	return out
}

func TestStatusShowsSlotsQueueAndMergedPRs(t *testing.T) {
	f := newFakeForge(1, 2, 3)
	a := newFakeAgent(approver(f, 300*time.Millisecond))
	seen := make(chan statuspage.Status, 1)
	p, _ := runWithMetrics(t, f, a, 1, func(ctx context.Context, p *Pool) {
		var st statuspage.Status
		waitFor(ctx, func() bool {
			st = p.Status()
			return len(st.Slots) == 1 && st.Slots[0].Session != "" && len(st.PRs) == 3 &&
				nextTexts(st)[2] != "" && nextTexts(st)[2] != "waiting for a review slot"
		})
		seen <- st
	})
	busy := <-seen // handed over, so the race detector sees it is read after it was written
	if busy.Workers != 1 || busy.Instance != "pool-test" || busy.Repo != "o/r" || busy.ForgeURL != "http://forge.test" {
		t.Errorf("identity: %+v", busy)
	}
	slot := busy.Slots[0]
	if slot.PR != 1 || slot.Kind != "review" || slot.Since.IsZero() {
		t.Errorf("slot = %+v, want PR 1 under review", slot)
	}
	want := map[int]string{2: "queued for review (next)", 3: "queued for review (1 ahead)"}
	for n, text := range want {
		if got := nextTexts(busy)[n]; got != text {
			t.Errorf("PR #%d says %q, want %q (all: %v)", n, got, text, nextTexts(busy))
		}
	}
	if got := nextTexts(busy)[1]; len(got) < len("reviewing since ") || got[:len("reviewing since ")] != "reviewing since " {
		t.Errorf("PR #1 says %q, want reviewing since ...", got)
	}

	done := p.Status()
	if len(done.Slots) != 0 || done.LastCycle.IsZero() {
		t.Errorf("after the run: slots %v, last cycle %v", done.Slots, done.LastCycle)
	}
	for _, pr := range done.PRs {
		if !pr.Done || !pr.Merged || pr.Next != "merged" || pr.Head == "" {
			t.Errorf("after the run PR #%d: %+v, want merged with its head", pr.Number, pr)
		}
	}
	if len(done.PRs) != 3 {
		t.Errorf("%d PRs shown after the run, want the 3 merged", len(done.PRs))
	}
}

func TestMetricsAreCountedWhereThingsHappen(t *testing.T) {
	f := newFakeForge(1, 2)
	f.mergeAnswer[2] = forgejo.MergeAnswer(400, "bad request")
	a := newFakeAgent(approver(f, 5*time.Millisecond))
	p, m := runWithMetrics(t, f, a, 2, func(ctx context.Context, p *Pool) {
		waitFor(ctx, func() bool { return p.track(2).Attempts >= 3 })
		f.mu.Lock()
		delete(f.mergeAnswer, 2)
		f.mu.Unlock()
	})
	for call, want := range map[string]int{"started review": 2, "finished idle": 2, "claim won=true": 2, "merge merged": 2} {
		if got := m.count(call); got != want {
			t.Errorf("%q counted %d times, want %d (calls: %v)", call, got, want, m.calls)
		}
	}
	if got := m.count("retry"); got < 3 {
		t.Errorf("retry attempts counted %d, want at least 3 (the failed merge calls of PR 2)", got)
	}
	if m.cycles != int(p.report().Cycles) {
		t.Errorf("cycle durations observed %d, cycles completed %d", m.cycles, p.report().Cycles)
	}
}

// A PR whose only status is the pool's own merges: that status is no check.
func TestThePoolsOwnStatusIsNoCheck(t *testing.T) {
	for _, own := range []string{"pending", "success"} {
		f := newFakeForge(1)
		f.statuses[f.prs[1].HeadSHA] = []forge.Status{{ID: 1, Context: "pool", State: own}, {ID: 2, Context: "ci", State: "success"}}
		a := newFakeAgent(approver(f, time.Millisecond))
		cfg := testConfig(1)
		cfg.StatusContext = "pool"
		runPool(t, cfg, f, a)
		if !f.prs[1].Merged {
			t.Errorf("own status %s: the PR did not merge; effects %v", own, f.Effects())
		}
	}
	// Without the filter the pending pool status would hold the merge.
	f := newFakeForge(1)
	f.statuses[f.prs[1].HeadSHA] = []forge.Status{{ID: 1, Context: "pool", State: "pending"}}
	a := newFakeAgent(approver(f, time.Millisecond))
	cfg := testConfig(1)
	cfg.StatusContext = "elsewhere"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	p, err := New(ctx, cfg, Deps{Forge: f, Agent: a})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = p.Run(ctx)
	if f.prs[1].Merged || !slices.Contains([]string{"ci_pending"}, string(p.track(1).State)) {
		t.Errorf("a pending status of another context did not hold the merge: merged=%v state=%s", f.prs[1].Merged, p.track(1).State)
	}
}

func TestOwnStatusRequired(t *testing.T) {
	tests := []struct {
		name string
		prot forge.Protection
		ctx  string
		want bool
	}{
		{"no protection", forge.Protection{}, "pool", false},
		{"status checks, no context named", forge.Protection{StatusCheck: true}, "pool", true},
		{"a glob matching it", forge.Protection{StatusCheck: true, StatusContexts: []string{"p*"}}, "pool", true},
		{"other contexts", forge.Protection{StatusCheck: true, StatusContexts: []string{"ci/*"}}, "pool", false},
		{"no commit status", forge.Protection{StatusCheck: true}, "", false},
	}
	for _, tt := range tests {
		cfg := testConfig(1)
		cfg.StatusContext = tt.ctx
		p := &Pool{cfg: cfg, protection: tt.prot}
		if got := p.OwnStatusRequired(); got != tt.want {
			t.Errorf("%s: OwnStatusRequired = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMergeQueuePosition(t *testing.T) {
	q := newMergeQueue(time.Second)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	q.add(7, "h7", t0.Add(time.Second))
	q.add(3, "h3", t0.Add(time.Second))
	q.add(9, "h9", t0)
	for n, want := range map[int]int{9: 0, 3: 1, 7: 2} {
		if got, ok := q.ahead(n); !ok || got != want {
			t.Errorf("PR %d: %d ahead (queued %v), want %d", n, got, ok, want)
		}
	}
	if _, ok := q.ahead(4); ok {
		t.Error("a PR not in the merge queue has a place in it")
	}
}

// TestMergeQueuePacesTheNextPRAfterAMerge: after a merge, the oldest PR is
// read at once and then every pace while the forge re-tests it, whatever
// its back-off, and the others wait; queuePaceFor later every PR is read
// again.
func TestMergeQueuePacesTheNextPRAfterAMerge(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	q := newMergeQueue(5 * time.Second)
	q.add(2, "b", t0.Add(time.Second))
	q.add(1, "a", t0)
	for range 4 {
		q.notReady(1, t0) // backed off well beyond a pace
		q.notReady(2, t0)
	}
	if _, ok := q.next(t0); ok {
		t.Fatalf("before any merge the queue reads the next PR alone; want every due PR read")
	}
	q.merged(t0)
	head, ok := q.next(t0)
	if !ok || head.n != 1 || head.notBefore.After(t0) {
		t.Fatalf("right after a merge: next %+v (%v); want #1, due at once", head, ok)
	}
	q.paced(1, t0)
	if head, _ := q.next(t0.Add(time.Millisecond)); !head.notBefore.Equal(t0.Add(queuePace)) {
		t.Errorf("#1 read not mergeable: read again at %v, want one pace later, %v", head.notBefore, t0.Add(queuePace))
	}
	later := t0.Add(queuePaceFor)
	if _, ok := q.next(later); ok {
		t.Errorf("%s after the merge the queue still reads the next PR alone", queuePaceFor)
	}
	if due, _ := q.due(later); len(due) != 2 {
		t.Errorf("%s after the merge: due %v, want both", queuePaceFor, due)
	}
	q.merged(t0)
	q.unpace(1)
	if _, ok := q.next(t0); ok {
		t.Errorf("after unpace the queue still reads the next PR alone")
	}
}

// TestMergeQueueSlowPRHoldsTheOthersOnce: a PR that the forge never reads
// mergeable (a conflict reads so) is read alone after a merge for
// queuePaceFor once; after the next merge the next PR is read alone instead.
func TestMergeQueueSlowPRHoldsTheOthersOnce(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	q := newMergeQueue(5 * time.Second)
	q.add(1, "a", t0)
	q.add(2, "b", t0.Add(time.Second))
	q.add(3, "c", t0.Add(2*time.Second))
	q.merged(t0)
	if head, _ := q.next(t0); head.n != 1 {
		t.Fatalf("next = #%d, want #1", head.n)
	}
	q.paced(1, t0)
	later := t0.Add(queuePaceFor)
	if _, paced := q.next(later); paced {
		t.Fatalf("%s after the merge #1 is still read alone", queuePaceFor)
	}
	q.remove(2) // #2 merged
	q.merged(later)
	if head, paced := q.next(later); !paced || head.n != 3 {
		t.Errorf("after the next merge: next #%d (paced %v); want #3: #1 held the others once already", head.n, paced)
	}
	moved := q.unpace(1) // #1 reads mergeable at last
	if moved.IsZero() {
		t.Errorf("unpace lost the merge's time")
	}
	q.merged(later)
	if head, _ := q.next(later); head.n != 1 {
		t.Errorf("after #1 read mergeable: next #%d, want #1 again", head.n)
	}
}

// TestMergeQueueTryLaterRightAfterAMerge: the first "try again later" to
// the first call after a merge is the forge's flag from before the merge:
// the PR is read again at the pace, the queue still reading it alone. A
// second one waits the base wait, doubling, and every third asks to look
// whether the head is on the base. After the next merge, the first refusal
// is read again at the pace once more.
func TestMergeQueueTryLaterRightAfterAMerge(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	q := newMergeQueue(5 * time.Second)
	q.add(1, "a", t0)
	q.add(2, "b", t0.Add(time.Second))
	q.merged(t0)
	moved := q.unpace(1) // #1 read mergeable: its merge call follows
	at := t0.Add(50 * time.Millisecond)
	if q.tryLater(1, moved, at) {
		t.Errorf("the first refusal asks to look on the base")
	}
	head, paced := q.next(at)
	if !paced || head.n != 1 || !head.notBefore.Equal(at.Add(queuePace)) {
		t.Errorf("after the first refusal: next %+v (paced %v); want #1 alone, read again one pace later", head, paced)
	}
	moved = q.unpace(1)
	at = at.Add(queuePace)
	if q.tryLater(1, moved, at) {
		t.Errorf("the second refusal asks to look on the base")
	}
	if _, paced := q.next(at); paced {
		t.Errorf("after the second refusal the queue still reads #1 alone")
	}
	if due, next := q.due(at); len(due) != 1 || due[0].n != 2 || next.Sub(at) < time.Second*3/4 {
		t.Errorf("after the second refusal: due %v, next %v; want #2, and #1 about a second later", due, next)
	}
	if !q.tryLater(1, time.Time{}, at) {
		t.Errorf("the third refusal does not ask to look on the base")
	}
	// #2 merges: #1, read first, meets the flag from before that merge too.
	q.remove(2)
	t1 := at.Add(time.Second)
	q.merged(t1)
	moved = q.unpace(1)
	at = t1.Add(50 * time.Millisecond)
	q.tryLater(1, moved, at)
	if head, paced := q.next(at); !paced || head.n != 1 || !head.notBefore.Equal(at.Add(queuePace)) {
		t.Errorf("after the first refusal since the next merge: next %+v (paced %v); want #1 alone, read again one pace later", head, paced)
	}
	q.add(2, "b", t0.Add(time.Second))
	q.merged(t0)
	q.unpace(1)
	if q.tryLater(2, time.Time{}, at); !q.moved.IsZero() {
		t.Errorf("a refusal of a call that was not the first after a merge paces the queue again")
	}
}

// TestMergeQueueHonoursRetryAfter: a merge call answered 429 or 503 with
// Retry-After backs the PR off at least that long (up to the queue's
// longest wait); a failure that asks nothing backs off by a second.
func TestMergeQueueHonoursRetryAfter(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	q := newMergeQueue(time.Second)
	q.add(1, "a", t0)
	q.add(2, "b", t0)
	q.backOff(1, t0, &forgejo.Error{Op: "merge", Status: 503, Retryable: true, RetryAfter: 20 * time.Second, Err: errors.New("busy")})
	q.backOff(2, t0, errors.New("connection reset"))
	if due, _ := q.due(t0.Add(19 * time.Second)); len(due) != 1 || due[0].n != 2 {
		t.Errorf("19 s later: due %v; want only #2 (#1 was asked to wait 20 s)", due)
	}
	if due, _ := q.due(t0.Add(20 * time.Second)); len(due) != 2 {
		t.Errorf("20 s later: due %v, want both", due)
	}
}

// TestMergeQueueReadsARefusedPRAtItsOwnWaits: an entry whose merge the
// forge refused at its head for a rule is never read alone after a merge;
// the oldest entry that was not refused is.
func TestMergeQueueReadsARefusedPRAtItsOwnWaits(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	q := newMergeQueue(5 * time.Second)
	q.add(1, "a", t0)
	q.wasRefused(1)
	q.merged(t0)
	if head, paced := q.next(t0); paced {
		t.Fatalf("after a merge the queue reads #%d alone, want none: #1's merge was refused", head.n)
	}
	q.add(2, "b", t0.Add(time.Second))
	q.merged(t0.Add(time.Second))
	if head, paced := q.next(t0.Add(time.Second)); !paced || head.n != 2 {
		t.Errorf("after a merge: next #%d (paced %v), want #2, the oldest not refused", head.n, paced)
	}
}
