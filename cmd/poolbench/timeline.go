package main

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The timeline of a merge run (issue 25): for each merge after the first,
// the gaps from the previous merge answered to the next PR's first read,
// from that read to the first read that answers mergeable, from there to
// the next merge call, and the call itself, up to its answer.

// event is one read of a PR or one merge call, as the forge answered it.
type event struct {
	pr         int
	merge      bool // a merge call; else a read of the PR
	start, end time.Time
	ok         bool // a read: mergeable; a merge call: merged (200)
}

// mergeGaps are the parts of the time from one merge answered to the next.
type mergeGaps struct {
	read  time.Duration // merge answered → the next PR's first read answered
	ready time.Duration // that read → the first read answered mergeable
	call  time.Duration // mergeable → the next merge call sent
	merge time.Duration // the call sent → merged (refused calls included)
}

func (g mergeGaps) total() time.Duration { return g.read + g.ready + g.call + g.merge }

// timelineOf splits the time between successive merges of the events.
func timelineOf(events []event) []mergeGaps {
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b event) int { return a.start.Compare(b.start) })
	var merges []event
	for _, e := range events {
		if e.merge && e.ok {
			merges = append(merges, e)
		}
	}
	slices.SortStableFunc(merges, func(a, b event) int { return a.end.Compare(b.end) })
	var out []mergeGaps
	for i := 1; i < len(merges); i++ {
		out = append(out, gapsBetween(events, merges[i-1].end, merges[i]))
	}
	return out
}

// gapsBetween times the way from answered (the previous merge's answer) to
// next, the merge that followed it.
func gapsBetween(events []event, answered time.Time, next event) mergeGaps {
	called, read, ready := next.start, time.Time{}, time.Time{}
	for _, e := range events {
		if e.pr != next.pr || e.start.Before(answered) {
			continue
		}
		switch {
		case e.merge:
			if e.start.Before(called) {
				called = e.start // the first call for it, refused or not
			}
		case read.IsZero():
			read = e.end
			if e.ok {
				ready = e.end
			}
		case ready.IsZero() && e.ok:
			ready = e.end
		}
	}
	clamp := func(t, lo time.Time) time.Time {
		if t.IsZero() || t.Before(lo) {
			return lo
		}
		if t.After(called) {
			return called
		}
		return t
	}
	read = clamp(read, answered)
	ready = clamp(ready, read)
	return mergeGaps{read: read.Sub(answered), ready: ready.Sub(read), call: called.Sub(ready), merge: next.end.Sub(called)}
}

// eventsOf picks the reads of one PR and the merge calls out of the
// proxy's calls.
func eventsOf(calls []call) []event {
	var out []event
	for _, c := range calls {
		path, _, _ := strings.Cut(c.uri, "?")
		switch {
		case c.method == "GET" && onePR.MatchString(path):
			out = append(out, event{pr: lastNumber(path), start: c.start, end: c.end, ok: c.mergeable})
		case c.method == "POST" && strings.HasSuffix(path, "/merge") && onePR.MatchString(strings.TrimSuffix(path, "/merge")):
			out = append(out, event{pr: lastNumber(strings.TrimSuffix(path, "/merge")), merge: true, start: c.start, end: c.end,
				ok: c.status == 200})
		}
	}
	return out
}

func lastNumber(path string) int {
	n, _ := strconv.Atoi(path[strings.LastIndexByte(path, '/')+1:])
	return n
}

// renderTimeline writes the median and p95 of each gap, per strategy.
func renderTimeline(w io.Writer, runs []namedRun) {
	fmt.Fprintln(w, "Per merge, from the previous merge answered (median / p95, merges after the first):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| strategy | merges | answered → next PR read | read → mergeable | mergeable → merge call | merge call → merged | merge to merge |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range runs {
		g := r.run.timeline
		part := func(f func(mergeGaps) time.Duration) string {
			ds := make([]time.Duration, len(g))
			for i, x := range g {
				ds[i] = f(x)
			}
			return fmtDuration(median(ds)) + " / " + fmtDuration(p95(ds))
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s |\n", r.short, len(g),
			part(func(x mergeGaps) time.Duration { return x.read }), part(func(x mergeGaps) time.Duration { return x.ready }),
			part(func(x mergeGaps) time.Duration { return x.call }), part(func(x mergeGaps) time.Duration { return x.merge }),
			part(mergeGaps.total))
	}
}

// namedRun is a strategy's figures under a short name.
type namedRun struct {
	short string
	run   mergeRun
}

var (
	hexID  = regexp.MustCompile(`/[0-9a-f]{40}(/|$)`)
	number = regexp.MustCompile(`/\d+(/|$)`)
)

// requestKind names a request by its method and path, the repository and
// the numbers and commit ids left out: "GET pulls/{n}/reviews".
func requestKind(method, uri string) string {
	path, _, _ := strings.Cut(uri, "?")
	path = strings.TrimPrefix(path, "/api/v1")
	if parts := strings.SplitN(strings.TrimPrefix(path, "/repos/"), "/", 3); strings.HasPrefix(path, "/repos/") && len(parts) == 3 &&
		parts[0] != "issues" {
		path = "/" + parts[2]
	}
	for _, re := range []*regexp.Regexp{hexID, number} {
		for re.MatchString(path) {
			path = re.ReplaceAllStringFunc(path, func(m string) string {
				rep := "/{n}"
				if re == hexID {
					rep = "/{sha}"
				}
				if strings.HasSuffix(m, "/") {
					rep += "/"
				}
				return rep
			})
		}
	}
	return method + " " + strings.TrimPrefix(path, "/")
}

// requestKinds counts the calls by kind.
func requestKinds(calls []call) map[string]int {
	out := map[string]int{}
	for _, c := range calls {
		out[requestKind(c.method, c.uri)]++
	}
	return out
}

// renderRequests writes the pool's forge requests by kind, per merged PR.
func renderRequests(w io.Writer, kinds map[string]int, merged int) {
	if len(kinds) == 0 {
		return
	}
	keys := make([]string, 0, len(kinds))
	for k := range kinds {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if kinds[a] != kinds[b] {
			return kinds[b] - kinds[a]
		}
		return strings.Compare(a, b)
	})
	fmt.Fprintln(w, "The pool's forge requests by kind:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| request | count | per merged PR |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, k := range keys {
		fmt.Fprintf(w, "| `%s` | %d | %.1f |\n", k, kinds[k], float64(kinds[k])/float64(max(merged, 1)))
	}
}
