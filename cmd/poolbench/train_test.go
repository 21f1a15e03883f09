package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCIVerdict(t *testing.T) {
	rules := []failRule{{file: "bulk/one-3.txt", ownHead: "own"}}
	tests := []struct {
		name  string
		sha   string
		rules []failRule
		files []string // the commit's tree
		want  string
	}{
		{name: "no rule", sha: "a", files: []string{"bulk/one-3.txt"}, want: "success"},
		{name: "the failing change combined", sha: "car", rules: rules, files: []string{"bulk/one-1.txt", "bulk/one-3.txt"}, want: "failure"},
		{name: "the failing change's own head", sha: "own", rules: rules, files: []string{"bulk/one-3.txt"}, want: "success"},
		{name: "another change", sha: "b", rules: rules, files: []string{"bulk/one-2.txt"}, want: "success"},
		{name: "a later rule", sha: "c", rules: append(rules, failRule{file: "bulk/train-5.txt", ownHead: "own5"}), files: []string{"bulk/train-5.txt"}, want: "failure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			holds := func(file string) bool { return slices.Contains(tt.files, file) }
			if got := ciVerdict(tt.sha, tt.rules, holds); got != tt.want {
				t.Errorf("ciVerdict = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestUnseenTestsEachCommitOnce: one commit is one run, whatever branch or
// PR it appears on; main's own commit is not tested.
func TestUnseenTestsEachCommitOnce(t *testing.T) {
	seen := map[string]bool{"old": true}
	got := unseen([]string{"a", "old", "b", "a", "", "main-tip", "b", "c"}, seen, "main-tip")
	if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("unseen = %v, want %v", got, want)
	}
}

func TestCountRunsInTheWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	runs := []ciRun{
		{sha: "seeded", start: at(-30), end: at(-10)},
		{sha: "a", start: at(1), end: at(21)},
		{sha: "b", start: at(5), failed: true}, // still running: counted
		{sha: "c", start: at(100)},             // after the last merge: not counted
	}
	if n, failed := countRuns(runs, at(0), at(60)); n != 2 || failed != 1 {
		t.Errorf("countRuns = %d, %d failed; want 2, 1", n, failed)
	}
}

func TestMergesAnswered(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	calls := []call{
		{method: "POST", uri: "/api/v1/repos/o/r/pulls/1/merge", status: 200, start: at(1), end: at(2)},
		{method: "POST", uri: "/api/v1/repos/o/r/pulls/2/merge", status: 405, start: at(3), end: at(4)},  // refused
		{method: "POST", uri: "/api/v1/repos/o/r/pulls/2/merge", status: 200, start: at(9), end: at(10)}, // the last
		{method: "GET", uri: "/api/v1/repos/o/r/pulls/2/merge", status: 200, start: at(11), end: at(12)}, // a read
		{method: "POST", uri: "/api/v1/repos/o/r/pulls/3/update?style=merge", status: 200, start: at(13), end: at(14)},
		{method: "POST", uri: "/api/v1/repos/o/r/pulls/5/update?style=merge", status: 409, start: at(13), end: at(14)}, // refused
		{method: "POST", uri: "/api/v1/repos/o/other/pulls/4/merge", status: 200, start: at(15), end: at(16)},
	}
	last, merged := mergesAnswered(calls, "o", "r")
	if !last.Equal(at(10)) || merged != 2 {
		t.Errorf("mergesAnswered = %s, %d; want %s, 2", last, merged, at(10))
	}
	if n := updatesAnswered(calls); n != 1 {
		t.Errorf("updatesAnswered = %d, want 1", n)
	}
	if n := callsBefore(calls, at(9)); n != 2 {
		t.Errorf("callsBefore = %d, want 2", n)
	}
}

func TestTrainTable(t *testing.T) {
	tbl := &trainTable{k: 20, ciDelay: 20 * time.Second, fail: 3, sides: [2]trainSide{
		{name: "one", took: 400 * time.Second, merged: 19, runs: 38, failedRuns: 2, requests: 570, updates: 18, failing: 23, notes: 1},
		{name: "train", took: 100 * time.Second, merged: 19, runs: 19, failedRuns: 3, requests: 380, failing: 43, notes: 2},
	}}
	var out bytes.Buffer
	tbl.render(&out)
	got := out.String()
	for _, want := range []string{
		"| one by one (merge.train off) | 19 | 6m40s | 21.05 s | 38 | 2.00 | 570 | 30.0 | 18 |",
		"| trains (merge.train always, train_size 8) | 19 | 1m40s | 5.26 s | 19 | 1.00 | 380 | 20.0 | 0 |",
		"Train / one by one: time 0.25 (target ≤ 0.3), CI runs per merged PR 0.50 (trains: 1.00, target ≤ 1.5), forge requests per merged PR 0.67.",
		"no merge.train setting",
		"#43), trains (merge.train always, train_size 8): not merged, 2 note(s) by the pool (target 1), 3 failed CI run(s)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
}

func TestTrainTableSaysTheTrainSideUpdatedOneByOne(t *testing.T) {
	var out bytes.Buffer
	(&trainTable{k: 4, ciDelay: time.Second, knowsTrains: true, sides: [2]trainSide{{name: "one", updates: 3}, {name: "train", updates: 3}}}).render(&out)
	if want := "The train side brought 3 PRs up to date with the forge's update call"; !strings.Contains(out.String(), want) {
		t.Errorf("the table lacks %q:\n%s", want, out.String())
	}
}

func TestTrainTableWithNothingMerged(t *testing.T) {
	var out bytes.Buffer
	(&trainTable{k: 4, ciDelay: time.Second, knowsTrains: true}).render(&out)
	if s := out.String(); strings.Contains(s, "NaN") || strings.Contains(s, "Inf") || strings.Contains(s, "no merge.train setting") {
		t.Errorf("table:\n%s", s)
	}
}
