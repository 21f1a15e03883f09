package pool

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"pool/configs"
	"pool/forge"
	"pool/forgejo"
	"pool/texts"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runWithTrees runs a pool whose sessions get work trees from a fake, to its
// end, and checks that every goroutine it started has ended.
func runWithTrees(t *testing.T, cfg configs.Config, f *fakeForge, a *fakeAgent, trees *fakeTrees, during func(context.Context, *Pool)) Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	trees.inUse = a.worksIn
	p, err := New(ctx, cfg, Deps{Forge: f, Agent: a, Trees: trees})
	if err != nil {
		t.Fatal(err)
	}
	if during != nil {
		go during(ctx, p)
	}
	rep, err := p.Run(ctx)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("pool did not finish in time")
	}
	if len(trees.shared) > 0 {
		t.Errorf("trees given back while a session still worked in them: %v", trees.shared)
	}
	cancel()
	goleak.VerifyNone(t)
	return rep
}

// TestEachSessionWorksInItsOwnTree: every session is created in a work tree
// taken at its PR's head, which no other live session has, and its prompt
// names the tree and the base to diff against. When a session ends, its
// tree is given back and kept warm for the next: three PRs on two workers
// use two trees at most, and no agent server instance is disposed of until
// the trees are retired at exit.
func TestEachSessionWorksInItsOwnTree(t *testing.T) {
	f := newFakeForge(1, 2, 3)
	a := newFakeAgent(approver(f, 5*time.Millisecond))
	trees := newFakeTrees()
	runWithTrees(t, testConfig(2), f, a, trees, nil)

	for n, pr := range f.prs {
		if !pr.Merged {
			t.Errorf("PR #%d not merged", n)
		}
	}
	if left := trees.left(); len(left) != 0 {
		t.Errorf("work trees not given back: %v", left)
	}
	if len(a.prompts) != 3 {
		t.Fatalf("prompts %d, want 3", len(a.prompts))
	}
	var takes []string
	for _, e := range trees.effects {
		if take, ok := strings.CutPrefix(e, "take "); ok {
			takes = append(takes, take)
		}
	}
	if n := len(trees.made); n > 2 || len(a.disposed) != 0 {
		t.Errorf("%d trees made, instances disposed %v; want at most 2 trees, none disposed: %v", n, a.disposed, trees.effects)
	}
	for _, p := range a.prompts {
		i := slices.IndexFunc(takes, func(take string) bool {
			dir, head, _ := strings.Cut(take, " ")
			return strings.Contains(p, "Work tree: "+dir+" ") && strings.Contains(p, "Head SHA: "+head)
		})
		if i < 0 || !strings.Contains(p, "git diff origin/main...HEAD") {
			t.Errorf("prompt names no work tree taken at its head (%v) or no base to diff against:\n%s", takes, p)
		}
	}
}

// TestFreeTreesAreRetiredWithTheirInstances: once the pool has run, the
// trees it kept warm are removed and the agent server's instances for them
// freed.
func TestFreeTreesAreRetiredWithTheirInstances(t *testing.T) {
	f := newFakeForge(1, 2, 3)
	a := newFakeAgent(approver(f, 5*time.Millisecond))
	trees := newFakeTrees()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := New(ctx, testConfig(2), Deps{Forge: f, Agent: a, Trees: trees})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	made := slices.Sorted(maps.Keys(trees.made))
	p.RetireTrees()
	slices.Sort(a.disposed)
	if len(made) == 0 || !slices.Equal(a.disposed, made) || len(trees.live) != 0 {
		t.Errorf("trees %v; disposed %v, left %v: want every tree removed and its instance disposed", made, a.disposed, trees.live)
	}
}

func TestUnknownAgentStopsTheStart(t *testing.T) {
	f := newFakeForge(1)
	a := newFakeAgent(approver(f, time.Millisecond))
	a.agents = []string{"build", "plan"}
	_, err := New(context.Background(), testConfig(1), Deps{Forge: f, Agent: a})
	var ce *configs.Error
	if !errors.As(err, &ce) || ce.Key != "agent.name" || !strings.Contains(ce.Reason, `"ca-pr-self-reviewer"`) ||
		!strings.Contains(ce.Reason, "build, plan") {
		t.Fatalf("New = %v; want a config error on agent.name naming the agent and listing build, plan", err)
	}
}

// TestAgentServerWithoutPassword: an agent server that answers without a
// password stops the start off loopback (a config error naming
// agent.password), unless agent.allow_no_password; on loopback the pool
// starts and warns.
func TestAgentServerWithoutPassword(t *testing.T) {
	tests := []struct {
		name     string
		url      string
		allow    bool
		wantErr  bool
		wantWarn bool
	}{
		{"off loopback", "http://agent.test", false, true, false},
		{"off loopback, allowed", "http://agent.test", true, false, true},
		{"loopback", "http://127.0.0.1:4096", false, false, true},
		{"localhost", "http://localhost:4096", false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeForge(1)
			a := newFakeAgent(approver(f, time.Millisecond))
			a.open = true
			cfg := testConfig(1)
			cfg.AgentURL, cfg.AgentAllowNoPassword = tt.url, tt.allow
			var logs strings.Builder
			_, err := New(context.Background(), cfg, Deps{Forge: f, Agent: a, Log: slog.New(slog.NewTextHandler(&logs, nil))})
			var ce *configs.Error
			if got := errors.As(err, &ce) && ce.Key == "agent.password"; got != tt.wantErr {
				t.Errorf("New = %v; want a config error on agent.password: %v", err, tt.wantErr)
			}
			if got := strings.Contains(logs.String(), "answers without a password"); got != tt.wantWarn {
				t.Errorf("warned = %v, want %v:\n%s", got, tt.wantWarn, logs.String())
			}
		})
	}
	a := newFakeAgent(approver(newFakeForge(1), time.Millisecond)) // asks for a password
	var logs strings.Builder
	if _, err := New(context.Background(), testConfig(1), Deps{Forge: newFakeForge(1), Agent: a, Log: slog.New(slog.NewTextHandler(&logs, nil))}); err != nil ||
		strings.Contains(logs.String(), "password") {
		t.Errorf("a server that asks for a password: New = %v, log:\n%s", err, logs.String())
	}
}

// TestUnpromptedSessionIsDeletedAtExitAtTheLatest: the agent server makes a
// session, then fails the prompt and the delete (it is restarting). The
// PR gets a new session once the server is back; the first one is deleted
// at exit even though the watcher's periodic retry never comes round.
func TestUnpromptedSessionIsDeletedAtExitAtTheLatest(t *testing.T) {
	f := newFakeForge(1)
	a := newFakeAgent(approver(f, 5*time.Millisecond))
	a.setDown("prompt", true)
	a.setDown("delete", true)
	cfg := testConfig(1)
	cfg.StatusInterval = time.Hour // sessions end by events; no periodic retry
	trees := newFakeTrees()
	runWithTrees(t, cfg, f, a, trees, func(ctx context.Context, p *Pool) {
		waitFor(ctx, func() bool { a.mu.Lock(); defer a.mu.Unlock(); return a.next >= 1 })
		time.Sleep(10 * time.Millisecond) // the failed start is over
		a.setDown("prompt", false)
		a.setDown("delete", false)
	})
	if !f.prs[1].Merged {
		t.Fatal("PR not merged")
	}
	if sessions, prompts, _ := a.count(); sessions != 0 || prompts != 1 {
		t.Errorf("%d sessions left on the agent server, %d prompts; want none left, one prompt", sessions, prompts)
	}
	if left := trees.left(); len(left) != 0 {
		t.Errorf("work trees left: %v", left)
	}
}

// TestTreeOfAnUndeletedSessionIsNeverReused: the agent server does not let
// the pool delete finished sessions, which may then still be alive. Their
// trees are removed and their instances disposed of, never given to the
// next session: each of the three PRs gets a tree of its own.
func TestTreeOfAnUndeletedSessionIsNeverReused(t *testing.T) {
	f := newFakeForge(1, 2, 3)
	a := newFakeAgent(approver(f, 5*time.Millisecond))
	a.setDown("delete", true)
	trees := newFakeTrees()
	runWithTrees(t, testConfig(1), f, a, trees, nil)
	taken := map[string]bool{}
	for _, e := range trees.effects {
		if take, ok := strings.CutPrefix(e, "take "); ok {
			dir, _, _ := strings.Cut(take, " ")
			if taken[dir] {
				t.Errorf("tree %s taken again after a session left undeleted in it: %v", dir, trees.effects)
			}
			taken[dir] = true
			if !slices.Contains(a.disposed, dir) {
				t.Errorf("instance for %s not disposed of: %v", dir, a.disposed)
			}
		}
	}
	if len(taken) != 3 {
		t.Errorf("%d trees taken, want 3: %v", len(taken), trees.effects)
	}
}

// TestSessionMadeWithoutAnAnswerIsFound: the agent server makes a session
// but the answer is lost, so the pool never learns its id. It finds it by
// its work tree, which no other session shares, and deletes it.
func TestSessionMadeWithoutAnAnswerIsFound(t *testing.T) {
	f := newFakeForge(1)
	a := newFakeAgent(approver(f, 5*time.Millisecond))
	a.setDown("create", true)
	a.setDown("sessions", true)
	runWithTrees(t, testConfig(1), f, a, newFakeTrees(), func(ctx context.Context, p *Pool) {
		waitFor(ctx, func() bool { a.mu.Lock(); defer a.mu.Unlock(); return a.next >= 1 })
		time.Sleep(10 * time.Millisecond)
		a.setDown("create", false)
		a.setDown("sessions", false)
	})
	if !f.prs[1].Merged {
		t.Fatal("PR not merged")
	}
	if sessions, _, _ := a.count(); sessions != 0 {
		t.Errorf("%d sessions left on the agent server, want none", sessions)
	}
}

// TestRelaunchKeepsTheTreesOfAdoptedSessions: a killed pool left two
// sessions and their trees. The one that was prompted is adopted and keeps
// its tree until it is collected; the other is deleted and its tree pruned.
func TestRelaunchKeepsTheTreesOfAdoptedSessions(t *testing.T) {
	f := newFakeForge(1, 2)
	a := newFakeAgent(approver(f, time.Millisecond))
	f.review(1, "reviewer", forge.ReviewApproved)
	a.sessions["ses_old1"] = &fakeSession{id: "ses_old1", title: texts.SessionTitle("o/r", 1), dir: "/trees/pr-1-old", prompted: true, done: true, reply: approvedReply}
	a.sessions["ses_old2"] = &fakeSession{id: "ses_old2", title: texts.SessionTitle("o/r", 2), dir: "/trees/pr-2-old"}
	trees := newFakeTrees()
	trees.live["/trees/pr-1-old"], trees.live["/trees/pr-2-old"], trees.live["/trees/pr-3-gone"] = true, true, true
	runWithTrees(t, testConfig(2), f, a, trees, nil)

	if !f.prs[1].Merged || !f.prs[2].Merged {
		t.Fatalf("merged: #1 %v, #2 %v", f.prs[1].Merged, f.prs[2].Merged)
	}
	if i := slices.Index(trees.effects, "prune keeping [/trees/pr-1-old]"); i < 0 ||
		slices.Index(trees.effects, "remove /trees/pr-1-old") < i {
		t.Errorf("tree effects %v: want the adopted session's tree kept by the prune, removed after", trees.effects)
	}
	if left := trees.left(); len(left) != 0 {
		t.Errorf("work trees left: %v", left)
	}
}

// TestEveryWayOutEndsEveryGoroutine: idle exit, --once, a fatal error and a
// signal, each with a session running or just finished, end every goroutine
// the pool started, and a running session is left for the next start.
func TestEveryWayOutEndsEveryGoroutine(t *testing.T) {
	tests := []struct {
		name    string
		session time.Duration
		setup   func(*configs.Config)
		during  func(ctx context.Context, cancel context.CancelFunc, f *fakeForge, a *fakeAgent)
		wantErr error
		left    int
	}{
		{name: "idle exit", session: time.Millisecond},
		{name: "once", session: time.Millisecond, setup: func(c *configs.Config) { c.IdleExit, c.Once = 0, true }},
		{name: "fatal error", session: time.Hour, wantErr: forgejo.ErrUnauthorized, left: 1,
			during: func(ctx context.Context, _ context.CancelFunc, f *fakeForge, a *fakeAgent) {
				waitFor(ctx, func() bool { _, prompts, _ := a.count(); return prompts == 1 })
				f.mu.Lock()
				f.failOps["changed"] = &forgejo.Error{Op: "list", Status: 401, Err: forgejo.ErrUnauthorized}
				f.failOps["list"] = f.failOps["changed"]
				f.mu.Unlock()
			}},
		{name: "signal", session: time.Hour, left: 1,
			during: func(ctx context.Context, cancel context.CancelFunc, _ *fakeForge, a *fakeAgent) {
				waitFor(ctx, func() bool { _, prompts, _ := a.count(); return prompts == 1 })
				cancel()
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeForge(1)
			a := newFakeAgent(func(pr int) (time.Duration, func(), string) {
				return tt.session, func() { f.review(pr, "reviewer", forge.ReviewApproved) }, approvedReply
			})
			cfg := testConfig(1)
			if tt.setup != nil {
				tt.setup(&cfg)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			p, err := New(ctx, cfg, Deps{Forge: f, Agent: a, Trees: newFakeTrees()})
			if err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(ctx)
			defer stop()
			if tt.during != nil {
				go tt.during(ctx, stop, f, a)
			}
			if _, err := p.Run(runCtx); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Run = %v, want %v", err, tt.wantErr)
			}
			if ctx.Err() != nil {
				t.Fatal("pool did not finish in time")
			}
			if got := p.LeftRunning(); got != tt.left {
				t.Errorf("sessions left running %d, want %d", got, tt.left)
			}
			stop()
			cancel()
			goleak.VerifyNone(t)
		})
	}
}

// TestInFlightForgeCallsGetTheShutdownTimeout: a signal while the claim is
// being posted lets the post finish within ShutdownTimeout, and cuts it off
// past it. No session starts either way.
func TestInFlightForgeCallsGetTheShutdownTimeout(t *testing.T) {
	for _, tt := range []struct {
		name    string
		timeout time.Duration
		posted  bool
	}{
		{"finishes within the timeout", 2 * time.Second, true},
		{"cut off past the timeout", 20 * time.Millisecond, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeForge(1)
			f.commentDelay, f.started = 300*time.Millisecond, make(chan string, 1)
			a := newFakeAgent(approver(f, time.Millisecond))
			cfg := testConfig(1)
			cfg.ShutdownTimeout = tt.timeout
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p, err := New(ctx, cfg, Deps{Forge: f, Agent: a})
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				<-f.started // the claim is on its way
				cancel()
			}()
			start := time.Now()
			if _, err := p.Run(ctx); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			if got := f.claimsOn(1) == 1; got != tt.posted {
				t.Errorf("claim posted %v, want %v (Run took %s)", got, tt.posted, took)
			}
			if _, prompts, _ := a.count(); prompts != 0 {
				t.Errorf("%d sessions started while shutting down", prompts)
			}
			goleak.VerifyNone(t)
		})
	}
}

// TestMergeInFlightGetsTheShutdownTimeout: a signal while the merge queue's
// merge call is in flight lets the call finish, and the merge be counted,
// within ShutdownTimeout; past it the call is cut off.
func TestMergeInFlightGetsTheShutdownTimeout(t *testing.T) {
	for _, tt := range []struct {
		name    string
		timeout time.Duration
		merged  int
	}{
		{"finishes within the timeout", 2 * time.Second, 1},
		{"cut off past the timeout", 20 * time.Millisecond, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeForge(1)
			f.mergeDelay, f.mergeStart = 300*time.Millisecond, make(chan int, 1)
			a := newFakeAgent(approver(f, time.Millisecond))
			cfg := testConfig(1)
			cfg.ShutdownTimeout = tt.timeout
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p, err := New(ctx, cfg, Deps{Forge: f, Agent: a})
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				<-f.mergeStart
				cancel()
			}()
			rep, err := p.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Merged != tt.merged || f.prs[1].Merged != (tt.merged == 1) {
				t.Errorf("report merged %d, forge merged %v; want %d", rep.Merged, f.prs[1].Merged, tt.merged)
			}
			goleak.VerifyNone(t)
		})
	}
}

// TestReviewerThatCouldMergeIsWarned: a configured reviewer account with
// write access is warned about at start; one with read access is not, nor
// one whose permission the forge will not tell.
func TestReviewerThatCouldMergeIsWarned(t *testing.T) {
	f := newFakeForge(1)
	f.permissions = map[string]string{"mighty": "write", "humble": "read"}
	cfg := testConfig(1)
	cfg.Reviewers = []string{"mighty", "humble", "secret"}
	var logs strings.Builder
	if _, err := New(context.Background(), cfg, Deps{Forge: f, Agent: newFakeAgent(approver(f, 0)), Log: slog.New(slog.NewTextHandler(&logs, nil))}); err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "the reviewer account could merge") {
			warned = append(warned, line)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "account=mighty") || !strings.Contains(warned[0], "permission=write") {
		t.Errorf("warnings = %q, want one about mighty's write access", warned)
	}
}
