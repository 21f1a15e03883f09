package pool

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"pool/forge"
)

// The log lines of a long wait for the forge's test (merger.unready).
const (
	unreadyWarning = "merge queue: the forge has read the PR not mergeable for long"
	unreadyOver    = "merge queue: the forge reads the PR mergeable after a long wait"
)

// virtualClock is a clock that only the test moves.
type virtualClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *virtualClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *virtualClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(d)
}

// unreadyQueue is a pool on a fake forge whose PR 1 is approved and reads
// not mergeable, on a clock the test moves; its log, Info and above, is
// in logs.
type unreadyQueue struct {
	p     *Pool
	f     *fakeForge
	logs  *lockedBuffer
	clock *virtualClock
	start time.Time
}

func newUnreadyQueue(t *testing.T, prs ...int) *unreadyQueue {
	t.Helper()
	clock := &virtualClock{at: time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)}
	f := newFakeForge(append([]int{1}, prs...)...)
	f.now = clock.now
	f.prs[1].Mergeable = false
	for n := range f.prs {
		f.review(n, "reviewer", forge.ReviewApproved)
	}
	logs := &lockedBuffer{}
	p, err := New(context.Background(), testConfig(1), Deps{Forge: f, Agent: newFakeAgent(nil), Now: clock.now,
		Log: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return &unreadyQueue{p: p, f: f, logs: logs, clock: clock, start: clock.now()}
}

// queue adds PR n to the merge queue at its head now, as the loop does.
func (u *unreadyQueue) queue(n int) {
	u.f.mu.Lock()
	head := u.f.prs[n].HeadSHA
	u.f.mu.Unlock()
	u.p.queue.add(n, head, u.clock.now())
}

// until has the merge queue take a turn every step until the clock reads
// at (from the start), and returns the lines logged meanwhile with s in them.
func (u *unreadyQueue) until(at, step time.Duration, s string) []string {
	before := len(u.logs.String())
	for u.clock.now().Before(u.start.Add(at)) {
		u.clock.add(min(step, u.start.Add(at).Sub(u.clock.now())))
		u.p.merger.turn(context.Background())
	}
	var out []string
	for _, line := range strings.Split(u.logs.String()[before:], "\n") {
		if strings.Contains(line, s) {
			out = append(out, brief(line))
		}
	}
	return out
}

// brief is a log line without its time and its advice, for short failures.
func brief(line string) string {
	line, _, _ = strings.Cut(line, " check=")
	if _, rest, ok := strings.Cut(line, " level="); ok {
		return "level=" + rest
	}
	return line
}

// TestALongWaitForTheForgeIsWarnedOfOnABackOff: PR 1 reads not mergeable
// for ever (a re-test the forge lost, as in Gitea's queue race). Nothing
// is said before unreadyWarnAfter; then one warning naming the PR, its
// head and the wait, the next only 20 minutes later, then 40, doubling,
// never more than unreadyWarnMax apart. Meanwhile the status page's row
// says how long it has waited; its commit status does not (it would be
// written every minute).
func TestALongWaitForTheForgeIsWarnedOfOnABackOff(t *testing.T) {
	u := newUnreadyQueue(t)
	if _, err := u.p.cycle(context.Background(), context.Background()); err != nil || !u.p.queue.has(1) {
		t.Fatalf("the loop's cycle did not queue PR 1 (err %v)", err)
	}
	head := forge.Short(u.f.prs[1].HeadSHA)
	if got := u.until(unreadyWarnAfter-time.Minute, time.Minute, unreadyWarning); len(got) != 0 {
		t.Fatalf("warned before %s: %q", unreadyWarnAfter, got)
	}
	got := u.until(unreadyWarnAfter, time.Minute, unreadyWarning)
	want := fmt.Sprintf("pr=1 head=%s base=main waited=10m0s", head)
	if len(got) != 1 || !strings.Contains(got[0], want) || !strings.Contains(got[0], "level=WARN") {
		t.Fatalf("at %s: %q, want one warning with %q", unreadyWarnAfter, got, want)
	}
	u.showsWait(t, "10m")
	for _, w := range []struct {
		at   time.Duration
		said string
	}{{30 * time.Minute, "waited=30m0s"}, {70 * time.Minute, "waited=1h10m0s"}, {150 * time.Minute, "waited=2h30m0s"}} {
		if got := u.until(w.at-time.Minute, time.Minute, unreadyWarning); len(got) != 0 {
			t.Errorf("warned again before %s: %q", w.at, got)
		}
		if got := u.until(w.at, time.Minute, unreadyWarning); len(got) != 1 || !strings.Contains(got[0], w.said) {
			t.Errorf("at %s: %q, want one warning with %s", w.at, got, w.said)
		}
	}
	// 150 min, then 160 later (310), 320 (630), then the 6 h cap: 990, 1350.
	if got := u.until(24*time.Hour, 10*time.Minute, unreadyWarning); len(got) != 4 {
		t.Errorf("from 2h30m to 24h: %d warnings, want 4 (gaps of 160m, 320m, then 6h): %q", len(got), got)
	}
}

// showsWait checks PR 1's row on the status page: it says the PR has waited
// wait for the forge; the description of its commit status does not.
func (u *unreadyQueue) showsWait(t *testing.T, wait string) {
	t.Helper()
	for _, row := range u.p.Status().PRs {
		if row.Number != 1 {
			continue
		}
		if !strings.Contains(row.Next, "waiting "+wait+" for the forge to test it against main") {
			t.Errorf("status page: %q, want it to say the PR waited %s for the forge", row.Next, wait)
		}
		if strings.Contains(row.Commit, "waiting") {
			t.Errorf("commit status: %q, says the wait (written again every minute)", row.Commit)
		}
		return
	}
	t.Errorf("no row for PR 1 on the status page")
}

// TestTheEndOfAWarnedWaitIsSaidOnce: PR 1, warned of, reads mergeable at
// 13 minutes: one line at Info says so, with the wait; a PR never warned
// of reading mergeable says nothing. PR 1's merge is refused for now and it
// reads not mergeable again: the next warning counts from its mergeable read.
func TestTheEndOfAWarnedWaitIsSaidOnce(t *testing.T) {
	u := newUnreadyQueue(t, 2)
	u.f.mergeAnswer[1] = forge.MergeResult{Outcome: forge.MergeNotReady, Status: 405, Message: "Please try again later"}
	u.queue(1)
	u.queue(2) // mergeable, behind PR 1: merged at the first turn
	if got := u.until(12*time.Minute, time.Minute, unreadyWarning); len(got) != 1 {
		t.Fatalf("%d warnings in 12 minutes, want 1: %q", len(got), got)
	}
	u.f.mu.Lock()
	u.f.prs[1].Mergeable = true
	u.f.mu.Unlock()
	got := u.until(13*time.Minute, time.Minute, "merge queue: the forge reads the PR mergeable")
	if len(got) != 1 || !strings.Contains(got[0], unreadyOver) || !strings.Contains(got[0], "pr=1 ") ||
		!strings.Contains(got[0], "waited=13m0s") || !strings.Contains(got[0], "level=INFO") {
		t.Errorf("after PR 1 read mergeable: %q, want one line at Info saying the wait for PR 1 is over, waited=13m0s", got)
	}
	if n := strings.Count(u.logs.String(), unreadyOver); n != 1 {
		t.Errorf("%d lines say a long wait is over, want 1 (PR 2 never waited long)", n)
	}
	if !u.f.isMerged(2) {
		t.Errorf("PR 2 not merged")
	}
	// PR 1's merge call was answered "try again later": it stays queued,
	// and reads not mergeable again. Its wait counts from its mergeable read.
	u.f.mu.Lock()
	u.f.prs[1].Mergeable = false
	u.f.mu.Unlock()
	if got := u.until(22*time.Minute, time.Minute, unreadyWarning); len(got) != 0 {
		t.Errorf("warned within %s of PR 1's mergeable read: %q", unreadyWarnAfter, got)
	}
	if got := u.until(23*time.Minute, time.Minute, unreadyWarning); len(got) != 1 || !strings.Contains(got[0], "waited=10m0s") {
		t.Errorf("%s after PR 1's mergeable read: %q, want one warning, waited=10m0s", unreadyWarnAfter, got)
	}
}

// TestANewHeadStartsTheWaitOver: PR 1, warned of, gets a new head, queued
// again; it reads not mergeable at that head too. The next warning comes
// unreadyWarnAfter after the new head was queued, and names it.
func TestANewHeadStartsTheWaitOver(t *testing.T) {
	u := newUnreadyQueue(t)
	u.queue(1)
	if got := u.until(11*time.Minute, time.Minute, unreadyWarning); len(got) != 1 {
		t.Fatalf("%d warnings in 11 minutes, want 1: %q", len(got), got)
	}
	u.f.push(1, fakeSHA("sha-1-b"))
	u.until(12*time.Minute, time.Minute, "") // the queue reads the new head and hands the PR back
	u.queue(1)
	if got := u.until(21*time.Minute, time.Minute, unreadyWarning); len(got) != 0 {
		t.Errorf("warned within %s of the new head: %q", unreadyWarnAfter, got)
	}
	got := u.until(22*time.Minute, time.Minute, unreadyWarning)
	if want := "head=" + forge.Short(fakeSHA("sha-1-b")); len(got) != 1 || !strings.Contains(got[0], want) {
		t.Errorf("%s after the new head: %q, want one warning with %s", unreadyWarnAfter, got, want)
	}
}

// TestTheQueuesMergesPutTheWarningOff: each merge of the queue's has the
// forge test PR 1 again, so the wait is counted from the last one; but
// merges every 8 minutes put it off for unreadyWarnBusy at most.
func TestTheQueuesMergesPutTheWarningOff(t *testing.T) {
	u := newUnreadyQueue(t, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	u.queue(1)
	n := 2
	mergeAt := func(at time.Duration) []string {
		got := u.until(at, time.Minute, unreadyWarning)
		u.queue(n)
		got = append(got, u.until(at+time.Second, time.Second, unreadyWarning)...)
		if !u.f.isMerged(n) {
			t.Fatalf("PR %d not merged at %s", n, at)
		}
		n++
		return got
	}
	for _, at := range []time.Duration{8 * time.Minute, 16 * time.Minute} {
		if got := mergeAt(at); len(got) != 0 {
			t.Errorf("warned before the merge at %s: %q", at, got)
		}
	}
	if got := u.until(26*time.Minute, time.Minute, unreadyWarning); len(got) != 0 {
		t.Errorf("warned within %s of the last merge: %q", unreadyWarnAfter, got)
	}
	if got := u.until(27*time.Minute, time.Minute, unreadyWarning); len(got) != 1 {
		t.Errorf("%s after the last merge: %d warnings, want 1: %q", unreadyWarnAfter, len(got), got)
	}

	u = newUnreadyQueue(t, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	u.queue(1)
	n = 2
	var got []string
	for at := 8 * time.Minute; at < 72*time.Minute; at += 8 * time.Minute {
		got = append(got, mergeAt(at)...)
		if len(got) > 0 && at < unreadyWarnBusy {
			t.Fatalf("warned before %s though the queue merged every 8 minutes: %q", at, got)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "waited=1h0m") {
		t.Errorf("with a merge every 8 minutes: %q, want one warning at %s", got, unreadyWarnBusy)
	}
}
