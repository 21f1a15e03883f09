package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"pool/internal/sandbox"
)

// The repos mode (-mode repos) is issue 14's figure: one pool process
// serving R repositories with N open PRs each. It runs with --dry-run: it
// decides every PR and starts no session, so every cycle after the first
// is quiet. It reports the forge requests of each round of quiet cycles
// (from one search of the owner's changed PRs to the next, counted at a
// proxy in front of the forge) and the pool's peak RSS.

type reposTable struct {
	repos, prs int
	seed       time.Duration
	run        time.Duration
	rounds     []int // forge requests per round of quiet cycles
	peakKiB    int64
	requests   int
	total      time.Duration
}

// quietRounds is how many rounds of quiet cycles the pool runs before its
// idle exit.
const quietRounds = 10

func (b *bench) manyRepos(ctx context.Context) (*reposTable, error) {
	t := &reposTable{repos: b.opts.repos, prs: b.opts.repoPRs}
	start := time.Now()
	b.progress("making %d repositories with %d open PRs each (AGit pushes)", t.repos, t.prs)
	var names []string
	for i := 1; i <= t.repos; i++ {
		name := fmt.Sprintf("svc-%03d", i)
		if err := b.sb.AddRepo(ctx, name); err != nil {
			return nil, err
		}
		bulk := b.sb.BulkIn(filepath.Join(b.dir, "seed-"+name), name)
		if _, err := bulk.OpenAGitPRs(ctx, prNames(t.prs)); err != nil {
			return nil, err
		}
		names = append(names, b.sb.Owner+"/"+name)
	}
	t.seed = time.Since(start)
	b.progress("seeded in %s", round(t.seed))
	counter, err := newCountingProxy(b.sb.Forge.URL)
	if err != nil {
		return nil, err
	}
	defer counter.Close()
	name := "repos-pool"
	env, err := poolEnv(b.sb, filepath.Join(b.dir, name), "POOL_FORGEJO_URL="+counter.URL, "POOL_LOG_LEVEL=info",
		"POOL_REPO="+strings.Join(names, ","), "POOL_IDLE_EXIT="+strconv.Itoa(quietRounds+1))
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(b.dir, name+".log")
	b.progress("pool: --dry-run over %d repositories until idle exit", t.repos)
	runStart := time.Now()
	p, err := startPool(b.bin, env, logPath, "--dry-run", "--workers", "4", "--poll-interval", "1s")
	if err != nil {
		return nil, err
	}
	if err := p.wait(30 * time.Minute); err != nil {
		return nil, fmt.Errorf("pool: %w (log in %s)", err, logPath)
	}
	t.run = time.Since(runStart)
	ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return nil, fmt.Errorf("pool: no rusage")
	}
	t.peakKiB = ru.Maxrss
	reqs := counter.requests()
	t.requests = len(reqs)
	t.rounds = searchRounds(reqs)
	b.progress("pool: %d requests in all; per round of quiet cycles %v; peak RSS %.1f MiB", t.requests, t.rounds, float64(t.peakKiB)/1024)
	return t, nil
}

func prNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("change-%d", i+1)
	}
	return out
}

// searchRounds counts the requests from each search of changed PRs (its
// first page) to the next. The first two rounds (the start, every PR read
// once) and the last (cut by the exit) are left out. With many
// repositories the start spans more rounds (the pools are opened a few at a
// time): see quiet.
func searchRounds(reqs []string) []int {
	var rounds []int
	for _, r := range reqs {
		if strings.HasPrefix(r, "GET /api/v1/repos/issues/search?") && strings.HasSuffix(r, "&page=1") {
			rounds = append(rounds, 0)
		}
		if len(rounds) > 0 {
			rounds[len(rounds)-1]++
		}
	}
	if len(rounds) < 4 {
		return nil
	}
	return rounds[2 : len(rounds)-1]
}

// quiet are the last rounds, those of the idle cycles before the exit.
func (t *reposTable) quiet() []int {
	return t.rounds[max(0, len(t.rounds)-quietRounds):]
}

func (t *reposTable) render(w io.Writer) {
	fmt.Fprintf(w, "#### several repositories, one pool, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "Machine: %s, %s, %d CPUs; %s. Forge: Gitea %s (SQLite), on loopback.\n\n",
		machine(), cpuModel(), runtime.NumCPU(), runtime.Version(), sandbox.GiteaVersion)
	fmt.Fprintln(w, "| repositories | open PRs each | forge requests per round of quiet cycles: median | max | quiet rounds | peak RSS | forge requests in all |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	quiet := t.quiet()
	fmt.Fprintf(w, "| %d | %d | %.1f | %d | %d | %.1f MiB | %d |\n", t.repos, t.prs, median(quiet), maxOf(quiet), len(quiet),
		float64(t.peakKiB)/1024, t.requests)
	fmt.Fprintf(w, "\nForge requests per round of cycles, from one search to the next (the start first): %v.\n", t.rounds)
	fmt.Fprintf(w, "\nThe pool ran with --dry-run (every PR decided, no session), --poll-interval 1s, until %d idle cycles. "+
		"Targets: at most 3 requests per quiet cycle, under 96 MiB. Seeding: %s; the pool's run: %s; whole run: %s.\n",
		quietRounds+1, round(t.seed), round(t.run), round(t.total))
}

func (t *reposTable) finish(total time.Duration) { t.total = total }
