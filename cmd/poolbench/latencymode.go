package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"pool/internal/sandbox"
)

// firstCalls records when the scripted model first heard from each PR's
// reviewer: the first request of a review conversation (one that offers
// tools), before any tool ran.
type firstCalls struct {
	mu sync.Mutex // guards at
	at map[int]time.Time
}

// wrap returns script, noting each PR's first request first.
func (f *firstCalls) wrap(script sandbox.Script) sandbox.Script {
	return func(prompt string, outputs []string) sandbox.Turn {
		if pr, _, _, ok := sandbox.PromptTarget(prompt); ok && len(outputs) == 0 {
			n, _ := strconv.Atoi(pr)
			f.mu.Lock()
			if _, seen := f.at[n]; !seen {
				f.at[n] = time.Now()
			}
			f.mu.Unlock()
		}
		return script(prompt, outputs)
	}
}

func (f *firstCalls) of(n int) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.at[n]
	return t, ok
}

// latencyTable is what -mode latency measured (issue 22): figure 1 with
// webhooks, to the session created and to the reviewer's first model
// request, and the forge requests of a start with -start-prs quiet PRs.
type latencyTable struct {
	opts        options
	serverFirst openings // the agent server's first session, run before the figure
	webhooks    openings
	start       startCount
	total       time.Duration
}

// startCount is the forge requests of the pool's start and two quiet
// cycles, and of those the commit statuses written.
type startCount struct {
	prs, requests, statuses int
}

// latencyMode seeds the quiet PRs, counts a start's requests, then times
// figure 1 with webhooks.
func (b *bench) latencyMode(ctx context.Context) (*latencyTable, error) {
	t := &latencyTable{opts: b.opts}
	hooks := names("hook", b.opts.samples)
	if _, err := b.seedBranches(ctx, branchPlan{webhooks: hooks, refill: []string{"warmup"}}); err != nil {
		return nil, err
	}
	if _, err := b.seedQuietPRs(ctx, names("quiet", b.opts.startPRs)); err != nil {
		return nil, err
	}
	// The PRs were just labelled, many within the newest second: a start
	// then would re-read those as changed in every cycle (figure 3's
	// burst). As figure 3 does, one PR is commented on two seconds later,
	// so the newest update is that PR alone, as a start usually meets it.
	if err := b.touchNewestPR(ctx); err != nil {
		return nil, err
	}
	var err error
	if t.start, err = b.countStart(ctx); err != nil {
		return nil, err
	}
	// The agent server's first session ever is slow whatever its
	// directory (it loads what every session shares): a pool of its own
	// runs one first, and the figure is a pool started afresh on a server
	// that has run sessions, as a relaunch meets it.
	if t.serverFirst, err = b.figure1As(ctx, "-warmup", true, []string{"warmup"}); err != nil {
		return nil, err
	}
	if t.webhooks, err = b.figure1(ctx, true, hooks); err != nil {
		return nil, err
	}
	return t, nil
}

// countStart runs the pool binary, through a proxy that counts its forge
// API requests (its clone's git requests aside), until it exits idle after
// two quiet cycles, and counts them all: the checks, the cycles, the commit
// statuses.
func (b *bench) countStart(ctx context.Context) (startCount, error) {
	name := "start"
	b.progress("start-up: the pool binary with %d open quiet PRs, to idle exit after 2 cycles", b.opts.startPRs)
	counter, err := newCountingProxy(b.sb.Forge.URL)
	if err != nil {
		return startCount{}, err
	}
	defer counter.Close()
	env, err := poolEnv(b.sb, filepath.Join(b.dir, name), "POOL_FORGEJO_URL="+counter.URL, "POOL_LOG_LEVEL=debug")
	if err != nil {
		return startCount{}, err
	}
	p, err := startPool(b.bin, env, filepath.Join(b.dir, name+".log"), "--idle-exit", "2", "--poll-interval", "1s")
	if err != nil {
		return startCount{}, err
	}
	if err := p.wait(2 * time.Minute); err != nil {
		return startCount{}, fmt.Errorf("%s: %w (log in %s.log)", name, err, name)
	}
	api := counter.matching("/api/v1/")
	if err := os.WriteFile(filepath.Join(b.dir, name+"-requests.txt"), []byte(strings.Join(api, "\n")+"\n"), 0o644); err != nil {
		return startCount{}, fmt.Errorf("write the request list: %w", err)
	}
	c := startCount{prs: b.opts.startPRs, requests: len(api), statuses: countPrefixed(api, "POST /api/v1/repos/"+b.sb.Owner+"/"+b.sb.Repo+"/statuses/")}
	b.progress("  start: %d forge API requests, %d of them commit statuses written", c.requests, c.statuses)
	return c, nil
}

// matching lists the requests whose URI holds part.
func (c *countingProxy) matching(part string) []string {
	var out []string
	for _, r := range c.requests() {
		if strings.Contains(r, part) {
			out = append(out, r)
		}
	}
	return out
}

func countPrefixed(reqs []string, prefix string) int {
	n := 0
	for _, r := range reqs {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

func (t *latencyTable) finish(total time.Duration) { t.total = total }

func (t *latencyTable) render(w io.Writer) {
	o, wh := t.opts, t.webhooks
	fmt.Fprintf(w, "## pool latency, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "Machine: %s, %s, %d CPUs; %s. Forge: Gitea %s (SQLite); agent server: opencode-ai %s with the scripted model; all on loopback.\n\n",
		machine(), cpuModel(), runtime.NumCPU(), runtime.Version(), sandbox.GiteaVersion, sandbox.OpencodeVersion)
	fmt.Fprintln(w, "| figure | median | p95 | target | met | notes |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	row := func(figure string, xs []time.Duration, target string, met bool, notes string) {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", figure, fmtDuration(median(xs)), fmtDuration(p95(xs)), target, yesNo(met), notes)
	}
	row("PR opened → session created, webhooks", wh.latency, "—", true,
		fmt.Sprintf("%d PRs one at a time, %d quiet PRs open; %s", len(wh.latency), o.startPRs, wh.split()))
	row("PR opened → reviewer's first model request, webhooks", wh.model, "median < 1 s", median(wh.model) < float64(time.Second),
		fmt.Sprintf("%d PRs; session created → first model request (the agent server's part) median %s, p95 %s",
			len(wh.model), fmtDuration(median(wh.toModel)), fmtDuration(p95(wh.toModel))))
	fmt.Fprintf(w, "| forge requests of a start, %d quiet PRs | %d | — | ≤ %d (1.2 per PR) | %s | the pool binary from start to idle exit after 2 quiet cycles, counted at a proxy (API requests only, not the clone's git); %d of them commit statuses written |\n",
		t.start.prs, t.start.requests, t.start.prs*6/5, yesNo(t.start.requests*5 <= t.start.prs*6), t.start.statuses)
	fmt.Fprintf(w, "\nBefore the figure, a pool of its own ran the agent server's first session (PR opened → first model request %s, session created → first model request %s), which is slow whatever its directory.\n",
		fmtDuration(median(t.serverFirst.model)), fmtDuration(median(t.serverFirst.toModel)))
	fmt.Fprintf(w, "Whole run: %s. Median: middle value (mean of the two middle ones for an even count); p95: nearest rank.\n", round(t.total))
}
