package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"pool/internal/sandbox"
)

// Targets from issue 6.
const (
	targetWebhook  = time.Second
	targetRefill   = 250 * time.Millisecond
	targetRequests = 5
	targetRSSKiB   = 64 * 1024
)

// table holds everything the bench measured.
type table struct {
	opts                       options
	seedBranches, seed3, seed4 seedStep
	polling, webhooks          openings
	refill                     refills
	requests                   requestCount
	rss                        peakRSS
	total                      time.Duration
}

// row is one line of the table.
type row struct{ figure, median, p95, target, met, notes string }

// median is the middle value (the mean of the two middle ones for an even
// count); p95 is the nearest-rank 95th percentile.
func median[T int | time.Duration](xs []T) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return math.NaN()
	}
	m := len(s) / 2
	if len(s)%2 == 1 {
		return float64(s[m])
	}
	return (float64(s[m-1]) + float64(s[m])) / 2
}

func p95[T int | time.Duration](xs []T) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return math.NaN()
	}
	return float64(s[int(math.Ceil(0.95*float64(len(s))))-1])
}

func fmtDuration(ns float64) string {
	d := time.Duration(ns)
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// fmtInterval writes whole minutes as "10m" rather than "10m0s".
func fmtInterval(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func (t *table) rows() []row {
	o, rq := t.opts, t.requests
	poll := fmtInterval(o.poll)
	return []row{
		{"1a. PR opened → session created, webhooks", fmtDuration(median(t.webhooks.latency)), fmtDuration(p95(t.webhooks.latency)),
			"median < 1 s", yesNo(median(t.webhooks.latency) < float64(targetWebhook)),
			fmt.Sprintf("%d PRs one at a time; `--listen` + `pool hook install`; poll interval %s, so only webhooks wake the pool. %s", len(t.webhooks.latency), fmtInterval(webhookPoll), t.webhooks.split())},
		{"1b. PR opened → session created, polling only", fmtDuration(median(t.polling.latency)), fmtDuration(p95(t.polling.latency)),
			"—", "—", fmt.Sprintf("%d PRs one at a time; poll interval %s (default 30s)", len(t.polling.latency), poll)},
		{"2. session idle → next session started", fmtDuration(median(t.refill.gaps)), fmtDuration(p95(t.refill.gaps)),
			"median < 250 ms", yesNo(median(t.refill.gaps) < float64(targetRefill)),
			fmt.Sprintf("%d samples; 1 worker, %d PRs queued; `session.idle` from the agent's /event; status interval 10s. "+
				"Idle event → `session finished` median %s, p95 %s; `session finished` → next `session started` median %s, p95 %s",
				len(t.refill.gaps), o.samples+1, fmtDuration(median(t.refill.collect)), fmtDuration(p95(t.refill.collect)),
				fmtDuration(median(t.refill.refill)), fmtDuration(p95(t.refill.refill)))},
		{fmt.Sprintf("3. forge requests per idle cycle, %d open PRs", o.prs3), fmt.Sprintf("%g", median(rq.perCycle)), fmt.Sprintf("%g", p95(rq.perCycle)),
			"≤ 5", yesNo(median(rq.perCycle) <= targetRequests),
			fmt.Sprintf("%d quiet cycles, poll 200ms, counted at the HTTP client (clone fetch not counted); mean %.2f, max %d (every 20th cycle lists all open PRs). "+
				"Right after seeding, with the bulk PRs all updated within the newest second: median %g, max %d",
				len(rq.perCycle), mean(rq.perCycle), maxOf(rq.perCycle), median(rq.burst), maxOf(rq.burst))},
		{fmt.Sprintf("4. peak RSS, %d open PRs tracked", o.prs4), fmt.Sprintf("%.1f MiB", float64(t.rss.kib)/1024), "—",
			"< 64 MiB", yesNo(t.rss.kib < targetRSSKiB),
			fmt.Sprintf("pool binary, wait4 ru_maxrss; %d cycles to idle exit in %s", t.rss.cycles, t.rss.took.Round(100*time.Millisecond))},
	}
}

// split says how the webhook latency divides between the forge and the pool.
func (o openings) split() string {
	if len(o.delivery) == 0 {
		return "No webhook woke the pool before its session started"
	}
	return fmt.Sprintf("For the %d PRs a webhook woke the pool for: forge delivery (opened → pool woken) median %s, p95 %s; pool (woken → session started) median %s, p95 %s",
		len(o.delivery), fmtDuration(median(o.delivery)), fmtDuration(p95(o.delivery)), fmtDuration(median(o.reaction)), fmtDuration(p95(o.reaction)))
}

func maxOf(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	return slices.Max(xs)
}

func mean(xs []int) float64 {
	sum := 0
	for _, x := range xs {
		sum += x
	}
	return float64(sum) / float64(len(xs))
}

// render writes the header, the table and the seeding times.
func (t *table) render(w io.Writer) {
	o := t.opts
	fmt.Fprintf(w, "## pool figures, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "Machine: %s, %s, %d CPUs; %s. Forge: Gitea %s (SQLite); agent server: opencode-ai %s with the scripted model; all on loopback.\n",
		machine(), cpuModel(), runtime.NumCPU(), runtime.Version(), sandbox.GiteaVersion, sandbox.OpencodeVersion)
	fmt.Fprintf(w, "PRs: figure 1, %d per mode opened one at a time; figure 2, %d queued; figure 3, %d open and quiet (labelled %q); figure 4, %d open and quiet.\n\n",
		o.samples, o.samples+1, o.prs3, skipLabel, o.prs4)
	fmt.Fprintln(w, "| figure | median | p95 | target | met | notes |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, r := range t.rows() {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", r.figure, r.median, r.p95, r.target, r.met, r.notes)
	}
	fmt.Fprintf(w, "\nSeeding: %d branches (one commit each) by git fast-import and pushes of up to 250 refs in %s; %d quiet PRs in %s and %d more in %s, %s. Whole run: %s.\n",
		t.seedBranches.count, round(t.seedBranches.took), t.seed3.count, round(t.seed3.took), t.seed4.count, round(t.seed4.took), seedHow(o), round(t.total))
	fmt.Fprintln(w, "Median: middle value (mean of the two middle ones for an even count); p95: nearest rank.")
}

func seedHow(o options) string {
	if o.seed == seedAPI {
		return fmt.Sprintf("through the create-PR API with the label, %d at a time", o.parallel)
	}
	return fmt.Sprintf("by AGit pushes (refs/for/main/<topic>, 250 refs a push), then labelled through the API %d at a time", o.parallel)
}

func round(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }

// publish prints the table and, with out set, writes it there too.
func (t *table) publish(stdout io.Writer, out string) error {
	var buf bytes.Buffer
	t.render(&buf)
	if _, err := stdout.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("print the table: %w", err)
	}
	if out == "" {
		return nil
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write the table: %w", err)
	}
	return nil
}

// machine is `uname -m`.
func machine() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return runtime.GOARCH
	}
	var b strings.Builder
	for _, c := range u.Machine {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}

// cpuModel is the first "model name" in /proc/cpuinfo.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
