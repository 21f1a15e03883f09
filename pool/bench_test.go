package pool

import (
	"context"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"pool/forge"
)

// BenchmarkScheduler runs the real supervisor on in-process fakes: 40 PRs,
// 4 workers, session lengths drawn from 50–500 ms. It reports
//
//	util      busy-slot utilisation while the work list is not empty
//	ratio     makespan ÷ the makespan of an ideal zero-overhead greedy
//	          scheduler on the same lengths (computed, not run)
//
// and the same two figures for a batch-barrier scheduler (dispatch N, wait
// for all N, repeat), computed with zero overhead on the same lengths.
//
//	go test -run '^$' -bench Scheduler -benchtime 5x ./pool
func BenchmarkScheduler(b *testing.B) {
	const prs, workers = 40, 4
	for i := 0; i < b.N; i++ {
		rng := rand.New(rand.NewPCG(uint64(i), 42))
		lengths := make(map[int]time.Duration, prs)
		order := make([]time.Duration, 0, prs)
		for n := 1; n <= prs; n++ {
			lengths[n] = time.Duration(50+rng.IntN(451)) * time.Millisecond
			order = append(order, lengths[n])
		}
		util, makespan := runScheduled(b, workers, lengths)
		ideal := greedyMakespan(order, workers)
		barrier := barrierMakespan(order, workers)
		b.ReportMetric(util*100, "util%")
		b.ReportMetric(float64(makespan)/float64(ideal), "ratio")
		b.ReportMetric(barrierUtil(order, workers)*100, "barrier-util%")
		b.ReportMetric(float64(barrier)/float64(ideal), "barrier-ratio")
	}
}

// timeline records when each session ran.
type timeline struct {
	mu    sync.Mutex
	spans [][2]time.Time
}

func (t *timeline) add(start, end time.Time) {
	t.mu.Lock()
	t.spans = append(t.spans, [2]time.Time{start, end})
	t.mu.Unlock()
}

func runScheduled(b *testing.B, workers int, lengths map[int]time.Duration) (util float64, makespan time.Duration) {
	nums := make([]int, 0, len(lengths))
	for n := range lengths {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	f := newFakeForge(nums...)
	var tl timeline
	a := newFakeAgent(func(pr int) (time.Duration, func(), string) {
		start := time.Now()
		return lengths[pr], func() {
			tl.add(start, time.Now())
			f.review(pr, "reviewer", forge.ReviewApproved)
		}, approvedReply
	})
	cfg := testConfig(workers)
	// Completions arrive as agent events; polling is only the fallback.
	cfg.StatusInterval = time.Second
	cfg.IdleExit = 1
	cfg.PollInterval = 50 * time.Millisecond
	ctx := context.Background()
	p, err := New(ctx, cfg, Deps{Forge: f, Agent: a})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.Run(ctx); err != nil {
		b.Fatal(err)
	}
	return measure(tl.spans, workers)
}

// measure: utilisation over [first start, last start] (the work list is
// non-empty until the last session starts), and the makespan.
func measure(spans [][2]time.Time, workers int) (float64, time.Duration) {
	first, lastStart, lastEnd := spans[0][0], spans[0][0], spans[0][1]
	for _, s := range spans {
		first = minTime(first, s[0])
		if s[0].After(lastStart) {
			lastStart = s[0]
		}
		if s[1].After(lastEnd) {
			lastEnd = s[1]
		}
	}
	window := lastStart.Sub(first)
	var busy time.Duration
	for _, s := range spans {
		end := s[1]
		if end.After(lastStart) {
			end = lastStart
		}
		if end.After(s[0]) {
			busy += end.Sub(s[0])
		}
	}
	if window <= 0 {
		return 1, lastEnd.Sub(first)
	}
	return float64(busy) / float64(time.Duration(workers)*window), lastEnd.Sub(first)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// greedyMakespan: each job, in order, starts at once on the earliest free slot.
func greedyMakespan(lengths []time.Duration, workers int) time.Duration {
	free := make([]time.Duration, workers)
	for _, l := range lengths {
		i := 0
		for j := range free {
			if free[j] < free[i] {
				i = j
			}
		}
		free[i] += l
	}
	var end time.Duration
	for _, f := range free {
		end = max(end, f)
	}
	return end
}

// barrierMakespan: batches of N; each batch lasts as long as its longest job.
func barrierMakespan(lengths []time.Duration, workers int) time.Duration {
	var total time.Duration
	for i := 0; i < len(lengths); i += workers {
		var longest time.Duration
		for _, l := range lengths[i:min(i+workers, len(lengths))] {
			longest = max(longest, l)
		}
		total += longest
	}
	return total
}

// barrierUtil is the batch-barrier's busy-slot utilisation over the batches
// that start while work remains (all but the last).
func barrierUtil(lengths []time.Duration, workers int) float64 {
	var busy, window time.Duration
	for i := 0; i+workers < len(lengths); i += workers {
		var longest time.Duration
		for _, l := range lengths[i : i+workers] {
			longest = max(longest, l)
			busy += l
		}
		window += longest
	}
	if window == 0 {
		return 1
	}
	return float64(busy) / float64(time.Duration(workers)*window)
}
