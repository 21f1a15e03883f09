package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"pool/internal/sandbox"
)

// The backlog mode (-mode backlog) is issue 11's end-to-end figure: N open,
// green, unreviewed PRs, the pool with W workers reviews (scripted model)
// and merges them all. It prints when every PR had its reviewer session,
// when all were merged, merge calls per PR, and the forge requests of the
// merge phase (from the first merge call on).

type backlogTable struct {
	prs, workers      int
	seed              time.Duration
	lastSession       time.Duration // pool start → the last PR's session started
	allMerged         time.Duration // pool start → every PR merged
	calls             map[int]int
	requests, inMerge int // forge requests in all, and from the first merge call on
	total             time.Duration
}

func (b *bench) backlog(ctx context.Context) (*backlogTable, error) {
	t := &backlogTable{prs: b.opts.backlogPRs, workers: b.opts.mergeWorkers}
	start := time.Now()
	b.progress("opening %d PRs (AGit pushes), reported green, unreviewed", t.prs)
	numbers, err := b.bulk.OpenAGitPRs(ctx, names("review", t.prs))
	if err != nil {
		return nil, err
	}
	if err := b.sb.ReportGreen(ctx, numbers, b.opts.parallel); err != nil {
		return nil, err
	}
	t.seed = time.Since(start)
	counter, err := newCountingProxy(b.sb.Forge.URL)
	if err != nil {
		return nil, err
	}
	defer counter.Close()
	name := "backlog-pool"
	env, err := poolEnv(b.sb, filepath.Join(b.dir, name), "POOL_FORGEJO_URL="+counter.URL, "POOL_IDLE_EXIT=0", "POOL_POLL_INTERVAL=5s")
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(b.dir, name+".log")
	b.progress("pool: reviewing and merging %d PRs with %d workers", t.prs, t.workers)
	poolStart := time.Now()
	p, err := startPool(b.bin, env, logPath, "--workers", strconv.Itoa(t.workers))
	if err != nil {
		return nil, err
	}
	err = b.awaitMerged(ctx, numbers, 30*time.Minute)
	t.allMerged = lastMergeAnswered(eventsOf(counter.recorded()), poolStart).Sub(poolStart)
	if serr := p.stop(stopGrace); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return nil, fmt.Errorf("pool: %w (log in %s)", err, logPath)
	}
	lastSession, firstMerge, err := backlogTimes(logPath)
	if err != nil {
		return nil, err
	}
	t.lastSession = lastSession.Sub(poolStart)
	t.requests, t.inMerge = counter.count(), counter.countSince(firstMerge)
	if t.calls, err = mergeCallsInLog(logPath); err != nil {
		return nil, err
	}
	b.progress("pool: last session started after %s, all merged after %s", round(t.lastSession), round(t.allMerged))
	return t, nil
}

// backlogTimes reads from the pool log when the last session started and
// when the first merge call was answered.
func backlogTimes(path string) (lastSession, firstMerge time.Time, err error) {
	f, err := os.Open(path)
	if err != nil {
		return lastSession, firstMerge, fmt.Errorf("read the pool log: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l, ok := parseLogLine(sc.Text())
		switch {
		case !ok:
		case l.msg == msgStarted:
			lastSession = l.time
		case l.msg == "merge answered" && firstMerge.IsZero():
			firstMerge = l.time
		}
	}
	return lastSession, firstMerge, sc.Err()
}

func (t *backlogTable) render(w io.Writer) {
	calls := values(t.calls)
	fmt.Fprintf(w, "#### backlog end to end, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "Machine: %s, %s, %d CPUs; %s. Forge: Gitea %s (SQLite); agent server: opencode-ai %s with the scripted model; all on loopback.\n\n",
		machine(), cpuModel(), runtime.NumCPU(), runtime.Version(), sandbox.GiteaVersion, sandbox.OpencodeVersion)
	fmt.Fprintln(w, "| PRs | workers | every PR's session started | all merged | merge calls per PR: median | max | forge requests in all | in the merge phase |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	fmt.Fprintf(w, "| %d | %d | %s | %s | %.1f | %d | %d | %d |\n", t.prs, t.workers, round(t.lastSession), round(t.allMerged),
		median(calls), maxOf(calls), t.requests, t.inMerge)
	fmt.Fprintf(w, "\nTimes from the pool's start. The merge phase runs from the first merge call to the last merge. Seeding: %s. Whole run: %s.\n",
		round(t.seed), round(t.total))
}

func (t *backlogTable) finish(total time.Duration) { t.total = total }
