package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// An end-to-end test's deadline is its pools' progress, not a wall time. A
// slower or busier machine takes longer over the same work, and the test
// waits for it; only pools that stop moving fail the test. The package's
// -timeout (45 minutes in the README's command) stays the one hard limit.

// stallLimit is how long a test may see no progress before it fails. On an
// idle 2-core machine no test of this package goes a minute without any; five
// leaves a loaded one-core machine room for the slowest step (a cold agent
// server's first session).
const stallLimit = 5 * time.Minute

// progressMarks are the pool's log messages that say it moved a PR on: a
// session started or ended, a merge, an update or a mark answered.
var progressMarks = [][]byte{
	[]byte(`msg="session started"`),
	[]byte(`msg="session finished"`),
	[]byte(`msg="session gave no usable result; the forge decides"`),
	[]byte(`msg="adopted a running session"`),
	[]byte(`msg="merge answered"`),
	[]byte(`msg="update answered"`),
	[]byte(`msg="marking merged answered"`),
	[]byte(`msg="pool starting"`),
}

// progress watches what a test's pools do. It counts steps from the sources
// a test adds (its pools' logs, its sessions' model requests) and ends the
// test's context, with a cause that says so, once none has grown for limit.
type progress struct {
	limit time.Duration

	mu      sync.Mutex
	sources []progressSource
	onStall []func()  // what to show of a stalled test before its context ends
	total   int       // the sum of the sources at the last look
	at      time.Time // when it last grew
	last    string    // the source that grew last
}

type progressSource struct {
	name  string
	count func() int
}

type progressKey struct{}

// testContext is the context an end-to-end test runs under. It ends when the
// test ends, or when what the test watches (watchProgress; startPool and
// startSandbox add their pool and sandbox) has not moved for stallLimit. The
// clock starts with the first thing watched: seeding a sandbox, before it,
// is bounded by the deadline of each of its calls to the forge.
func testContext(t *testing.T) context.Context {
	t.Helper()
	return newProgressContext(t, stallLimit, time.Second)
}

func newProgressContext(t *testing.T, limit, every time.Duration) context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(context.Canceled) })
	w := &progress{limit: limit, at: time.Now(), last: "the test's start"}
	go w.run(ctx, cancel, every)
	return context.WithValue(ctx, progressKey{}, w)
}

// watchProgress adds count, a figure that grows as the test's pools make
// progress, to what ctx's deadline watches. Outside testContext it does
// nothing.
func watchProgress(ctx context.Context, name string, count func() int) {
	w, ok := ctx.Value(progressKey{}).(*progress)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.sources) == 0 {
		w.at, w.last = time.Now(), name // the clock starts with the first source
	}
	w.sources = append(w.sources, progressSource{name, count})
	w.total += count()
}

// onStall adds f to what a stall of ctx's test runs before its context
// ends: a pool's goroutine stacks, so that the failure says where it
// stopped. Outside testContext it does nothing.
func onStall(ctx context.Context, f func()) {
	if w, ok := ctx.Value(progressKey{}).(*progress); ok {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.onStall = append(w.onStall, f)
	}
}

func (w *progress) run(ctx context.Context, cancel context.CancelCauseFunc, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if stalled := w.look(now); stalled != nil {
				w.mu.Lock()
				show := w.onStall
				w.mu.Unlock()
				for _, f := range show {
					f()
				}
				cancel(stalled)
				return
			}
		}
	}
}

// look adds the sources up and returns an error once they have not grown for
// the limit.
func (w *progress) look(now time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.sources) == 0 {
		return nil // the test is still seeding its sandbox: each call to the forge has a deadline of its own
	}
	total, grew := 0, ""
	for _, s := range w.sources {
		total += s.count()
		grew = s.name
	}
	if total != w.total {
		w.total, w.at, w.last = total, now, grew
		return nil
	}
	if idle := now.Sub(w.at); idle >= w.limit {
		return fmt.Errorf("no progress for %s (the limit is %s; last progress: %s, %d steps seen)",
			idle.Round(time.Second), w.limit, w.last, w.total)
	}
	return nil
}

// stopReason says why ctx ended: the stall that ended it, or its error.
func stopReason(ctx context.Context) string {
	if cause := context.Cause(ctx); cause != nil {
		return cause.Error()
	}
	return "the test's context is still live"
}

// markCounter counts the progress marks in what is written to it, a line at
// a time; a line split between writes is counted once whole.
type markCounter struct {
	mu      sync.Mutex
	partial []byte
	n       int
}

func (c *markCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		c.countLine(c.partial[:i])
		c.partial = c.partial[i+1:]
	}
	if len(c.partial) > 64<<10 { // a line that long is no log record of the pool's
		c.partial = c.partial[:0]
	}
	return len(p), nil
}

func (c *markCounter) countLine(line []byte) {
	for _, m := range progressMarks {
		if bytes.Contains(line, m) {
			c.n++
			return
		}
	}
}

func (c *markCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// The stall limit of these two tests is 3 s, sixty times the 50 ms
// between their steps: with 300 ms, a step that a loaded machine delayed
// past the limit ended the first during its steady progress ("no progress
// for 0s (the limit is 300ms; ... 18 steps seen)", two test runs at once on
// two cores).
const shortStall = 3 * time.Second

// TestAStalledTestEndsWithItsCause: the watch ends the context once its
// sources stop growing, says so, and keeps it live while they grow.
func TestAStalledTestEndsWithItsCause(t *testing.T) {
	ctx := newProgressContext(t, shortStall, 20*time.Millisecond)
	var marks markCounter
	watchProgress(ctx, "the pool's log", marks.count)
	for range 20 { // a second of steady progress keeps it live
		fmt.Fprintf(&marks, "time=x level=INFO msg=\"session started\" pr=1\n")
		time.Sleep(50 * time.Millisecond)
		if ctx.Err() != nil {
			t.Fatalf("the context ended while the pool made progress: %s", stopReason(ctx))
		}
	}
	fmt.Fprintf(&marks, "time=x level=WARN msg=\"starting a session failed; backing off\"\n")
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the context outlived a stall of a minute")
	}
	if got := stopReason(ctx); !bytes.Contains([]byte(got), []byte("no progress for")) || !bytes.Contains([]byte(got), []byte("the pool's log")) {
		t.Errorf("stop reason = %q, want it to name the stall and the source", got)
	}
	if marks.count() != 20 {
		t.Errorf("counted %d marks, want 20 (a warning is no progress)", marks.count())
	}
}

// TestMarksSplitBetweenWritesCountOnce: a log record cut by the pipe into
// two writes is one step.
func TestMarksSplitBetweenWritesCountOnce(t *testing.T) {
	var c markCounter
	line := "time=x level=INFO msg=\"merge answered\" pr=3\n"
	c.Write([]byte(line[:20]))
	c.Write([]byte(line[20:] + "time=x level=INFO msg=\"update"))
	c.Write([]byte(" answered\" pr=4\n"))
	if c.count() != 2 {
		t.Errorf("counted %d, want 2", c.count())
	}
}

// TestAStallKeepsThePoolsLogApartFromItsDump: a stalled pool's stack dump
// (longer than any tail a failure shows) does not hide the log before it.
func TestAStallKeepsThePoolsLogApartFromItsDump(t *testing.T) {
	ctx := newProgressContext(t, shortStall, 20*time.Millisecond)
	script := `exec 1>&2
trap 'echo "goroutine 1 [select]:"; head -c 50000 /dev/zero | tr "\0" x; exit 2' QUIT
echo 'time=x level=INFO msg="pool starting"'
echo 'time=x level=INFO msg="waiting for the checks" pr=7'
while :; do sleep 0.05; done`
	p := startPool(t, ctx, "/bin/sh", nil, "-c", script)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		t.Fatal("the stalled process outlived its stall by a minute")
	}
	log, dump := splitDump(p.stderr.String(), int(p.dumpAt.Load()))
	if !strings.HasSuffix(log, "pr=7\n") {
		t.Errorf("the log before the stall ends %q, want the process's last log line", tailOf(log, 80))
	}
	if !strings.HasPrefix(dump, "goroutine 1 ") || len(dump) < 50000 {
		t.Errorf("the dump starts %q (%d bytes), want the stack dump after the log", headOf(dump, 40), len(dump))
	}
}

// TestTheTestsOwnSettingsSurviveTestMain: TestMain clears the pool's
// settings from the environment but keeps the tests' own
// (POOL_TEST_LOG_LEVEL, POOL_TEST_LOG_DIR), which it once cleared too.
func TestTheTestsOwnSettingsSurviveTestMain(t *testing.T) {
	if slices.Contains(flag.Args(), "probe-settings") {
		fmt.Printf("level=%q repo=%q\n", os.Getenv("POOL_TEST_LOG_LEVEL"), os.Getenv("POOL_REPO"))
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTheTestsOwnSettingsSurviveTestMain$", "-test.short", "-test.count=1", "probe-settings")
	cmd.Env = append(os.Environ(), "POOL_TEST_LOG_LEVEL=debug", "POOL_REPO=owner/repo")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the test binary run again: %v\n%s", err, out)
	}
	if want := `level="debug" repo=""`; !strings.Contains(string(out), want) {
		t.Errorf("the test binary run again printed %q, want %q: POOL_TEST_* kept, POOL_* cleared", out, want)
	}
}
