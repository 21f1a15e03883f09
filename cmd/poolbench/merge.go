package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"pool/internal/sandbox"
)

// The merge mode (-mode merge) measures issue 11: how fast a backlog of
// approved, green PRs merges. It first merges K of them with the plain
// serial strategy (one at a time, each as soon as the forge reads it
// mergeable: the forge's limit on this machine), then lets the pool merge K
// fresh ones, and prints both times, their ratio, and merge calls per PR.

// serialPoll is how often the serial strategy reads a PR while the forge
// checks it.
const serialPoll = 200 * time.Millisecond

// mergeRun is one strategy's figures.
type mergeRun struct {
	took     time.Duration
	calls    map[int]int // merge calls per PR
	requests int         // forge requests in all
	merged   int
	timeline []mergeGaps    // the gaps between successive merges
	load     [2]string      // the 1-minute load average at the start and at the end
	kinds    map[string]int // forge requests by kind (the pool's only)
}

type mergeTable struct {
	k       int
	seed    time.Duration
	rounds  []mergeRound
	workers int
	total   time.Duration
	// forgeCPUs: the CPUs the forge was pinned to (-forge-cpus), empty if none
	forgeCPUs string
}

// mergeRound is one serial run and one pool run; poolFirst: the pool's ran
// first.
type mergeRound struct {
	serial, pooled mergeRun
	poolFirst      bool
}

func (r mergeRound) ratio() float64 { return float64(r.pooled.took) / float64(r.serial.took) }

// mergeBacklog measures both strategies on the same load, -rounds times,
// interleaved (serial, pool, pool, serial, ...: mergeRound): on one
// machine the serial loop's pace alone varied by a third across runs an
// hour apart, so one pair settles nothing. Before each run K approved,
// green PRs are opened, and that run merges them.
// (The forge re-tests every open PR after each merge, so opening all 2K at
// once would make the serial run carry twice the load.)
func (b *bench) mergeBacklog(ctx context.Context) (*mergeTable, error) {
	t := &mergeTable{k: b.opts.mergeK, workers: b.opts.mergeWorkers, forgeCPUs: b.opts.forgeCPUs}
	for i := range b.opts.mergeRounds {
		b.progress("merge round %d of %d", i+1, b.opts.mergeRounds)
		r, err := b.mergeRound(ctx, t, i)
		if err != nil {
			return nil, err
		}
		t.rounds = append(t.rounds, r)
	}
	return t, nil
}

// mergeRound runs one serial run and one pool run, the serial first in
// odd rounds and the pool first in even ones (serial, pool, pool, serial,
// ...): every run's repository holds the merges of the runs before it, and
// each test of a PR against the base pays for that, so the strategy run
// second would always meet the larger repository.
func (b *bench) mergeRound(ctx context.Context, t *mergeTable, i int) (mergeRound, error) {
	r := mergeRound{poolFirst: i%2 == 1}
	serialRun := func() error {
		serial, err := b.approvedBacklog(ctx, t, fmt.Sprintf("serial%d", i))
		if err == nil {
			r.serial, err = b.mergeSerially(ctx, serial, serialName(i))
		}
		return err
	}
	poolRun := func() error {
		pooled, err := b.approvedBacklog(ctx, t, fmt.Sprintf("pool%d", i))
		if err == nil {
			r.pooled, err = b.mergeWithPool(ctx, pooled, i)
		}
		return err
	}
	first, second := serialRun, poolRun
	if r.poolFirst {
		first, second = poolRun, serialRun
	}
	if err := first(); err != nil {
		return r, err
	}
	return r, second()
}

// approvedBacklog opens K PRs named after prefix, approves them and reports
// them green, and adds the time it took to t.seed.
func (b *bench) approvedBacklog(ctx context.Context, t *mergeTable, prefix string) ([]int, error) {
	start := time.Now()
	b.progress("opening %d PRs for the %s run (AGit pushes), then approving them and reporting them green, %d at a time", t.k, prefix, b.opts.parallel)
	numbers, err := b.bulk.OpenAGitPRs(ctx, names(prefix, t.k))
	if err != nil {
		return nil, err
	}
	if err := b.sb.ApprovePRs(ctx, numbers, b.opts.parallel); err != nil {
		return nil, err
	}
	t.seed += time.Since(start)
	b.progress("%d approved PRs in %s", len(numbers), round(time.Since(start)))
	return numbers, nil
}

// mergeSerially merges the PRs one after another: each is read until the
// forge reports it mergeable, then merged, pinned to its head. Its calls go
// through a counting proxy like the pool's (mergeWithPool), so both pay the
// same hop to the forge and are timed from the same kind of record: with
// the proxy in front of the pool only, the proxy's work (in this process)
// weighed on the pool alone when the CPU was shared.
func (b *bench) mergeSerially(ctx context.Context, numbers []int, name string) (mergeRun, error) {
	b.progress("serial: merging %d PRs one at a time", len(numbers))
	counter, err := newCountingProxy(b.sb.Forge.URL)
	if err != nil {
		return mergeRun{}, err
	}
	defer counter.Close()
	via := b.sb.Forge.Via(counter.URL)
	run := mergeRun{calls: map[int]int{}, load: [2]string{loadAverage()}}
	start := time.Now()
	for _, n := range numbers {
		for {
			pr, err := b.readPRVia(ctx, via, n)
			if err != nil {
				return run, err
			}
			if pr.Merged {
				break
			}
			if pr.Mergeable {
				run.calls[n]++
				if b.mergeOnce(ctx, via, n, pr.Head.SHA) == http.StatusOK {
					continue // read again: only the forge's word counts
				}
			}
			select {
			case <-ctx.Done():
				return run, ctx.Err()
			case <-time.After(serialPoll):
			}
		}
		run.merged++
	}
	calls := counter.recorded()
	events := eventsOf(calls)
	run.took = lastMergeAnswered(events, start).Sub(start)
	run.requests, run.timeline, run.load[1] = len(calls), timelineOf(events), loadAverage()
	if err := writeCalls(filepath.Join(b.dir, name+"-requests.txt"), calls); err != nil {
		return run, err
	}
	b.progress("serial: %d merged in %s, %d merge calls", run.merged, round(run.took), sum(run.calls))
	return run, nil
}

type benchPR struct {
	Merged    bool `json:"merged"`
	Mergeable bool `json:"mergeable"`
	Head      struct {
		SHA string `json:"sha"`
	} `json:"head"`
}

func (b *bench) readPR(ctx context.Context, n int) (benchPR, error) {
	return b.readPRVia(ctx, b.sb.Forge, n)
}

// readPRVia reads PR n through forge (the forge itself, or a proxy).
func (b *bench) readPRVia(ctx context.Context, forge *sandbox.Forge, n int) (benchPR, error) {
	var pr benchPR
	path := fmt.Sprintf("/repos/%s/%s/pulls/%d", b.sb.Owner, b.sb.Repo, n)
	_, err := forge.Do(ctx, b.sb.PoolToken, http.MethodGet, path, nil, &pr)
	return pr, err
}

// mergeOnce asks forge for one merge and returns the forge's status code.
func (b *bench) mergeOnce(ctx context.Context, forge *sandbox.Forge, n int, head string) int {
	path := fmt.Sprintf("/repos/%s/%s/pulls/%d/merge", b.sb.Owner, b.sb.Repo, n)
	status, _ := forge.Do(ctx, b.sb.PoolToken, http.MethodPost, path, map[string]any{"Do": "merge", "head_commit_id": head}, nil)
	return status
}

// mergeWithPool runs the pool binary, through a proxy that counts its forge
// requests, until every PR is merged, and reads its merge calls from its
// log.
func (b *bench) mergeWithPool(ctx context.Context, numbers []int, nth int) (mergeRun, error) {
	b.progress("pool: merging %d PRs with %d workers", len(numbers), b.opts.mergeWorkers)
	counter, err := newCountingProxy(b.sb.Forge.URL)
	if err != nil {
		return mergeRun{}, err
	}
	defer counter.Close()
	name := "merge-pool"
	if nth > 0 {
		name = fmt.Sprintf("merge-pool-%d", nth+1)
	}
	// The backlog's approvals are the reviewer account's own (ApprovePRs),
	// filed by no session: they count only for an account listed as a human.
	env, err := poolEnv(b.sb, filepath.Join(b.dir, name), "POOL_FORGEJO_URL="+counter.URL, "POOL_IDLE_EXIT=0", "POOL_POLL_INTERVAL=5s",
		"POOL_HUMAN_REVIEWERS="+b.sb.ReviewerUser)
	if err != nil {
		return mergeRun{}, err
	}
	logPath := filepath.Join(b.dir, name+".log")
	start := time.Now()
	p, err := startPool(b.bin, env, logPath, "--workers", strconv.Itoa(b.opts.mergeWorkers))
	if err != nil {
		return mergeRun{}, err
	}
	run := mergeRun{load: [2]string{loadAverage()}}
	err = b.awaitMerged(ctx, numbers, 20*time.Minute)
	run.load[1] = loadAverage()
	calls := counter.recorded()
	events := eventsOf(calls)
	run.took = lastMergeAnswered(events, start).Sub(start)
	run.requests, run.kinds, run.timeline = len(calls), requestKinds(calls), timelineOf(events)
	if err := writeCalls(filepath.Join(b.dir, name+"-requests.txt"), calls); err != nil {
		return run, err
	}
	if serr := p.stop(stopGrace); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return run, fmt.Errorf("pool: %w (log in %s)", err, logPath)
	}
	run.merged = len(numbers)
	if run.calls, err = mergeCallsInLog(logPath); err != nil {
		return run, err
	}
	b.progress("pool: %d merged in %s, %d merge calls, %d forge requests", run.merged, round(run.took), sum(run.calls), run.requests)
	return run, nil
}

// awaitMerged reads the PRs (not through the pool's proxy) until all are
// merged. It reads once every awaitPoll: the pool's time is taken from the
// proxy's record (its last merge answered), not from these reads, and an
// observer reading as often as the pool (an earlier version read every
// 100 ms) loads the forge during the pool's run only.
func (b *bench) awaitMerged(ctx context.Context, numbers []int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	left := append([]int(nil), numbers...)
	for len(left) > 0 {
		pr, err := b.readPR(ctx, left[0])
		if err != nil {
			return err
		}
		if pr.Merged {
			left = left[1:]
			continue
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d PRs not merged after %s", len(left), limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(awaitPoll):
		}
	}
	return nil
}

const awaitPoll = 2 * time.Second

// lastMergeAnswered is when the last merge call the forge answered 200 was
// answered, or now if there was none after start.
func lastMergeAnswered(events []event, start time.Time) time.Time {
	last := time.Time{}
	for _, e := range events {
		if e.merge && e.ok && e.end.After(last) {
			last = e.end
		}
	}
	if last.Before(start) {
		return time.Now()
	}
	return last
}

// mergeCallsInLog counts the pool's "merge answered" lines per PR.
func mergeCallsInLog(path string) (map[int]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the pool log: %w", err)
	}
	defer f.Close()
	calls := map[int]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l, ok := parseLogLine(sc.Text())
		if !ok || l.msg != "merge answered" {
			continue
		}
		if n, err := strconv.Atoi(l.attrs["pr"]); err == nil {
			calls[n]++
		}
	}
	return calls, sc.Err()
}

func sum(m map[int]int) int {
	total := 0
	for _, v := range m {
		total += v
	}
	return total
}

func values(m map[int]int) []int {
	out := make([]int, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// render writes the merge table: each round's two runs, the median of the
// rounds' ratios, and the timeline and the pool's requests.
func (t *mergeTable) render(w io.Writer) {
	fmt.Fprintf(w, "#### merge backlog figures, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "Machine: %s, %s, %d CPUs; %s. Forge: Gitea %s (SQLite), on loopback. %d approved, green PRs per strategy, opened just before its run, so each starts with K open PRs (each adds its own file: no conflicts). %d rounds, each a serial run and a pool run, in the order of the rows (serial first in odd rounds, the pool in even ones: each run's repository holds the merges of the runs before it).\n\n",
		machine(), cpuModel(), runtime.NumCPU(), runtime.Version(), sandbox.GiteaVersion, t.k, len(t.rounds))
	if t.forgeCPUs != "" {
		fmt.Fprintf(w, "The forge (and every process it started) was pinned to CPUs %s (`taskset -c`).\n\n", t.forgeCPUs)
	}
	fmt.Fprintln(w, "| round | strategy | PRs | time | per merge | merge calls per PR: median | max | forge requests | per merged PR | load average, start → end |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	var serial, pooled mergeRun
	var ratios []float64
	var runs []namedRun
	for i, r := range t.rounds {
		type row struct {
			name string
			run  mergeRun
		}
		rows := []row{{"serial, one at a time as soon as mergeable (the forge's limit)", r.serial}, {fmt.Sprintf("pool, %d workers", t.workers), r.pooled}}
		if r.poolFirst {
			rows[0], rows[1] = rows[1], rows[0]
		}
		for _, x := range rows {
			calls := values(x.run.calls)
			fmt.Fprintf(w, "| %d | %s | %d | %s | %s | %.1f | %d | %d | %.1f | %s → %s |\n", i+1, x.name, x.run.merged, round(x.run.took),
				fmtDuration(float64(x.run.took)/float64(max(x.run.merged, 1))), median(calls), maxOf(calls), x.run.requests, perPR(x.run),
				x.run.load[0], x.run.load[1])
		}
		ratios = append(ratios, r.ratio())
		serial, pooled = addRun(serial, r.serial), addRun(pooled, r.pooled)
		runs = append(runs, namedRun{fmt.Sprintf("serial %d", i+1), r.serial}, namedRun{fmt.Sprintf("pool %d", i+1), r.pooled})
	}
	fmt.Fprintf(w, "\nPool time / serial limit: median of the rounds %.2f (rounds: %s); all rounds together %.2f (target ≤ 1.10). Merge calls per merged PR: median %.1f (target ≤ 2), max %d (target ≤ 5).\n",
		medianFloat(ratios), fmtRatios(ratios), float64(pooled.took)/float64(serial.took), median(values(pooled.calls)), maxOf(values(pooled.calls)))
	serialPer, poolPer := perPR(serial), perPR(pooled)
	fmt.Fprintf(w, "Forge requests per merged PR, all rounds: serial %.1f, pool %.1f, ratio %.2f (target ≤ 2).\n", serialPer, poolPer, poolPer/serialPer)
	fmt.Fprintf(w, "The serial strategy reads the PR every %s until the forge reports it mergeable; each run's time ends at its last merge answered. Seeding (AGit pushes, statuses, approvals): %s. Whole run: %s.\n\n",
		serialPoll, round(t.seed), round(t.total))
	renderTimeline(w, runs)
	fmt.Fprintln(w)
	renderRequests(w, pooled.kinds, pooled.merged)
}

// addRun sums two runs' times, merges, requests, merge calls and request
// kinds (the calls' PR numbers differ between runs).
func addRun(a, b mergeRun) mergeRun {
	out := mergeRun{took: a.took + b.took, merged: a.merged + b.merged, requests: a.requests + b.requests,
		calls: map[int]int{}, kinds: map[string]int{}}
	for _, m := range []mergeRun{a, b} {
		for n, c := range m.calls {
			out.calls[n] += c
		}
		for k, c := range m.kinds {
			out.kinds[k] += c
		}
	}
	return out
}

func medianFloat(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, ", ")
}

func perPR(r mergeRun) float64 { return float64(r.requests) / float64(max(r.merged, 1)) }

func (t *mergeTable) finish(total time.Duration) { t.total = total }

// loadAverage is the machine's 1-minute load average, or "?": the two
// strategies run one after the other, and a load that changed between them
// changes their ratio.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// serialName names the files of round i's serial run, as mergeWithPool
// names the pool's.
func serialName(i int) string {
	if i > 0 {
		return fmt.Sprintf("merge-serial-%d", i+1)
	}
	return "merge-serial"
}
