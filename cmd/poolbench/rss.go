package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"pool/configs"
)

// peakRSS is figure 4: the pool binary's peak resident set and its run.
type peakRSS struct {
	kib    int64 // ru_maxrss from wait4, in KiB on Linux
	took   time.Duration
	cycles int
}

// figure4 runs the pool binary over the quiet PRs until it goes idle, and
// reads its peak RSS from wait4's rusage. The pool runs no child processes
// (its clone is go-git, in process), so the figure is the pool's own.
func (b *bench) figure4(ctx context.Context) (peakRSS, error) {
	b.progress("figure 4: the pool binary over %d open quiet PRs until idle exit", b.opts.prs4)
	start := time.Now()
	p, err := b.runPool(ctx, "fig4", []string{"POOL_LOG_LEVEL=info"}, "--workers", "4", "--poll-interval", configs.MinPollInterval.String(),
		"--status-interval", "1s", "--idle-exit", "3")
	if err != nil {
		return peakRSS{}, err
	}
	if err := p.wait(15 * time.Minute); err != nil {
		return peakRSS{}, fmt.Errorf("fig4: %w", err)
	}
	ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return peakRSS{}, fmt.Errorf("fig4: no rusage for the pool process")
	}
	r := peakRSS{kib: ru.Maxrss, took: time.Since(start), cycles: reportField(p.stdout.String(), "REVIEW_CYCLES_COMPLETED")}
	b.progress("  peak RSS %.1f MiB after %d cycles in %s", float64(r.kib)/1024, r.cycles, r.took.Round(100*time.Millisecond))
	return r, nil
}

// reportField reads a number from the pool's exit report; -1 if absent.
func reportField(report, name string) int {
	m := regexp.MustCompile(`(?m)^` + name + `: (\d+)$`).FindStringSubmatch(report)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
