package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"pool/internal/sandbox"
	"pool/ops"
	"pool/statuspage"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "write the status page screenshot to docs/status-page.png")

// gate holds reviewer sessions at their first model turn until released, so
// a test can look at a pool whose slots are busy.
type gate struct {
	release chan struct{}
	once    sync.Once
	only    map[string]bool // PR numbers held; nil: every PR
}

func newGate(only ...int) *gate {
	g := &gate{release: make(chan struct{})}
	if len(only) > 0 {
		g.only = map[string]bool{}
		for _, n := range only {
			g.only[fmt.Sprint(n)] = true
		}
	}
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func (g *gate) script(inner sandbox.Script) sandbox.Script {
	return func(prompt string, outputs []string) sandbox.Turn {
		if pr, _, _, ok := sandbox.PromptTarget(prompt); ok && len(outputs) == 0 && (g.only == nil || g.only[pr]) {
			<-g.release
		}
		return inner(prompt, outputs)
	}
}

func getStatus(t *testing.T, ctx context.Context, base string) statuspage.Status {
	t.Helper()
	st, err := ops.Fetch(ctx, &http.Client{Timeout: 10 * time.Second}, base)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func tryStatus(ctx context.Context, base string) (statuspage.Status, bool) {
	st, err := ops.Fetch(ctx, &http.Client{Timeout: 10 * time.Second}, base)
	return st, err == nil
}

// TestStatusPageAndMetrics: a run with two busy slots, seen through the ops
// listener: the status page in headless Chromium (screenshot kept in the
// test's artifact dir) shows both slots and every PR's state; /api/status,
// /readyz and `pool status` agree; and /metrics, parsed with the Prometheus
// text parser, counts the slots and sessions the run had.
func TestStatusPageAndMetrics(t *testing.T) {
	parallel(t)
	browser := chromium(t)
	ctx := testContext(t)
	g := newGate()
	defer g.open()
	sb := startSandbox(t, ctx, 3, g.script(sandbox.Reviewer(sandbox.Approve)))
	bin := buildPool(t)
	addr := freeAddr(t)
	base := "http://" + addr
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir(), "POOL_IDLE_EXIT=0"),
		"--workers", "2", "--ops-listen", addr, "--ops-url", base)

	var st statuspage.Status
	eventually(t, ctx, "two slots with running sessions", func() bool {
		var ok bool
		st, ok = tryStatus(ctx, base)
		return ok && len(st.Slots) == 2 && st.Slots[0].Session != "" && st.Slots[1].Session != "" && len(st.PRs) == 3
	}, pool)
	eventually(t, ctx, "ready", func() bool { return httpCode(t, ctx, base+"/readyz") == http.StatusOK }, pool)

	dom := browser.dumpDOM(t, ctx, base+"/")
	shot := filepath.Join(t.ArtifactDir(), "status-page.png")
	browser.screenshot(t, ctx, base+"/", shot)
	st = getStatus(t, ctx, base)
	for _, s := range st.Slots {
		if !strings.Contains(dom, s.Session) || !strings.Contains(dom, fmt.Sprintf("<td>#%d</td>", s.PR)) {
			t.Errorf("the page lacks slot PR #%d with session %s", s.PR, s.Session)
		}
	}
	for _, pr := range st.PRs {
		row := rowOf(dom, pr.Number)
		if !strings.Contains(row, ">"+pr.State+"<") || !strings.Contains(row, ">"+pr.Next+"<") {
			t.Errorf("the page's row for PR #%d lacks state %q and %q:\n%s", pr.Number, pr.State, pr.Next, row)
		}
	}
	if want := "2/2 busy"; !strings.Contains(dom, want) {
		t.Errorf("the page lacks %q", want)
	}
	if strings.Contains(dom, sb.PoolToken) {
		t.Error("the page shows the token")
	}
	t.Logf("status page screenshot: %s", shot)
	if *updateScreenshot {
		copyFile(t, shot, filepath.Join("..", "..", "docs", "status-page.png"))
	}
	busy := scrape(t, ctx, base)
	if got := gaugeValue(busy, "pool_slots_busy", nil); got != 2 {
		t.Errorf("pool_slots_busy = %v while two sessions run, want 2", got)
	}

	table := runStatusCommand(t, ctx, bin, base)
	for _, pr := range st.PRs {
		if !strings.Contains(table, fmt.Sprintf("#%d  ", pr.Number)) {
			t.Errorf("pool status lacks PR #%d:\n%s", pr.Number, table)
		}
	}

	g.open()
	for _, n := range sb.PRs {
		eventually(t, ctx, fmt.Sprintf("PR #%d merged", n), func() bool { return isMerged(t, ctx, sb, n) }, pool)
	}
	var fams map[string]*dto.MetricFamily
	eventually(t, ctx, "every session collected", func() bool {
		fams = scrape(t, ctx, base)
		return counterSum(fams, "pool_sessions_finished_total") == 3 && gaugeValue(fams, "pool_slots_busy", nil) == 0
	}, pool)
	prompts := len(sb.Model.Prompts())
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"pool_slots_total", nil, 2},
		{"pool_sessions_started_total", map[string]string{"kind": "review"}, float64(prompts)},
		{"pool_sessions_finished_total", map[string]string{"outcome": "idle"}, 3},
		{"pool_claim_races_total", map[string]string{"result": "won"}, 3},
		{"pool_agent_requests_total", map[string]string{"endpoint": "session.create", "code": "200"}, 3},
	}
	for _, c := range checks {
		if got := gaugeValue(fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if prompts != 3 {
		t.Errorf("the model saw %d reviewer prompts, want 3", prompts)
	}
	if n := histogramCount(fams, "pool_cycle_duration_seconds"); n == 0 {
		t.Error("no cycle duration observed")
	}
	if gaugeValue(fams, "pool_forge_requests_total", map[string]string{"endpoint": "pull.get", "code": "200"}) == 0 {
		t.Error("no forge request counted for endpoint pull.get")
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "endpoint" && strings.ContainsAny(l.GetValue(), "/0123456789") {
					t.Errorf("%s has a raw path as endpoint class: %q", f.GetName(), l.GetValue())
				}
			}
		}
	}
	_ = pool.cmd.Process.Signal(sigterm)
	pool.wait(t, ctx)
}

// rowOf returns the status page's table row for PR n.
func rowOf(dom string, n int) string {
	_, rest, ok := strings.Cut(dom, fmt.Sprintf(`id="pr-%d"`, n))
	if !ok {
		return ""
	}
	row, _, _ := strings.Cut(rest, "</tr>")
	return row
}

func httpCode(t *testing.T, ctx context.Context, url string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func runStatusCommand(t *testing.T, ctx context.Context, bin, base string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, "status", "--ops-url", base)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("pool status: %v\n%s", err, errOut.String())
	}
	return out.String()
}

func scrape(t *testing.T, ctx context.Context, base string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// gaugeValue is the value of the sample of a gauge or counter whose labels
// include labels; 0 when there is none.
func gaugeValue(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	for _, m := range fams[name].GetMetric() {
		if hasLabels(m, labels) {
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

func counterSum(fams map[string]*dto.MetricFamily, name string) float64 {
	sum := 0.0
	for _, m := range fams[name].GetMetric() {
		sum += m.GetCounter().GetValue()
	}
	return sum
}

func histogramCount(fams map[string]*dto.MetricFamily, name string) uint64 {
	for _, m := range fams[name].GetMetric() {
		return m.GetHistogram().GetSampleCount()
	}
	return 0
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// browser is headless Chromium from the distribution's packages.
type browser struct{ path string }

func chromium(t *testing.T) browser {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: needs the real forge, agent server and Chromium (run without -short)")
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return browser{path: p}
		}
	}
	t.Fatal("chromium not found: apt-get install chromium (.ci/run installs it)")
	return browser{}
}

// run starts Chromium headless with a fresh profile and no network use of
// its own.
func (b browser) run(t *testing.T, ctx context.Context, args ...string) []byte {
	t.Helper()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--user-data-dir=" + t.TempDir()}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.path, append(base, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, tailOf(errOut.String(), 2000))
	}
	return out.Bytes()
}

func (b browser) dumpDOM(t *testing.T, ctx context.Context, url string) string {
	return string(b.run(t, ctx, "--dump-dom", url))
}

func (b browser) screenshot(t *testing.T, ctx context.Context, url, path string) {
	t.Helper()
	b.run(t, ctx, "--hide-scrollbars", "--window-size=1400,900", "--screenshot="+path, url)
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	head := make([]byte, 8)
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("screenshot %s is not a PNG", path)
	}
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// statusOf is one status in a commit's status history.
type statusOf struct {
	ID          int64  `json:"id"`
	Context     string `json:"context"`
	State       string `json:"status"`
	Description string `json:"description"`
	TargetURL   string `json:"target_url"`
}

// poolStatuses lists the pool's own statuses on sha, oldest first.
func poolStatuses(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, sha string) []statusOf {
	t.Helper()
	var all []statusOf
	path := fmt.Sprintf("/repos/%s/%s/commits/%s/statuses?sort=oldest&limit=50", sb.Owner, sb.Repo, sha)
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", path, nil, &all); err != nil {
		t.Fatal(err)
	}
	var out []statusOf
	for _, s := range all {
		if s.Context == "pool" {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func descriptions(ss []statusOf) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "  %s: %s\n", s.State, s.Description)
	}
	return b.String()
}

// TestCommitStatusStates: the pool's `pool` status on each PR's head says
// where the PR stands, in plain words, through queued, reviewing, waiting
// for checks and merged; it is pending while open, success once merged,
// never failure, written only when its text changes, and links to the PR's
// row on the status page. A PR whose only status is the pool's merges.
func TestCommitStatusStates(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	g := newGate(1)
	defer g.open()
	sb := startSandbox(t, ctx, 0, g.script(approveOnly("")))
	a, err := sb.AddPR(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sb.AddPR(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	headA, headB := getPR(t, ctx, sb, a).Head.Sha, getPR(t, ctx, sb, b).Head.Sha
	if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, headB, "ci/test", "pending", "", "running"); err != nil {
		t.Fatal(err)
	}
	bin := buildPool(t)
	pageURL := "http://status.example.invalid"
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir(), "POOL_IDLE_EXIT=0"), "--workers", "1", "--ops-url", pageURL)

	latest := func(sha string) statusOf {
		ss := poolStatuses(t, ctx, sb, sha)
		if len(ss) == 0 {
			return statusOf{}
		}
		return ss[len(ss)-1]
	}
	eventually(t, ctx, "PR A reviewing", func() bool { return strings.HasPrefix(latest(headA).Description, "reviewing since ") }, pool)
	eventually(t, ctx, "PR B queued", func() bool { return latest(headB).Description == "queued for review" }, pool)
	g.open()
	eventually(t, ctx, "PR A merged", func() bool { return isMerged(t, ctx, sb, a) }, pool)
	eventually(t, ctx, "PR A's status says merged", func() bool {
		s := latest(headA)
		return s.State == "success" && s.Description == "merged"
	}, pool)
	eventually(t, ctx, "PR B waiting for its check", func() bool {
		return latest(headB).Description == "approved; waiting for ci/test"
	}, pool)
	if getPR(t, ctx, sb, b).Merged {
		t.Fatal("PR B merged while ci/test was pending")
	}
	if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, headB, "ci/test", "success", "", "passed"); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "PR B merged", func() bool { return isMerged(t, ctx, sb, b) }, pool)
	eventually(t, ctx, "PR B's status says merged", func() bool { return latest(headB).State == "success" }, pool)
	_ = pool.cmd.Process.Signal(sigterm)
	pool.wait(t, ctx)

	histA, histB := poolStatuses(t, ctx, sb, headA), poolStatuses(t, ctx, sb, headB)
	t.Logf("PR A's pool statuses:\n%sPR B's pool statuses:\n%s", descriptions(histA), descriptions(histB))
	wantInOrder(t, "PR B", histB, "queued for review", "reviewing since", "approved; waiting for ci/test", "merged")
	wantInOrder(t, "PR A", histA, "reviewing since", "merged")
	for name, hist := range map[string][]statusOf{"A": histA, "B": histB} {
		n := map[string]int{"A": a, "B": b}[name]
		for i, s := range hist {
			last := i == len(hist)-1
			switch {
			case s.State == "failure" || s.State == "error":
				t.Errorf("PR %s: status %q is %s: the pool's status must never fail a PR", name, s.Description, s.State)
			case last && s.State != "success", !last && s.State != "pending":
				t.Errorf("PR %s: status %d %q is %s", name, i, s.Description, s.State)
			case i > 0 && s.Description == hist[i-1].Description && s.State == hist[i-1].State:
				t.Errorf("PR %s: %q written twice in a row", name, s.Description)
			case s.TargetURL != fmt.Sprintf("%s/#pr-%d", pageURL, n):
				t.Errorf("PR %s: target URL %q", name, s.TargetURL)
			}
		}
	}
}

// wantInOrder checks that statuses starting with each prefix appear in order.
func wantInOrder(t *testing.T, name string, hist []statusOf, prefixes ...string) {
	t.Helper()
	i := 0
	for _, s := range hist {
		if i < len(prefixes) && strings.HasPrefix(s.Description, prefixes[i]) {
			i++
		}
	}
	if i < len(prefixes) {
		t.Errorf("%s: statuses lack %q (in order %q):\n%s", name, prefixes[i], prefixes, descriptions(hist))
	}
}
