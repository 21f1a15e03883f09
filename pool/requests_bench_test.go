package pool

import (
	"context"
	"testing"
	"time"

	"pool/forge"
)

// BenchmarkIdleRequests runs the supervisor on the fakes over 80 open PRs
// that all wait for someone (20 each: changes requested, a draft not
// reviewed, approved and green with an open dependency, labelled for
// humans) and reports the forge requests of the first cycle per PR and of
// each quiet cycle after it (the difference of a run of one cycle and one
// of six).
//
//	go test -run '^$' -bench IdleRequests -benchtime 1x ./pool
func BenchmarkIdleRequests(b *testing.B) {
	for i := 0; i < b.N; i++ {
		once, onceCycles := idleRun(b, 1)
		more, moreCycles := idleRun(b, 6)
		b.ReportMetric(float64(once)/idlePRs, "first-cycle-requests/PR")
		b.ReportMetric(float64(more-once)/float64(max(moreCycles-onceCycles, 1)), "requests/quiet-cycle")
	}
}

const idlePRs = 80

// idleRun runs a pool over the idle PRs until idleExit quiet cycles, and
// returns the forge requests it made (its start included) and its cycles.
func idleRun(b *testing.B, idleExit int) (requests, cycles int) {
	f := newFakeForge()
	f.deps = map[int][]string{}
	const each = idlePRs / 4
	for n := 1; n <= idlePRs; n++ {
		f.prs[n] = newFakeForge(n).prs[n]
		head := f.prs[n].HeadSHA
		switch (n - 1) / each {
		case 0:
			f.review(n, "reviewer", forge.ReviewRequestChanges)
		case 1:
			f.prs[n].Draft = true
		case 2:
			f.review(n, "reviewer", forge.ReviewApproved)
			f.statuses[head] = []forge.Status{{Context: "ci", State: "success"}}
			f.deps[n] = []string{"#1000"}
		case 3:
			f.prs[n].Labels = []string{"pool-skip"}
		}
	}
	cfg := testConfig(4)
	cfg.SkipLabel = "pool-skip"
	cfg.IdleExit = idleExit
	p, err := New(context.Background(), cfg, Deps{Forge: f, Agent: newFakeAgent(approver(f, time.Millisecond))})
	if err != nil {
		b.Fatal(err)
	}
	rep, err := p.Run(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if testing.Verbose() {
		b.Logf("idle run of %d cycles: %v", rep.Cycles, f.calls)
	}
	return f.requests(), rep.Cycles
}

// BenchmarkBacklogRequests runs the supervisor on the fakes over 30 open,
// green, unreviewed PRs with 4 workers: each is reviewed (approved) and
// merged. It reports the forge requests per PR.
//
//	go test -run '^$' -bench BacklogRequests -benchtime 1x ./pool
func BenchmarkBacklogRequests(b *testing.B) {
	const prs = 30
	for i := 0; i < b.N; i++ {
		nums := make([]int, prs)
		for k := range nums {
			nums[k] = k + 1
		}
		f := newFakeForge(nums...)
		for _, n := range nums {
			f.statuses[f.prs[n].HeadSHA] = []forge.Status{{Context: "ci", State: "success"}}
		}
		cfg := testConfig(4)
		cfg.IdleExit = 3
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		p, err := New(ctx, cfg, Deps{Forge: f, Agent: newFakeAgent(approver(f, 5*time.Millisecond))})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Run(ctx); err != nil {
			b.Fatal(err)
		}
		cancel()
		for _, n := range nums {
			if !f.isMerged(n) {
				b.Fatalf("#%d not merged", n)
			}
		}
		if testing.Verbose() {
			b.Logf("backlog: %v", f.calls)
		}
		b.ReportMetric(float64(f.requests())/prs, "requests/PR")
	}
}
