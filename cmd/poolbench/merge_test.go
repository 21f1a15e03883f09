package main

import (
	"strings"
	"testing"
	"time"
)

// The merge table lists each round's runs in the order they ran: the
// serial run first in the first round, the pool's in the second.
func TestMergeTableRowsFollowTheOrderOfTheRuns(t *testing.T) {
	run := func(took time.Duration) mergeRun { return mergeRun{took: took, merged: 10} }
	tbl := &mergeTable{k: 10, workers: 4, rounds: []mergeRound{
		{serial: run(10 * time.Second), pooled: run(11 * time.Second)},
		{serial: run(12 * time.Second), pooled: run(12 * time.Second), poolFirst: true},
	}}
	var b strings.Builder
	tbl.render(&b)
	var order []string
	for _, line := range strings.Split(b.String(), "\n") {
		f := strings.Split(line, " | ")
		if len(f) > 2 && (f[0] == "| 1" || f[0] == "| 2") {
			order = append(order, f[0][2:]+" "+strings.Fields(f[1])[0])
		}
	}
	want := []string{"1 serial,", "1 pool,", "2 pool,", "2 serial,"}
	if strings.Join(order, "; ") != strings.Join(want, "; ") {
		t.Fatalf("rows in order %q, want %q", order, want)
	}
}
