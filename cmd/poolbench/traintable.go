package main

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"pool/internal/sandbox"
)

// Targets from issue 36, at K = 20 and a 20 s CI.
const (
	targetTrainTime = 0.3 // train time / one-by-one time, at most
	targetTrainRuns = 1.5 // CI runs per merged PR with trains, at most
)

// perMerged is n per merged PR (NaN-free: 0 when nothing merged).
func perMerged(n, merged int) float64 {
	if merged == 0 {
		return 0
	}
	return float64(n) / float64(merged)
}

// ratio is a / b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func (s trainSide) label() string {
	if s.name == "one" {
		return "one by one (merge.train off)"
	}
	return fmt.Sprintf("trains (merge.train always, train_size %d)", trainSize)
}

func (t *trainTable) render(w io.Writer) {
	fmt.Fprintf(w, "#### merge trains, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "Machine: %s, %s, %d CPUs; %s. Forge: Gitea %s (SQLite), on loopback; main requires up-to-date PRs and the check %s. "+
		"%d approved branch PRs per side, each adding its own file, opened and tested green just before its run. "+
		"Stand-in CI: every new commit (but main's) reported pending at once, its verdict %s later.\n\n",
		machine(), cpuModel(), runtime.NumCPU(), runtime.Version(), sandbox.GiteaVersion, benchCIContext, t.k, t.ciDelay)
	fmt.Fprintln(w, "| side | merged | pool start → last merge answered | per merged PR | CI runs | per merged PR | forge requests | per merged PR | updates by the forge's update call | load average, start → end |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range t.sides {
		fmt.Fprintf(w, "| %s | %d | %s | %s | %d | %.2f | %d | %.1f | %d | %s → %s |\n", s.label(), s.merged, round(s.took),
			fmtDuration(perMerged(int(s.took), s.merged)), s.runs, perMerged(s.runs, s.merged), s.requests, perMerged(s.requests, s.merged), s.updates, s.load[0], s.load[1])
	}
	one, train := t.sides[0], t.sides[1]
	trainRuns := perMerged(train.runs, train.merged)
	fmt.Fprintf(w, "\nTrain / one by one: time %.2f (target ≤ %.1f), CI runs per merged PR %.2f (trains: %.2f, target ≤ %.1f), forge requests per merged PR %.2f.\n",
		ratio(float64(train.took), float64(one.took)), targetTrainTime, ratio(trainRuns, perMerged(one.runs, one.merged)), trainRuns, targetTrainRuns,
		ratio(perMerged(train.requests, train.merged), perMerged(one.requests, one.merged)))
	if !t.knowsTrains {
		fmt.Fprintln(w, "The pool binary names no merge.train setting in its --help: the train side ran with POOL_MERGE_TRAIN=always set and merged one by one.")
	} else if train.updates > 0 {
		fmt.Fprintf(w, "The train side brought %d PRs up to date with the forge's update call, the one-by-one path's way.\n", train.updates)
	}
	if t.fail > 0 {
		for _, s := range t.sides {
			fmt.Fprintf(w, "Failing PR (the %d. of the backlog, #%d), %s: %s, %d note(s) by the pool (target 1), %d failed CI run(s) (commits holding its change).\n",
				t.fail, s.failing, s.label(), mergedWord(s.failMerged), s.notes, s.failedRuns)
		}
	}
	fmt.Fprintf(w, "CI runs and forge requests count from the pool's start until the bench saw the last merge (it reads one PR every %s). "+
		"The CI's commits of the backlog's own heads, tested before the pool starts, are not counted. Seeding: %s. Whole run: %s.\n",
		awaitPoll, round(t.seed), round(t.total))
}

func mergedWord(merged bool) string {
	if merged {
		return "**merged**"
	}
	return "not merged"
}

func (t *trainTable) finish(total time.Duration) { t.total = total }
