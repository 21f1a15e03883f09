package sessions

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"pool/agent"
	"pool/lifecycle"
)

// fakeAgent is an agent server in memory: sessions by id, each with its
// messages; busy ones are in the status map; deleting fails while
// failDeletes is set.
type fakeAgent struct {
	mu          sync.Mutex
	next        int
	msgs        map[string][]agent.Message
	busy        map[string]bool
	asks        []agent.Permission
	failDeletes bool
	failPrompt  bool
	// lostAnswer: the prompt is taken and stored storeAfter later, but its
	// answer is lost; failMessages: every read of messages fails.
	lostAnswer   bool
	storeAfter   time.Duration
	failMessages bool
	// refusePrompt: the prompt call finds no server (a dial error);
	// reads counts the reads of messages.
	refusePrompt bool
	reads        int
	failDirs     map[string]bool // Statuses fails for these directories
	deleted      []string
	aborted      []string
	disposed     []string
}

func newFakeAgent() *fakeAgent {
	return &fakeAgent{msgs: map[string][]agent.Message{}, busy: map[string]bool{}}
}

func (a *fakeAgent) CreateSession(_ context.Context, _, dir string) (agent.Session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next++
	id := "ses_" + string(rune('a'+a.next))
	a.msgs[id] = nil
	return agent.Session{ID: id, Directory: dir}, nil
}

func (a *fakeAgent) PromptAsync(_ context.Context, id, _, text string) error {
	if a.failPrompt {
		return errors.New("502 bad gateway")
	}
	if a.refusePrompt {
		return &agent.Error{Op: "prompt", Retryable: true, Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	}
	if a.lostAnswer {
		time.AfterFunc(a.storeAfter, func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.msgs[id] = append(a.msgs[id], agent.Message{Role: "user", Text: text})
		})
		return errors.New("502 bad gateway")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.msgs[id] = append(a.msgs[id], agent.Message{Role: "user", Text: text})
	return nil
}

func (a *fakeAgent) Statuses(_ context.Context, dir string) (map[string]agent.Status, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failDirs[dir] {
		return nil, errors.New("connection refused")
	}
	out := map[string]agent.Status{}
	for id := range a.busy {
		out[id] = agent.Status{Type: "busy"}
	}
	return out, nil
}

func (a *fakeAgent) Messages(_ context.Context, id string) ([]agent.Message, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reads++
	if a.failMessages {
		return nil, errors.New("500 internal server error")
	}
	m, ok := a.msgs[id]
	if !ok {
		return nil, agent.ErrNotFound
	}
	return m, nil
}

func (a *fakeAgent) Sessions(context.Context) ([]agent.Session, error) { return nil, nil }

func (a *fakeAgent) Delete(_ context.Context, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failDeletes {
		return errors.New("503")
	}
	delete(a.msgs, id)
	a.deleted = append(a.deleted, id)
	return nil
}

func (a *fakeAgent) Abort(_ context.Context, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.aborted = append(a.aborted, id)
	return nil
}

func (a *fakeAgent) Permissions(context.Context, string) ([]agent.Permission, error) {
	return a.asks, nil
}

func (a *fakeAgent) Dispose(_ context.Context, dir string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.disposed = append(a.disposed, dir)
	return nil
}

// fakeTrees owns every directory; it records what was given back and
// what removed.
type fakeTrees struct{ given, removed []string }

func (t *fakeTrees) GiveTree(_ context.Context, dir string, _ int) (bool, error) {
	t.given = append(t.given, dir)
	return true, nil
}
func (t *fakeTrees) RetireTrees(context.Context, time.Time) []string { return nil }
func (t *fakeTrees) Owns(string) bool                                { return true }
func (t *fakeTrees) RemoveTree(_ context.Context, dir string) error {
	t.removed = append(t.removed, dir)
	return nil
}
func (t *fakeTrees) PruneTrees(context.Context, []string) error { return nil }

func newSet(a *fakeAgent, trees Trees, now *time.Time) *Set {
	return New(a, trees, Config{StatusInterval: time.Hour, SessionTimeout: time.Minute, Keep: func() int { return 2 },
		Now: func() time.Time { return *now }})
}

// TestJudgeSaysHowASessionEnded: each way a session ends has its outcome,
// and a session not yet seen busy and with no reply still runs.
func TestJudgeSaysHowASessionEnded(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	reply := agent.Message{Role: "assistant", Completed: now, Finish: agent.FinishStop, Text: "done"}
	failed := agent.Message{Role: "assistant", Completed: now, Error: "APIError: bad request"}
	for _, tt := range []struct {
		name     string
		busy     bool
		seenBusy bool
		asks     bool
		msgs     []agent.Message
		gone     bool
		noPrompt bool // the server holds no prompt for it
		after    time.Duration
		// reconnect: the event stream came back this long after the start
		reconnect time.Duration
		want      string
	}{
		{name: "just prompted", msgs: nil, want: ""},
		{name: "busy", busy: true, want: ""},
		{name: "busy past the timeout", busy: true, after: 2 * time.Minute, want: "timeout"},
		{name: "idle after busy", seenBusy: true, want: "idle"},
		{name: "finished reply never seen busy", msgs: []agent.Message{reply}, want: "idle"},
		{name: "failed reply", msgs: []agent.Message{failed}, want: "error"},
		{name: "deleted behind its back", gone: true, want: "gone"},
		{name: "never busy past the timeout", after: 2 * time.Minute, want: "timeout"},
		{name: "asking a permission", busy: true, asks: true, want: "stuck"},
		{name: "prompt lost in an agent restart", reconnect: time.Second, after: 40 * time.Second, want: "gone"},
		{name: "not taken up yet after a reconnect", reconnect: time.Second, after: 5 * time.Second, want: ""},
		{name: "prompted after the reconnect", reconnect: -time.Second, after: 40 * time.Second, want: ""},
		{name: "busy after a reconnect", busy: true, reconnect: time.Second, after: 40 * time.Second, want: ""},
		{name: "reply begun before a restart", msgs: []agent.Message{{Role: "assistant"}}, reconnect: time.Second,
			after: 40 * time.Second, want: "gone"},
		{name: "reply begun, no reconnect", msgs: []agent.Message{{Role: "assistant"}}, after: 40 * time.Second, want: ""},
		{name: "no prompt yet", noPrompt: true, after: 5 * time.Second, want: ""},
		{name: "no prompt after 30 s", noPrompt: true, after: 40 * time.Second, want: "gone"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := newFakeAgent()
			clock := now
			s := newSet(a, nil, &clock)
			ss, err := s.Start(ctx, 7, lifecycle.Review, "title", "", "reviewer", "review it", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.noPrompt {
				a.msgs[ss.ID] = nil
			}
			a.msgs[ss.ID] = append(a.msgs[ss.ID], tt.msgs...)
			a.busy[ss.ID] = tt.busy
			if !tt.busy {
				delete(a.busy, ss.ID)
			}
			if tt.gone {
				delete(a.msgs, ss.ID)
			}
			if tt.asks {
				a.asks = []agent.Permission{{SessionID: ss.ID, Type: "bash", Patterns: []string{"rm -rf /"}}}
			}
			ss.seenBusy = tt.seenBusy
			if tt.reconnect != 0 {
				clock = now.Add(tt.reconnect)
				s.noteEvent(agent.Event{Type: agent.EventReconnected})
			}
			clock = now.Add(tt.after)
			if err := s.check(ctx); err != nil {
				t.Fatal(err)
			}
			got := ""
			select {
			case <-ss.Done():
				got = ss.Outcome()
			default:
			}
			if got != tt.want {
				t.Errorf("outcome %q, want %q", got, tt.want)
			}
			lost := tt.want == "gone" && !tt.gone
			if stopped := slices.Contains(a.aborted, ss.ID); stopped != (tt.want == "timeout" && tt.busy || tt.want == "stuck" || lost) {
				t.Errorf("aborted %v, want it aborted only when it ran too long, is stuck or lost its prompt", a.aborted)
			}
		})
	}
}

// TestUndeletedSessionsTreeIsRemovedAndTheSessionSwept: a session the
// agent server would not delete keeps no tree for another session (it is
// removed, not given back) and is deleted by the next Sweep once the
// server answers.
func TestUndeletedSessionsTreeIsRemovedAndTheSessionSwept(t *testing.T) {
	ctx := context.Background()
	a, trees, now := newFakeAgent(), &fakeTrees{}, time.Now()
	s := newSet(a, trees, &now)
	ss, err := s.Start(ctx, 7, lifecycle.Review, "title", "/trees/1", "reviewer", "review it", nil)
	if err != nil {
		t.Fatal(err)
	}
	a.failDeletes = true
	s.Release(ctx, ss.ID, ss.Dir)
	s.Drop(ss)
	if len(trees.given) != 0 || !slices.Equal(trees.removed, []string{"/trees/1"}) {
		t.Fatalf("given %v, removed %v; want the tree removed, not given back", trees.given, trees.removed)
	}
	if s.Of(7) != nil {
		t.Errorf("the ended session is still followed")
	}
	s.Sweep(ctx)
	if len(a.deleted) != 0 {
		t.Fatalf("deleted %v while the server refuses", a.deleted)
	}
	a.failDeletes = false
	s.Sweep(ctx)
	s.Sweep(ctx)
	if !slices.Equal(a.deleted, []string{ss.ID}) {
		t.Errorf("deleted %v, want %s once", a.deleted, ss.ID)
	}
}

// TestUnpromptedSessionIsDeleted: a session whose prompt failed and did
// not land is deleted and its tree given back; Start fails.
func TestUnpromptedSessionIsDeleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, trees, now := newFakeAgent(), &fakeTrees{}, time.Now()
		a.failPrompt = true
		s := newSet(a, trees, &now)
		if _, err := s.Start(ctx, 7, lifecycle.Review, "title", "/trees/1", "reviewer", "review it", nil); err == nil {
			t.Fatal("Start succeeded with the prompt refused")
		}
		if len(a.deleted) != 1 || !slices.Equal(trees.given, []string{"/trees/1"}) || s.Of(7) != nil {
			t.Errorf("deleted %v, given %v, followed %v; want the session deleted, its tree given back, nothing followed",
				a.deleted, trees.given, s.Of(7))
		}
	})
}

// TestAPromptThatFoundNoServerIsNotLookedFor: the prompt call could not
// connect (the agent server is down): the prompt made nothing, so Start
// deletes the session at once, reading no messages (it read them for 3.5 s
// before agent.NotSent, four times, each failed start holding its slot).
func TestAPromptThatFoundNoServerIsNotLookedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, trees, now := newFakeAgent(), &fakeTrees{}, time.Now()
		a.refusePrompt = true
		s := newSet(a, trees, &now)
		start := time.Now()
		if _, err := s.Start(context.Background(), 7, lifecycle.Review, "title", "/trees/1", "reviewer", "review it", nil); err == nil {
			t.Fatal("Start succeeded with no server to prompt")
		}
		if a.reads != 0 || len(a.deleted) != 1 || time.Since(start) != 0 {
			t.Errorf("%d reads of messages, deleted %v, after %s; want none, the session deleted, at once", a.reads, a.deleted, time.Since(start))
		}
	})
}

// TestAPromptStoredLateIsFollowed: the prompt's answer is lost, and the
// loaded server stores the prompt some seconds after. The session is
// followed, not deleted: deleting it would start a second reviewer on the
// head. Before, the messages were read three times in two seconds, and a
// prompt stored after that was deleted with its session (a suspect of
// CI's "PR@head 1@bb2b69c got 2 reviewer sessions" under 20% faults on a
// loaded machine, CI of 139a946). And when no read of the messages
// answers, the session is followed too, as an adopted one is (WasPrompted).
func TestAPromptStoredLateIsFollowed(t *testing.T) {
	for _, tt := range []struct {
		name         string
		storeAfter   time.Duration
		failMessages bool
	}{
		{name: "stored 3 s after the answer", storeAfter: 3 * time.Second},
		{name: "no read of the messages answers", storeAfter: time.Hour, failMessages: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, trees, now := newFakeAgent(), &fakeTrees{}, time.Now()
				a.lostAnswer, a.storeAfter, a.failMessages = true, tt.storeAfter, tt.failMessages
				s := newSet(a, trees, &now)
				ss, err := s.Start(context.Background(), 7, lifecycle.Review, "title", "/trees/1", "reviewer", "review it", nil)
				if err != nil {
					t.Fatalf("Start: %v; want the session followed", err)
				}
				if len(a.deleted) != 0 || s.Of(7) != ss {
					t.Errorf("deleted %v, followed %v; want the session followed, nothing deleted", a.deleted, s.Of(7))
				}
			})
		})
	}
}

// TestADirectoryThatFailsHoldsUpNoOther: the statuses of some directories
// cannot be read (their agent server does not answer); the session whose
// directory answered and whose reply is finished is judged all the same,
// and those of the others still run.
func TestADirectoryThatFailsHoldsUpNoOther(t *testing.T) {
	a := newFakeAgent()
	now := time.Now()
	set := newSet(a, nil, &now)
	a.failDirs = map[string]bool{}
	for pr := 1; pr <= 5; pr++ {
		dir := "/trees/dead-" + string(rune('0'+pr))
		a.failDirs[dir] = true
		set.Register("ses_dead"+string(rune('0'+pr)), pr, lifecycle.Review, dir)
	}
	a.msgs["ses_done"] = []agent.Message{{Role: "user"}, {Role: "assistant", Text: "done", Finish: "stop", Completed: now}}
	done := set.Register("ses_done", 6, lifecycle.Review, "/trees/live")
	if err := set.check(context.Background()); err == nil {
		t.Error("check answered no error with five directories unread")
	}
	select {
	case <-done.Done():
		if done.Outcome() != "idle" {
			t.Errorf("outcome %q, want idle", done.Outcome())
		}
	default:
		t.Fatal("the session whose directory answered was not judged")
	}
	for pr := 1; pr <= 5; pr++ {
		select {
		case <-set.Of(pr).Done():
			t.Errorf("PR %d's session, in a directory not read, was judged %q", pr, set.Of(pr).Outcome())
		default:
		}
	}
}
