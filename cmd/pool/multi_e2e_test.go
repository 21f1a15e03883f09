package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"pool/internal/sandbox"
)

// gated holds every reviewer session's first model turn until the file
// gate exists (at most gateWait), then reviews as inner says: sessions that
// are surely running when a test kills their pool. The wait is in the model,
// not in a shell loop, which the shipped reviewer may not run.
func gated(gate string, inner sandbox.Script) sandbox.Script {
	return func(prompt string, outputs []string) sandbox.Turn {
		if len(outputs) == 0 {
			for deadline := time.Now().Add(gateWait); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				if _, err := os.Stat(gate); err == nil {
					break
				}
			}
		}
		return inner(prompt, outputs)
	}
}

// gateWait bounds a gated turn, so that a failed test's model still stops.
const gateWait = 5 * time.Minute

// TestTwoRepositoriesOneAgentServerKillNine: two pools, each serving its own
// repository, share one agent server; each repository has a PR numbered 1.
// Both pools are killed (SIGKILL) while their sessions run, and relaunched:
// each adopts its own session, neither adopts or deletes the other's, and
// both PRs merge after one reviewer session each.
func TestTwoRepositoriesOneAgentServerKillNine(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	gate := filepath.Join(t.TempDir(), "gate")
	sb := startSandbox(t, ctx, 1, gated(gate, sandbox.Reviewer(sandbox.Approve)))
	const other = "demo2"
	if err := sb.AddRepo(ctx, other); err != nil {
		t.Fatal(err)
	}
	if n, err := sb.AddPRTo(ctx, other, 1); err != nil || n != 1 || sb.PRs[0] != 1 {
		t.Fatalf("seeding: PRs %v and %d (%v), want #1 in each repository", sb.PRs, n, err)
	}
	bin := buildPool(t)
	repos := []string{sb.Owner + "/" + sb.Repo, sb.Owner + "/" + other}
	envs := make([][]string, len(repos))
	first := make([]*poolProc, len(repos))
	for i, repo := range repos {
		envs[i] = poolEnv(t, sb, t.TempDir(), "POOL_REPO="+repo)
		first[i] = startPool(t, ctx, bin, envs[i], "--workers", "1")
	}
	eventually(t, ctx, "a reviewer prompt per repository", func() bool { return len(sb.Model.Prompts()) >= 2 }, first...)
	for _, p := range first {
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.exited
	}

	// Whose session is whose, by the titles the pools gave them.
	sessions := ownSessions(t, ctx, sb)
	want := map[string]string{} // repository → session id
	for _, s := range sessions {
		for _, repo := range repos {
			if s.Title == "[CA-AUTO] worker-review: "+repo+" PR-1" {
				want[repo] = s.ID
			}
		}
	}
	if len(sessions) != 2 || len(want) != 2 {
		t.Fatalf("sessions after the kill: %+v; want one titled for each repository", sessions)
	}

	second := make([]*poolProc, len(repos))
	for i := range repos {
		second[i] = startPool(t, ctx, bin, envs[i], "--workers", "1")
	}
	eventually(t, ctx, "both relaunches adopting", func() bool {
		return strings.Contains(second[0].stderr.String(), "adopted a running session") &&
			strings.Contains(second[1].stderr.String(), "adopted a running session")
	}, second...)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range second {
		p.wait(t, ctx)
	}

	for i, repo := range repos {
		logs := second[i].stderr.String()
		if got := adoptedSessions(logs); len(got) != 1 || got[0] != want[repo] {
			t.Errorf("the relaunched pool of %s adopted %v, want only its own session %s", repo, got, want[repo])
		}
		if strings.Contains(logs, "removing a session that was never prompted") {
			t.Errorf("the relaunched pool of %s deleted a session:\n%s", repo, logs)
		}
		if !strings.Contains(second[i].stdout.String(), "Approved and merged: 1") {
			t.Errorf("report of %s:\n%s", repo, second[i].stdout.String())
		}
		name := strings.TrimPrefix(repo, sb.Owner+"/")
		var pr apiPR
		if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", "/repos/"+sb.Owner+"/"+name+"/pulls/1", nil, &pr); err != nil {
			t.Fatal(err)
		}
		if !pr.Merged {
			t.Errorf("%s#1 is not merged", repo)
		}
	}
	assertOneSessionPerHead(t, sb, 2)
	assertNoSessions(t, ctx, sb)
}

// assertOneSessionPerHead: the reviewer prompts name exactly heads
// distinct PR heads (of any repository), each once.
func assertOneSessionPerHead(t *testing.T, sb *sandbox.Sandbox, heads int) {
	t.Helper()
	perTarget := map[string]int{}
	for _, p := range sb.Model.Prompts() {
		if pr, repo, head, ok := sandbox.PromptTarget(p); ok {
			perTarget[repo+"#"+pr+"@"+head]++
		}
	}
	if len(perTarget) != heads {
		t.Errorf("%d PR heads reviewed, want %d: %v", len(perTarget), heads, perTarget)
	}
	for key, count := range perTarget {
		if count != 1 {
			t.Errorf("%s got %d reviewer sessions, want 1", key, count)
		}
	}
}

// adoptedSessions lists the session ids a pool's log says it adopted.
func adoptedSessions(logs string) []string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, `msg="adopted a running session"`) {
			continue
		}
		_, rest, _ := strings.Cut(line, " session=")
		id, _, _ := strings.Cut(rest, " ")
		out = append(out, id)
	}
	return out
}

// TestThreeRepositoriesOneProcess: one pool process serves three
// repositories (8 PRs, 1 and 1) with two workers: all ten merge with one
// reviewer session per head, and each small repository's PR is among the
// first four sessions.
func TestThreeRepositoriesOneProcess(t *testing.T) {
	parallelLong(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 8, nil)
	smalls := []string{"gadgets", "gizmos"}
	for _, name := range smalls {
		if err := sb.AddRepo(ctx, name); err != nil {
			t.Fatal(err)
		}
		if _, err := sb.AddPRTo(ctx, name, 1); err != nil {
			t.Fatal(err)
		}
	}
	bin := buildPool(t)
	repos := sb.Owner + "/" + sb.Repo + "," + sb.Owner + "/" + smalls[0] + "," + sb.Owner + "/" + smalls[1]
	forge := countRequests(t, sb.Forge.URL)
	agentLog := countRequests(t, sb.Agent.URL)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir(), "POOL_REPO="+repos, "POOL_FORGEJO_URL="+forge.url,
		"POOL_AGENT_URL="+agentLog.url, "POOL_IDLE_EXIT=5"), "--workers", "2")
	pool.wait(t, ctx)

	// One subscription to the agent server's events for the three
	// repositories (a reconnect after a break would add one).
	if n := agentLog.count("GET /global/event"); n < 1 || n > 2 {
		t.Errorf("the pool subscribed to the agent server's events %d times, want once for all repositories", n)
	}

	// The forge requests of each round of cycles, from one search of the
	// owner's changed PRs to the next, after the last merge. The rounds
	// right after it still settle the merge (its commit status, the PR read
	// again); the pools exit after 5 quiet cycles each, so the last two
	// whole rounds before the exit are quiet ones. A round in which a
	// repository lists all its open PRs (in its turn, one a round at most)
	// costs that listing too: it is shown apart (+L).
	rounds := forge.roundsAfterLastMerge()
	t.Logf("figure: forge requests per round of cycles after the last merge (3 repositories; the last two are quiet): %v", rounds)
	if len(rounds) < 3 {
		t.Fatalf("%d rounds seen after the last merge, want at least 3", len(rounds))
	}
	for _, r := range rounds[len(rounds)-3 : len(rounds)-1] { // the last one may be cut by the exit
		if !r.listing && r.requests > 3 {
			t.Errorf("a round of quiet cycles cost %d forge requests, want at most 3: %v", r.requests, rounds)
		}
	}
	for _, n := range sb.PRs {
		assertMerged(t, ctx, sb, n)
	}
	for _, name := range smalls {
		var pr apiPR
		if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", "/repos/"+sb.Owner+"/"+name+"/pulls/1", nil, &pr); err != nil {
			t.Fatal(err)
		}
		if !pr.Merged {
			t.Errorf("%s#1 is not merged", name)
		}
	}
	assertOneSessionPerHead(t, sb, 10)
	// The repository of each reviewer session, in the order the pool
	// started them (the model hears from a session in a warm work tree
	// sooner than from one in a new tree, so its order is not the start's).
	order := startedRepos(pool.stderr.String())
	for _, name := range smalls {
		if at := slices.Index(order, sb.Owner+"/"+name); at < 0 || at >= 4 {
			t.Errorf("%s's PR started as session %d, want among the first 4; order %v", name, at+1, order)
		}
	}
	for _, want := range []string{"TOTAL_PRS_REVIEWED: 10\n", "  - Approved and merged: 10\n", "BY_REPOSITORY:\n",
		"  - " + sb.Owner + "/demo: reviewed 8, merged 8,", "  - " + sb.Owner + "/gadgets: reviewed 1, merged 1,",
		"  - " + sb.Owner + "/gizmos: reviewed 1, merged 1,"} {
		if !strings.Contains(pool.stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, pool.stdout.String())
		}
	}
	assertNoSessions(t, ctx, sb)
}

// requestLog is a reverse proxy in front of the forge or the agent server
// that records the requests it carries.
type requestLog struct {
	url     string
	mu      sync.Mutex // guards reqs and refused
	reqs    []string   // method and request URI
	refused []string   // method and request URI of those answered 4xx or 5xx
}

func countRequests(t *testing.T, target string) *requestLog {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	l := &requestLog{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := r.Method + " " + r.URL.RequestURI()
		l.mu.Lock()
		l.reqs = append(l.reqs, req)
		l.mu.Unlock()
		sw := &statusWriter{ResponseWriter: w}
		proxy.ServeHTTP(sw, r)
		if sw.status >= 400 {
			l.mu.Lock()
			l.refused = append(l.refused, req)
			l.mu.Unlock()
		}
	}))
	t.Cleanup(srv.Close)
	l.url = srv.URL
	return l
}

// statusWriter remembers the status of the answer it writes.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// refusedCount is how many requests that began with prefix the forge
// answered with a 4xx or 5xx.
func (l *requestLog) refusedCount(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return countPrefixed(l.refused, prefix)
}

// count is how many requests began with prefix.
func (l *requestLog) count(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return countPrefixed(l.reqs, prefix)
}

func countPrefixed(list []string, prefix string) int {
	n := 0
	for _, r := range list {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

// round is the requests from one search of changed PRs to the next;
// listing: a repository listed all its open PRs in it.
type round struct {
	requests int
	listing  bool
}

func (r round) String() string {
	if r.listing {
		return fmt.Sprintf("%d+L", r.requests)
	}
	return fmt.Sprint(r.requests)
}

// roundsAfterLastMerge counts the requests from each search of changed PRs
// (its first page) to the next, after the last merge call.
func (l *requestLog) roundsAfterLastMerge() []round {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := -1
	for i, r := range l.reqs {
		if strings.HasPrefix(r, "POST ") && strings.HasSuffix(r, "/merge") {
			last = i
		}
	}
	var rounds []round
	for _, r := range l.reqs[last+1:] {
		if strings.HasPrefix(r, "GET /api/v1/repos/issues/search?") && strings.HasSuffix(r, "&page=1") {
			rounds = append(rounds, round{})
		}
		if len(rounds) == 0 {
			continue
		}
		cur := &rounds[len(rounds)-1]
		cur.requests++
		if strings.HasPrefix(r, "GET ") && strings.Contains(r, "/pulls?state=open") {
			cur.listing = true
		}
	}
	return rounds
}

// startedRepos lists the repository of each reviewer session in the order
// the pool's log says they started.
func startedRepos(logs string) []string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, `msg="session started"`) || !strings.Contains(line, " kind=review") {
			continue
		}
		_, rest, ok := strings.Cut(line, " repo=")
		if !ok {
			continue
		}
		repo, _, _ := strings.Cut(rest, " ")
		out = append(out, repo)
	}
	return out
}
