package pool

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"pool/forge"
	"pool/slots"
)

// BenchmarkFairSlots runs one real supervisor per repository on in-process
// fakes, sharing 4 slots: one repository with 100 PRs waiting, nine with
// one each, 100 ms sessions. It reports, the worst over the iterations,
//
//	last-small-start  the session number (1-based, in start order) at
//	                  which the last small repository's PR started; want ≤ 12
//	util%             busy-slot utilisation while PRs wait; want ≥ 98
//
//	go test -run '^$' -bench FairSlots -benchtime 3x ./pool
func BenchmarkFairSlots(b *testing.B) {
	worstStart, worstUtil := 0, 1.0 // over the iterations
	for i := 0; i < b.N; i++ {
		starts, spans := runFairSlots(b, 4, 100*time.Millisecond)
		for r := 1; r <= 9; r++ {
			worstStart = max(worstStart, slices.Index(starts, fmt.Sprintf("acme/small-%d", r))+1)
		}
		util, _ := measure(spans, 4)
		worstUtil = min(worstUtil, util)
	}
	b.ReportMetric(float64(worstStart), "last-small-start")
	b.ReportMetric(worstUtil*100, "util%")
}

// startLog records, across pools, which repository's session started in
// what order, and when each ran.
type startLog struct {
	mu     sync.Mutex
	starts []string
	tl     timeline
}

func (l *startLog) reviewer(repo string, f *fakeForge, d time.Duration) func(int) (time.Duration, func(), string) {
	return func(pr int) (time.Duration, func(), string) {
		l.mu.Lock()
		l.starts = append(l.starts, repo)
		l.mu.Unlock()
		start := time.Now()
		return d, func() {
			l.tl.add(start, time.Now())
			f.review(pr, "reviewer", forge.ReviewApproved)
		}, approvedReply
	}
}

func runFairSlots(b *testing.B, workers int, d time.Duration) ([]string, [][2]time.Time) {
	repos := map[string]int{"acme/big": 100}
	for r := 1; r <= 9; r++ {
		repos[fmt.Sprintf("acme/small-%d", r)] = 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	slots := slots.New(workers, 0)
	var log startLog
	var pools []*Pool
	for repo, n := range repos {
		nums := make([]int, n)
		for i := range nums {
			nums[i] = i + 1
		}
		f := newFakeForge(nums...)
		cfg := testConfig(workers)
		cfg.Owner, cfg.Name = "acme", repo[len("acme/"):]
		cfg.StatusInterval, cfg.PollInterval, cfg.IdleExit = time.Second, 50*time.Millisecond, 2
		p, err := New(ctx, cfg, Deps{Forge: f, Agent: newFakeAgent(log.reviewer(repo, f, d)), Slots: slots})
		if err != nil {
			b.Fatal(err)
		}
		pools = append(pools, p)
	}
	var wg sync.WaitGroup
	for _, p := range pools {
		wg.Go(func() {
			if _, err := p.Run(ctx); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		b.Fatal("the pools did not finish in time")
	}
	if len(log.starts) != 109 {
		b.Fatalf("%d sessions started, want 109", len(log.starts))
	}
	return log.starts, log.tl.spans
}
