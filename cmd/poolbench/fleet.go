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
	"strings"
	"time"

	"pool/internal/sandbox"
)

// The fleet mode (-mode fleet) is issue 35's benchmark: sessions are the
// bottleneck (the scripted model answers each review's first request after
// -model-delay), and one pool reviews PRs on one agent server of -slots
// slots, then a fresh pool fresh PRs on two such servers. Each pool first
// reviews one PR per slot (the warm-up: each slot's first session starts a
// new instance of the agent server for its work tree, which on a loaded
// machine takes longer than the model's delay), then -fleet-prs PRs opened
// at once (the timed round, warm slots). It prints both rounds' rates of PRs
// reviewed per minute and their ratios (target: at least 1.8).

// batch is one round of PRs reviewed: from the first of their sessions
// started (the warm-up: from the pool's start) to the last ended.
type batch struct {
	prs  int
	took time.Duration
}

// rate is PRs reviewed per minute.
func (r batch) rate() float64 { return float64(r.prs) / r.took.Minutes() }

// fleetRun is one configuration's figures.
type fleetRun struct {
	servers       int
	warmUp, timed batch
	load          [2]string // the 1-minute load average at the timed round's start and end
	perServer     []string  // the exit report's sessions per agent server
}

type fleetTable struct {
	prs, slots int
	delay      time.Duration
	one, two   fleetRun
	seed       time.Duration
	total      time.Duration
}

func (b *bench) fleet(ctx context.Context) (*fleetTable, error) {
	o := b.opts
	t := &fleetTable{prs: o.fleetPRs, slots: o.slots, delay: o.modelDelay}
	b.sb.Model.SetScript(delayed(o.modelDelay, b.calls.wrap(sandbox.Reviewer(sandbox.ReadAndApprove))))
	b.progress("starting a second agent server")
	second, err := b.sb.Agent.Another(ctx, filepath.Join(b.dir, "agent-2"))
	if err != nil {
		return nil, fmt.Errorf("start a second agent server: %w", err)
	}
	defer second.Stop()
	if t.one, err = b.fleetRun(ctx, t, "one", []*sandbox.AgentServer{b.sb.Agent}); err != nil {
		return nil, err
	}
	if t.two, err = b.fleetRun(ctx, t, "two", []*sandbox.AgentServer{b.sb.Agent, second}); err != nil {
		return nil, err
	}
	return t, nil
}

// delayed answers each review conversation's first request after delay,
// as a model taking its time over a diff would.
func delayed(delay time.Duration, script sandbox.Script) sandbox.Script {
	return func(prompt string, outputs []string) sandbox.Turn {
		if len(outputs) == 0 {
			time.Sleep(delay)
		}
		return script(prompt, outputs)
	}
}

// fleetRun runs a pool on servers (t.slots slots each): the warm-up, one
// PR per slot, opened before the pool starts, then the timed round, t.prs
// PRs opened at once. The PRs it did not merge by the end are closed.
func (b *bench) fleetRun(ctx context.Context, t *fleetTable, name string, servers []*sandbox.AgentServer) (fleetRun, error) {
	run := fleetRun{servers: len(servers)}
	slots := t.slots * len(servers)
	warm, err := b.openGreen(ctx, t, name+"-warm", slots)
	if err != nil {
		return run, err
	}
	dir := filepath.Join(b.dir, "fleet-"+name)
	env, err := fleetEnv(b.sb, dir)
	if err != nil {
		return run, err
	}
	config, err := writeServers(dir, servers, t.slots)
	if err != nil {
		return run, err
	}
	logPath := dir + ".log"
	b.progress("%s: warming up: %d PRs on %d agent server(s) of %d slots, the model answering after %s", name, slots, len(servers), t.slots, t.delay)
	poolStart := time.Now()
	p, err := startPool(b.bin, env, logPath, "--config", config)
	if err != nil {
		return run, err
	}
	numbers, err := b.fleetRounds(ctx, t, name, p, warm, poolStart, &run)
	if serr := p.stop(stopGrace); serr != nil && err == nil {
		err = serr
	}
	if err == nil {
		err = b.closeUnmerged(ctx, append(warm, numbers...))
	}
	if err != nil {
		return run, fmt.Errorf("%s: %w (log in %s)", name, err, logPath)
	}
	run.perServer = sessionsByServer(p.stdout.String())
	b.progress("%s: warm-up %s; %d PRs reviewed in %s: %.2f a minute", name, round(run.warmUp.took), t.prs, round(run.timed.took), run.timed.rate())
	return run, nil
}

// fleetRounds times the warm-up (from the pool's start), then opens the
// timed round's PRs and times them; it returns their numbers.
func (b *bench) fleetRounds(ctx context.Context, t *fleetTable, name string, p *poolProc, warm []int, poolStart time.Time, run *fleetRun) ([]int, error) {
	_, end, err := awaitReviewed(ctx, p, warm)
	if err != nil {
		return nil, err
	}
	run.warmUp = batch{prs: len(warm), took: end.Sub(poolStart)}
	numbers, err := b.openGreen(ctx, t, name, t.prs)
	if err != nil {
		return nil, err
	}
	b.progress("%s: reviewing %d PRs", name, t.prs)
	run.load[0] = loadAverage()
	first, end, err := awaitReviewed(ctx, p, numbers)
	run.load[1] = loadAverage()
	run.timed = batch{prs: len(numbers), took: end.Sub(first)}
	return numbers, err
}

// openGreen opens n PRs named after prefix, reported green.
func (b *bench) openGreen(ctx context.Context, t *fleetTable, prefix string, n int) ([]int, error) {
	start := time.Now()
	b.progress("opening %d PRs (AGit pushes), reported green", n)
	numbers, err := b.bulk.OpenAGitPRs(ctx, names("fleet-"+prefix, n))
	if err == nil {
		err = b.sb.ReportGreen(ctx, numbers, b.opts.parallel)
	}
	t.seed += time.Since(start)
	return numbers, err
}

// awaitReviewed reads the pool's log until the session of every PR of
// numbers has ended, and returns when the first of them started and the
// last ended.
func awaitReviewed(ctx context.Context, p *poolProc, numbers []int) (first, last time.Time, err error) {
	left := map[string]bool{}
	for _, n := range numbers {
		left[strconv.Itoa(n)] = true
	}
	mine := map[string]bool{}
	for n := range left {
		mine[n] = true
	}
	for len(left) > 0 {
		l, err := p.waitFor(ctx, 10*time.Minute, "the PRs' sessions to end", func(l logLine) bool {
			return mine[l.attrs["pr"]] && (l.msg == msgStarted || l.msg == msgFinished || l.msg == msgNoResult)
		})
		if err != nil {
			return first, last, fmt.Errorf("%d PRs not reviewed: %w", len(left), err)
		}
		switch {
		case l.msg == msgStarted && first.IsZero():
			first = l.time
		case l.msg != msgStarted && left[l.attrs["pr"]]:
			delete(left, l.attrs["pr"])
			last = l.time
		}
	}
	return first, last, nil
}

// closeUnmerged closes the PRs the pool did not merge before it stopped,
// so that the next run's pool does not merge them while it is timed: the
// merges are the forge's work, and no part of the figure.
func (b *bench) closeUnmerged(ctx context.Context, numbers []int) error {
	for _, n := range numbers {
		pr, err := b.readPR(ctx, n)
		if err != nil {
			return fmt.Errorf("read #%d: %w", n, err)
		}
		if !pr.Merged {
			if err := b.sb.Forge.CloseIssue(ctx, b.sb.OwnerToken, b.sb.Owner, b.sb.Repo, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// fleetEnv is poolEnv without the one agent server: the config file lists
// the servers.
func fleetEnv(sb *sandbox.Sandbox, dir string) ([]string, error) {
	all, err := poolEnv(sb, dir, "POOL_IDLE_EXIT=0", "POOL_POLL_INTERVAL=1s")
	if err != nil {
		return nil, err
	}
	var env []string
	for _, kv := range all {
		if !strings.HasPrefix(kv, "POOL_AGENT_URL=") {
			env = append(env, kv)
		}
	}
	return env, nil
}

// writeServers writes a config file listing servers, each with slots
// workers for both roles, and returns its path.
func writeServers(dir string, servers []*sandbox.AgentServer, slots int) (string, error) {
	var list []string
	for _, s := range servers {
		list = append(list, fmt.Sprintf("{url: %q, workers: %d, role: both}", s.URL, slots))
	}
	path := filepath.Join(dir, "pool.yaml")
	body := "agent:\n  servers: [" + strings.Join(list, ", ") + "]\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		return "", fmt.Errorf("write the pool's config: %w", err)
	}
	return path, nil
}

// sessionsByServer reads the exit report's lines under
// SESSIONS_BY_AGENT_SERVER.
func sessionsByServer(report string) []string {
	var out []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(report))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "SESSIONS_BY_AGENT_SERVER:":
			in = true
		case in && strings.HasPrefix(line, "  - "):
			out = append(out, strings.TrimPrefix(line, "  - "))
		default:
			in = false
		}
	}
	return out
}

func (t *fleetTable) render(w io.Writer) {
	fmt.Fprintf(w, "#### agent servers: one against two, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "Machine: %s, %s, %d CPUs; %s. Forge: Gitea %s (SQLite); agent servers: opencode-ai %s with the scripted model, its first answer in each review after %s; all on loopback.\n\n",
		machine(), cpuModel(), runtime.NumCPU(), runtime.Version(), sandbox.GiteaVersion, sandbox.OpencodeVersion, t.delay)
	fmt.Fprintln(w, "| agent servers | slots each | warm-up: PRs | from the pool's start | per minute | timed: PRs | first session started → last ended | PRs reviewed per minute | load (start → end of the timed round) | sessions per server |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range []fleetRun{t.one, t.two} {
		per := strings.Join(r.perServer, "; ")
		if per == "" {
			per = "–" // the report names no server when there is one
		}
		fmt.Fprintf(w, "| %d | %d | %d | %s | %.2f | %d | %s | %.2f | %s → %s | %s |\n", r.servers, t.slots, r.warmUp.prs, round(r.warmUp.took), r.warmUp.rate(),
			r.timed.prs, round(r.timed.took), r.timed.rate(), r.load[0], r.load[1], per)
	}
	fmt.Fprintf(w, "\nRatio of PRs reviewed per minute, two servers / one: timed round (warm slots) **%.2f** (target ≥ 1.8); warm-up %.2f. Seeding: %s. Whole run: %s.\n",
		t.two.timed.rate()/t.one.timed.rate(), t.two.warmUp.rate()/t.one.warmUp.rate(), round(t.seed), round(t.total))
}

func (t *fleetTable) finish(total time.Duration) { t.total = total }
