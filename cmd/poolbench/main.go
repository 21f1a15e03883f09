// Command poolbench measures the pool on the real test forge (Gitea) and the
// real agent server (opencode serve with the scripted model), all on
// loopback, and prints the figures of issue 6 as a markdown table:
//
//  1. PR opened → reviewer session created, median and p95, with webhooks
//     and with polling only (both at the same poll interval, -poll);
//  2. session idle → next session started in that slot, median and p95;
//  3. forge requests per idle cycle with -prs3 open PRs, counted at the HTTP
//     client of an in-process pool;
//  4. peak RSS of the pool binary with -prs4 open PRs tracked.
//
// Usage, from the repository root:
//
//	go run ./cmd/poolbench                                 the full run (about 10 minutes on 2 cores)
//	go run ./cmd/poolbench -samples 3 -prs3 50 -prs4 100    a quick trial
//	go run ./cmd/poolbench -out figures.md                 also write the table to a file
//	go run ./cmd/poolbench -mode merge -k 50               issue 11: merging approved PRs (merge.go)
//	go run ./cmd/poolbench -mode backlog -backlog 55       issue 11: reviewing and merging a backlog (backlog.go)
//	go run ./cmd/poolbench -mode repos -repos 100 -repo-prs 20   issue 14: one pool, many repositories (repos.go)
//	go run ./cmd/poolbench -mode latency                   issue 22: figure 1 with webhooks to the first model request, and the start's requests (latencymode.go)
//	go run ./cmd/poolbench -mode fleet                     issue 35: PRs reviewed per minute on two agent servers against one (fleet.go)
//	go run ./cmd/poolbench -mode train -k 20               issue 36: a backlog merged one by one and by merge trains, up-to-date PRs required (train.go)
//
// The table goes to stdout, progress to stderr. The bench asserts nothing:
// it prints what it measured next to the targets. Each pool process logs to
// a file in the work dir (-keep keeps it).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"pool/configs"
	"pool/internal/sandbox"
)

// options are the bench's flags.
type options struct {
	samples  int           // PRs timed in figures 1 and 2 (each)
	prs3     int           // open PRs in figure 3
	prs4     int           // open PRs in figure 4
	poll     time.Duration // the pool's poll interval in figures 1 and 2
	cycles3  int           // quiet cycles counted in figure 3
	parallel int           // concurrent API calls when seeding
	seed     string        // how quiet PRs are made: seedAGit or seedAPI
	out      string
	keep     bool

	mode         string // modeFigures, modeMerge or modeBacklog
	mergeK       int    // approved PRs per strategy in the merge mode
	mergeWorkers int
	mergeRounds  int           // serial and pool runs, interleaved (serial, pool, pool, serial, ...), in the merge mode
	backlogPRs   int           // unreviewed PRs in the backlog mode
	repos        int           // repositories in the repos mode
	repoPRs      int           // open PRs in each
	startPRs     int           // quiet PRs open at the start in the latency mode
	fleetPRs     int           // PRs of each timed round in the fleet mode
	slots        int           // slots of each agent server in the fleet mode
	modelDelay   time.Duration // the model's pause before each review's first answer in the fleet mode
	ciDelay      time.Duration // the stand-in CI's time per commit in the train mode
	failPR       int           // the train mode's PR (1..k) whose change fails the CI once combined; 0: none
	forgeCPUs    string        // CPUs the forge is pinned to (taskset -c), empty: any
}

// The bench's modes.
const (
	modeFigures = "figures"
	modeMerge   = "merge"
	modeBacklog = "backlog"
	modeRepos   = "repos"
	modeLatency = "latency"
	modeFleet   = "fleet"
	modeTrain   = "train"
)

func parseFlags() options {
	var o options
	flag.IntVar(&o.samples, "samples", 10, "PRs timed in figures 1 (per mode) and 2")
	flag.IntVar(&o.prs3, "prs3", 500, "open quiet PRs in figure 3")
	flag.IntVar(&o.prs4, "prs4", 2000, "open quiet PRs in figure 4 (at least -prs3)")
	flag.DurationVar(&o.poll, "poll", 5*time.Second, "the pool's poll interval in figures 1 and 2")
	flag.IntVar(&o.cycles3, "cycles3", 20, "quiet cycles counted in figure 3 (every 20th cycle lists all PRs)")
	flag.IntVar(&o.parallel, "parallel", 8, "API calls at once when seeding")
	flag.StringVar(&o.seed, "seed", seedAGit, "how the quiet PRs are opened: agit (git pushes to refs/for/main/*, then labels) or api (branches, then the create-PR API)")
	flag.StringVar(&o.out, "out", "", "also write the table to this file")
	flag.BoolVar(&o.keep, "keep", false, "keep the work dir (servers' data and the pool logs)")
	flag.StringVar(&o.mode, "mode", modeFigures, "figures (issue 6's four figures), merge (a backlog of approved PRs: serial limit against the pool), backlog, repos (one pool, many repositories), latency, fleet (two agent servers against one), or train (one by one against merge trains, up-to-date PRs required)")
	flag.IntVar(&o.mergeK, "k", 50, "with -mode merge or train: approved PRs merged by each strategy (default 20 with -mode train)")
	flag.StringVar(&o.forgeCPUs, "forge-cpus", "", "pin the forge and every process it starts to these CPUs (taskset -c syntax, e.g. 0): a forge slowed by its host")
	flag.IntVar(&o.mergeRounds, "rounds", 1, "with -mode merge: rounds of a serial run and a pool run, interleaved serial, pool, pool, serial, ... (their median ratio is the figure)")
	flag.IntVar(&o.mergeWorkers, "merge-workers", 4, "with -mode merge or backlog: the pool's workers")
	flag.IntVar(&o.backlogPRs, "backlog", 55, "with -mode backlog: unreviewed PRs")
	flag.IntVar(&o.repos, "repos", 100, "with -mode repos: repositories served by one pool")
	flag.IntVar(&o.repoPRs, "repo-prs", 20, "with -mode repos: open PRs in each repository")
	flag.IntVar(&o.startPRs, "start-prs", 100, "with -mode latency: quiet PRs open when the pool's start is counted")
	flag.IntVar(&o.fleetPRs, "fleet-prs", 12, "with -mode fleet: PRs of the timed round, on one agent server and on two")
	flag.IntVar(&o.slots, "slots", 2, "with -mode fleet: the slots (workers) of each agent server")
	flag.DurationVar(&o.modelDelay, "model-delay", 25*time.Second, "with -mode fleet: the model's pause before each review's first answer")
	flag.DurationVar(&o.ciDelay, "ci-delay", 20*time.Second, "with -mode train: the stand-in CI's time from a new commit to its verdict")
	flag.IntVar(&o.failPR, "fail", 0, "with -mode train: the PR (1..k) whose change fails the CI once combined with anything else (0: none)")
	flag.Parse()
	if o.mode == modeTrain && !flagSet("k") {
		o.mergeK = 20
	}
	return o
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func main() {
	o := parseFlags()
	if err := o.check(); err != nil {
		fmt.Fprintf(os.Stderr, "poolbench: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "poolbench: %v\n", err)
		os.Exit(1)
	}
}

func (o options) check() error {
	switch {
	case o.samples < 1:
		return fmt.Errorf("-samples must be at least 1")
	case o.prs3 < 1 || o.prs4 < o.prs3:
		return fmt.Errorf("want 1 <= -prs3 <= -prs4, got %d and %d", o.prs3, o.prs4)
	case o.poll < configs.MinPollInterval:
		return fmt.Errorf("-poll must be at least %s, the pool's floor", configs.MinPollInterval)
	case o.cycles3 < 1 || o.parallel < 1:
		return fmt.Errorf("-cycles3 and -parallel must be positive")
	case o.seed != seedAGit && o.seed != seedAPI:
		return fmt.Errorf("-seed must be %s or %s, got %q", seedAGit, seedAPI, o.seed)
	case !slices.Contains([]string{modeFigures, modeMerge, modeBacklog, modeRepos, modeLatency, modeFleet, modeTrain}, o.mode):
		return fmt.Errorf("-mode must be %s, %s, %s, %s, %s, %s or %s, got %q", modeFigures, modeMerge, modeBacklog, modeRepos, modeLatency, modeFleet, modeTrain, o.mode)
	case o.ciDelay <= 0 || o.failPR < 0 || o.failPR > o.mergeK:
		return fmt.Errorf("-ci-delay must be positive and -fail between 0 and -k")
	case o.fleetPRs < 1 || o.slots < 1 || o.modelDelay < 0:
		return fmt.Errorf("-fleet-prs and -slots must be positive, -model-delay not negative")
	case o.startPRs < 0:
		return fmt.Errorf("-start-prs must not be negative")
	case o.mergeK < 1 || o.mergeWorkers < 1 || o.mergeRounds < 1 || o.backlogPRs < 1 || o.repos < 2 || o.repoPRs < 1:
		return fmt.Errorf("-k, -merge-workers, -rounds, -backlog and -repo-prs must be positive, -repos at least 2")
	}
	return nil
}

// The ways to open the quiet PRs.
const (
	seedAGit = "agit"
	seedAPI  = "api"
)

// bench is one run: the sandbox, the pool binary, and where things go.
type bench struct {
	opts    options
	sb      *sandbox.Sandbox
	bulk    *sandbox.Bulk
	bin     string // the pool binary
	dir     string // the work dir
	started time.Time
	stderr  io.Writer
	calls   *firstCalls // when the model first heard from each PR's reviewer
	// settle is how long figure 1 lets a pool start before its first PR:
	// its first cycle; in the latency mode also its commit statuses for the
	// quiet PRs.
	settle time.Duration
}

func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(b.stderr, "poolbench: [%6.1fs] %s\n", time.Since(b.started).Seconds(), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	b := &bench{opts: o, started: time.Now(), stderr: stderr, calls: &firstCalls{at: map[int]time.Time{}}, settle: time.Second}
	if o.mode == modeLatency {
		b.settle = 10 * time.Second
	}
	dir, err := os.MkdirTemp("", "poolbench-")
	if err != nil {
		return fmt.Errorf("make work dir: %w", err)
	}
	b.dir = dir
	if o.keep {
		defer b.progress("work dir kept: %s", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if err := b.setUp(ctx); err != nil {
		return err
	}
	defer b.sb.Stop()
	switch o.mode {
	case modeMerge:
		return b.runMode(stdout, func() (renderer, error) { return b.mergeBacklog(ctx) })
	case modeBacklog:
		return b.runMode(stdout, func() (renderer, error) { return b.backlog(ctx) })
	case modeRepos:
		return b.runMode(stdout, func() (renderer, error) { return b.manyRepos(ctx) })
	case modeLatency:
		return b.runMode(stdout, func() (renderer, error) { return b.latencyMode(ctx) })
	case modeFleet:
		return b.runMode(stdout, func() (renderer, error) { return b.fleet(ctx) })
	case modeTrain:
		return b.runMode(stdout, func() (renderer, error) { return b.trains(ctx) })
	}
	tbl, err := b.measure(ctx)
	if err != nil {
		return err
	}
	tbl.total = time.Since(b.started)
	return tbl.publish(stdout, o.out)
}

// setUp starts the sandbox (an empty repository) and builds the pool binary.
func (b *bench) setUp(ctx context.Context) error {
	b.progress("starting the forge and the agent server in %s", b.dir)
	script := b.calls.wrap(sandbox.Reviewer(sandbox.ReadAndApprove))
	sb, err := sandbox.Start(ctx, sandbox.Options{Dir: filepath.Join(b.dir, "sandbox"), Log: b.stderr, Script: script})
	if err != nil {
		return fmt.Errorf("start the sandbox: %w", err)
	}
	b.sb = sb
	if err := pinForge(ctx, sb.Forge, b.opts.forgeCPUs); err != nil {
		sb.Stop()
		return err
	}
	b.bulk = sb.Bulk(filepath.Join(b.dir, "seed"))
	b.bin = filepath.Join(b.dir, "pool")
	b.progress("building the pool binary")
	if out, err := goBuild(ctx, b.bin); err != nil {
		sb.Stop()
		return fmt.Errorf("build the pool: %w: %s", err, out)
	}
	return nil
}

// measure seeds the branches and takes the figures in order: the latency
// figures on a repository without other open PRs, then figure 3 with
// prs3 quiet PRs, then figure 4 with prs4.
func (b *bench) measure(ctx context.Context) (*table, error) {
	o := b.opts
	br := newBranchPlan(o)
	tbl := &table{opts: o}
	var err error
	if tbl.seedBranches, err = b.seedBranches(ctx, br); err != nil {
		return nil, err
	}
	if tbl.refill, err = b.figure2(ctx, br.refill); err != nil {
		return nil, err
	}
	if tbl.polling, err = b.figure1(ctx, false, br.polling); err != nil {
		return nil, err
	}
	if tbl.webhooks, err = b.figure1(ctx, true, br.webhooks); err != nil {
		return nil, err
	}
	b.checkMerged(ctx)
	if tbl.seed3, err = b.seedQuietPRs(ctx, br.quiet[:o.prs3]); err != nil {
		return nil, err
	}
	if tbl.requests, err = b.figure3(ctx); err != nil {
		return nil, err
	}
	if tbl.seed4, err = b.seedQuietPRs(ctx, br.quiet[o.prs3:]); err != nil {
		return nil, err
	}
	if tbl.rss, err = b.figure4(ctx); err != nil {
		return nil, err
	}
	return tbl, nil
}

// renderer is a mode's result.
type renderer interface {
	render(w io.Writer)
	finish(total time.Duration)
}

// runMode measures one mode, then prints (and with -out writes) its table.
func (b *bench) runMode(stdout io.Writer, measure func() (renderer, error)) error {
	t, err := measure()
	if err != nil {
		return err
	}
	t.finish(time.Since(b.started))
	var buf bytes.Buffer
	t.render(&buf)
	if _, err := stdout.Write(buf.Bytes()); err != nil {
		return err
	}
	if b.opts.out != "" {
		return os.WriteFile(b.opts.out, buf.Bytes(), 0o644)
	}
	return nil
}

// pinForge pins every thread of the forge to cpus (taskset -c syntax);
// the processes it starts later (git, its hooks) inherit that. Empty cpus:
// nothing to do.
func pinForge(ctx context.Context, f *sandbox.Forge, cpus string) error {
	if cpus == "" {
		return nil
	}
	out, err := exec.CommandContext(ctx, "taskset", "-a", "-p", "-c", cpus, strconv.Itoa(f.Pid())).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pin the forge to CPUs %s (taskset): %w: %s", cpus, err, out)
	}
	return nil
}
