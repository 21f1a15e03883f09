// Command testsummary reads `go test -json` on its standard input and prints
// what plain `go test` prints (each package's closing line, and the output
// of every test that failed), then the slowest tests of the run, so that a
// slow test is noticed the day it is added. .ci/run pipes the README's test
// command through it.
//
//	go test -json ./... | go run ./internal/testsummary -slowest 10
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
	Time    time.Time
}

// timing is one finished top-level test. A parallel test waits, paused,
// for a slot before it runs, and cmd/pool's end-to-end tests then wait
// inside the test for the admission; the go tool's Elapsed counts both.
type timing struct {
	name     string
	seconds  float64 // running, the waits left out
	waited   float64 // paused at t.Parallel, waiting for a slot
	admitted float64 // waiting for cmd/pool's admission
	failed   bool
}

// clock is how long a running top-level test has waited, paused, and
// since when it waits now, and how long it said it waited for admission.
type clock struct {
	pausedAt time.Time
	waited   time.Duration
	admitted float64
}

// admissionWait is the line cmd/pool's admit logs once a test is admitted
// (cmd/pool/admit_test.go), in seconds.
var admissionWait = regexp.MustCompile(`admission: waited ([0-9]+(?:\.[0-9]+)?)s for a slot`)

func main() {
	slowest := flag.Int("slowest", 10, "how many of the slowest tests to list")
	flag.Parse()
	timings, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
		os.Exit(1)
	}
	printSlowest(os.Stdout, timings, *slowest)
}

// summarize copies the package lines and the failed tests' output from in to
// out, and returns the top-level tests' times. A line that is not JSON (a
// build error printed by go itself) is copied as it is.
func summarize(in io.Reader, out io.Writer) ([]timing, error) {
	// a running top-level test's output, its subtests' included, by package
	// and test: a failed test shows all of it
	held := map[string]*strings.Builder{}
	clocks := map[string]*clock{}
	var timings []timing
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(out, sc.Text())
			continue
		}
		top, _, sub := strings.Cut(e.Test, "/")
		key := e.Package + " " + top
		switch {
		case e.Test == "" && e.Action == "output":
			if e.Output != "PASS\n" { // -json runs the tests verbose; plain go test omits it
				fmt.Fprint(out, e.Output)
			}
		case e.Test == "":
		case e.Action == "output":
			if held[key] == nil {
				held[key] = &strings.Builder{}
			}
			held[key].WriteString(e.Output)
			if m := admissionWait.FindStringSubmatch(e.Output); m != nil && !sub {
				if clocks[key] == nil {
					clocks[key] = &clock{}
				}
				s, _ := strconv.ParseFloat(m[1], 64)
				clocks[key].admitted += s
			}
		case sub:
		case e.Action == "pause" || e.Action == "cont":
			clocks[key] = tick(clocks[key], e)
		case e.Action == "pass" || e.Action == "fail" || e.Action == "skip":
			if e.Action == "fail" && held[key] != nil {
				fmt.Fprint(out, held[key].String())
			}
			delete(held, key)
			if e.Action != "skip" {
				timings = append(timings, finish(clocks[key], e))
			}
			delete(clocks, key)
		}
	}
	return timings, sc.Err()
}

// tick follows a top-level test's pause and cont events.
func tick(c *clock, e event) *clock {
	if c == nil {
		c = &clock{}
	}
	switch e.Action {
	case "pause":
		c.pausedAt = e.Time
	case "cont":
		if !c.pausedAt.IsZero() && !e.Time.IsZero() {
			c.waited += e.Time.Sub(c.pausedAt)
		}
		c.pausedAt = time.Time{}
	}
	return c
}

// finish is a test's timing: its Elapsed less its waits.
func finish(c *clock, e event) timing {
	t := timing{name: e.Package + "." + e.Test, seconds: e.Elapsed, failed: e.Action == "fail"}
	if c != nil {
		t.waited = c.waited.Seconds()
		t.admitted = c.admitted
		t.seconds = max(0, e.Elapsed-t.waited-t.admitted)
	}
	return t
}

func printSlowest(out io.Writer, timings []timing, n int) {
	sort.SliceStable(timings, func(i, j int) bool { return timings[i].seconds > timings[j].seconds })
	if len(timings) < n {
		n = len(timings)
	}
	if n == 0 {
		return
	}
	fmt.Fprintf(out, "\nThe %d slowest tests of %d, by their own run time (the waits at t.Parallel and for cmd/pool's admission left out):\n", n, len(timings))
	for _, t := range timings[:n] {
		mark := ""
		if t.failed {
			mark = "  (failed)"
		}
		var waits []string
		if t.waited >= 0.5 { // not 0s
			waits = append(waits, fmt.Sprintf("%.0fs at t.Parallel", t.waited))
		}
		if t.admitted >= 0.5 {
			waits = append(waits, fmt.Sprintf("%.0fs for admission", t.admitted))
		}
		if len(waits) > 0 {
			mark += "  (and waited " + strings.Join(waits, ", ") + ")"
		}
		fmt.Fprintf(out, "%8.1fs  %s%s\n", t.seconds, t.name, mark)
	}
}
