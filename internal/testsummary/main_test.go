package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSummarize: package lines pass through, a failed test's output is
// shown (its subtests' too) and a passed test's is not, and the slowest top-level tests are
// listed slowest first by their time running (a parallel test's wait for a
// slot apart), subtests and skipped tests left out.
func TestSummarize(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"start","Package":"p"}`,
		`{"Action":"run","Package":"p","Test":"TestFast"}`,
		`{"Action":"output","Package":"p","Test":"TestFast","Output":"=== RUN   TestFast\n"}`,
		`{"Action":"output","Package":"p","Test":"TestFast","Output":"fast log line\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestFast","Elapsed":0.5}`,
		`{"Action":"output","Package":"p","Test":"TestSlow/sub","Output":"sub log line\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestSlow/sub","Elapsed":40}`,
		`{"Action":"output","Package":"p","Test":"TestSlow","Output":"slow failed here\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestSlow","Elapsed":41}`,
		`{"Action":"skip","Package":"p","Test":"TestSkipped","Elapsed":99}`,
		`{"Action":"run","Package":"p","Test":"TestParallel","Time":"2026-12-02T10:00:00Z"}`,
		`{"Action":"pause","Package":"p","Test":"TestParallel","Time":"2026-12-02T10:00:00.5Z"}`,
		`{"Action":"cont","Package":"p","Test":"TestParallel","Time":"2026-12-02T10:05:00.5Z"}`,
		`{"Action":"pass","Package":"p","Test":"TestParallel","Elapsed":320.5,"Time":"2026-12-02T10:05:20.5Z"}`,
		`# a build error line`,
		`{"Action":"output","Package":"q","Output":"PASS\n"}`,
		`{"Action":"output","Package":"q","Output":"ok  \tq\t1.0s\n"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t42.0s\n"}`,
		`{"Action":"fail","Package":"p","Elapsed":42}`,
	}, "\n")
	got := summaryOf(t, in)
	for _, want := range []string{"sub log line\nslow failed here\n", "\nok  \tq\t1.0s\n", "# a build error line\n", "FAIL\tp\t42.0s\n",
		"The 3 slowest tests of 3, by their own run time (the waits at t.Parallel and for cmd/pool's admission left out):\n" +
			"    41.0s  p.TestSlow  (failed)\n    20.5s  p.TestParallel  (and waited 300s at t.Parallel)\n     0.5s  p.TestFast\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"fast log line", "TestSkipped", "TestSlow/sub", "PASS"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("summary shows %q:\n%s", unwanted, got)
		}
	}
}

// TestAdmissionWaitLeftOut: an end-to-end test's time in the list is its own
// run: its pause at t.Parallel and the wait for cmd/pool's admission that it
// logs are left out, and both are shown beside it (where they are not 0s).
func TestAdmissionWaitLeftOut(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestEndToEnd","Time":"2026-12-02T10:00:00Z"}`,
		`{"Action":"output","Package":"p","Test":"TestEndToEnd","Output":"=== RUN   TestEndToEnd\n"}`,
		`{"Action":"pause","Package":"p","Test":"TestEndToEnd","Time":"2026-12-02T10:00:00.5Z"}`,
		`{"Action":"cont","Package":"p","Test":"TestEndToEnd","Time":"2026-12-02T10:01:00.5Z"}`,
		`{"Action":"output","Package":"p","Test":"TestEndToEnd","Output":"    admit_test.go:148: admission: waited 200.0s for a slot\n"}`,
		`{"Action":"output","Package":"p","Test":"TestEndToEnd","Output":"--- PASS: TestEndToEnd (300.50s)\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestEndToEnd","Elapsed":300.5,"Time":"2026-12-02T10:05:00.5Z"}`,
		`{"Action":"run","Package":"p","Test":"TestUnit","Time":"2026-12-02T10:00:00Z"}`,
		`{"Action":"pause","Package":"p","Test":"TestUnit","Time":"2026-12-02T10:00:00Z"}`,
		`{"Action":"cont","Package":"p","Test":"TestUnit","Time":"2026-12-02T10:00:00.2Z"}`,
		`{"Action":"output","Package":"p","Test":"TestUnit","Output":"    admit_test.go:148: admission: waited 0.3s for a slot\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestUnit","Elapsed":50.5,"Time":"2026-12-02T10:00:50.5Z"}`,
	}, "\n")
	got := summaryOf(t, in)
	want := "    50.0s  p.TestUnit\n    40.5s  p.TestEndToEnd  (and waited 60s at t.Parallel, 200s for admission)\n"
	if !strings.Contains(got, want) {
		t.Errorf("summary lacks %q:\n%s", want, got)
	}
	if !strings.Contains(got, "cmd/pool's admission") || !strings.Contains(got, "left out") {
		t.Errorf("the list's heading does not say what it leaves out:\n%s", got)
	}
}

// The line cmd/pool's admission logs is the line admissionWait reads: a
// reworded t.Logf there would quietly count the wait again.
func TestAdmissionLineMatchesCmdPool(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "cmd", "pool", "admit_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	format := regexp.MustCompile(`t\.Logf\("(admission: waited %\.1fs for a slot)"`).FindSubmatch(src)
	if format == nil {
		t.Fatal("cmd/pool/admit_test.go logs no admission wait line in the form admissionWait reads")
	}
	if line := fmt.Sprintf(string(format[1]), 12.3); !admissionWait.MatchString(line) {
		t.Errorf("admissionWait does not read %q", line)
	}
}

// summaryOf is what the summary prints for the go test -json stream in,
// the ten slowest tests included.
func summaryOf(t *testing.T, in string) string {
	t.Helper()
	var out strings.Builder
	timings, err := summarize(strings.NewReader(in), &out)
	if err != nil {
		t.Fatal(err)
	}
	printSlowest(&out, timings, 10)
	return out.String()
}
