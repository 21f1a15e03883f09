package main

import (
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
)

var mergeAnsweredRE = regexp.MustCompile(`msg="merge answered".* pr=(\d+) outcome=(\S+)`)

// mergeCalls counts the pool's merge calls per PR, and their outcomes, from
// its log.
func mergeCalls(log string) (perPR map[int]int, outcomes map[string]int) {
	perPR, outcomes = map[int]int{}, map[string]int{}
	for _, m := range mergeAnsweredRE.FindAllStringSubmatch(log, -1) {
		n, _ := strconv.Atoi(m[1])
		perPR[n]++
		outcomes[m[2]]++
	}
	return perPR, outcomes
}

// TestBacklogMergesAboutOneCallPerPR: twelve PRs, four workers. Every
// merge into main makes the forge test the other open PRs again; the pool's
// merge queue waits for that instead of asking, one merge at a time. All
// merge, with about one merge call each.
func TestBacklogMergesAboutOneCallPerPR(t *testing.T) {
	parallelLong(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 12, nil)
	bin := buildPool(t)
	start := time.Now()
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir()), "--workers", "4")
	pool.wait(t, ctx)
	took := time.Since(start)
	for _, n := range sb.PRs {
		assertMerged(t, ctx, sb, n)
	}
	perPR, outcomes := mergeCalls(pool.stderr.String())
	var calls []int
	total := 0
	for _, n := range sb.PRs {
		calls = append(calls, perPR[n])
		total += perPR[n]
	}
	slices.Sort(calls)
	med, most := calls[len(calls)/2], calls[len(calls)-1]
	t.Logf("figure: %d PRs, 4 workers: merged in %s; merge calls per PR: median %d, max %d, total %d; outcomes %v",
		len(sb.PRs), took.Round(time.Second), med, most, total, outcomes)
	if med > 2 || most > 5 {
		t.Errorf("merge calls per PR: median %d (want ≤ 2), max %d (want ≤ 5); outcomes %v", med, most, outcomes)
	}
	if got := len(sb.Model.Prompts()); got != len(sb.PRs) {
		t.Errorf("reviewer sessions = %d, want %d", got, len(sb.PRs))
	}
}
