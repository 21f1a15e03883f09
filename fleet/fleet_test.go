package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"pool/agent"
)

// fakeServer is an agent server holding sessions by id; dead makes every
// call fail as an unreachable server's does.
type fakeServer struct {
	name string

	mu       sync.Mutex
	sessions map[string]string // id → dir
	next     int
	agents   []string
	dead     bool
	events   chan agent.Event
	warmed   []string // the directories Warm started
}

var errDown = &agent.Error{Op: "fake", Retryable: true, Err: errors.New("connection refused")}

func newFakeServer(name string, agents ...string) *fakeServer {
	return &fakeServer{name: name, sessions: map[string]string{}, agents: agents, events: make(chan agent.Event, 8)}
}

func (s *fakeServer) setDead(dead bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dead = dead
}

func (s *fakeServer) held() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id := range s.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (s *fakeServer) fail() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return errDown
	}
	return nil
}

func (s *fakeServer) CreateSession(_ context.Context, title, dir string) (agent.Session, error) {
	if err := s.fail(); err != nil {
		return agent.Session{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	id := fmt.Sprintf("ses_%s%d", s.name, s.next)
	s.sessions[id] = dir
	return agent.Session{ID: id, Title: title, Directory: dir}, nil
}

func (s *fakeServer) PromptAsync(context.Context, string, string, string) error { return s.fail() }

// Statuses: every session it holds in dir is busy.
func (s *fakeServer) Statuses(_ context.Context, dir string) (map[string]agent.Status, error) {
	if err := s.fail(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]agent.Status{}
	for id, d := range s.sessions {
		if d == dir {
			out[id] = agent.Status{Type: "busy"}
		}
	}
	return out, nil
}

func (s *fakeServer) Messages(_ context.Context, id string) ([]agent.Message, error) {
	if err := s.fail(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[id]; !ok {
		return nil, agent.ErrNotFound
	}
	return []agent.Message{{Role: "user"}}, nil
}

func (s *fakeServer) Sessions(context.Context) ([]agent.Session, error) {
	if err := s.fail(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []agent.Session
	for id, dir := range s.sessions {
		out = append(out, agent.Session{ID: id, Directory: dir})
	}
	return out, nil
}

func (s *fakeServer) Delete(_ context.Context, id string) error {
	if err := s.fail(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, id)
	return nil
}

func (s *fakeServer) Abort(context.Context, string) error { return s.fail() }
func (s *fakeServer) Permissions(context.Context, string) ([]agent.Permission, error) {
	return nil, s.fail()
}
func (s *fakeServer) Dispose(context.Context, string) error { return s.fail() }
func (s *fakeServer) Warm(_ context.Context, dir string) error {
	if err := s.fail(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.warmed = append(s.warmed, dir)
	return nil
}
func (s *fakeServer) Agents(context.Context, string) ([]string, error) {
	return s.agents, s.fail()
}
func (s *fakeServer) OpenToAnyone(context.Context) (bool, error) { return false, s.fail() }

func (s *fakeServer) Events(ctx context.Context) <-chan agent.Event {
	out := make(chan agent.Event)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-s.events:
				out <- ev
			}
		}
	}()
	return out
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func fleetOf(c *clock, servers ...Server) *Fleet {
	return New(servers, Options{Now: c.now})
}

// twoReviewers is a fleet of two reviewer servers of one slot each, a and b.
func twoReviewers(c *clock) (*Fleet, *fakeServer, *fakeServer) {
	a, b := newFakeServer("a"), newFakeServer("b")
	return fleetOf(c, Server{Name: "a", Agent: a, Workers: 1, Review: true}, Server{Name: "b", Agent: b, Workers: 1, Review: true}), a, b
}

// TestADownServerTakesNoSessionAndLosesItsOwnAfterTheBound walks one
// server through an outage: up, down after DownAfter failed checks (no
// session placed on it), its session counted lost LostAfter later (its
// messages not found, its delete refused until it answers), and back up
// once that session is deleted from it.
func TestADownServerTakesNoSessionAndLosesItsOwnAfterTheBound(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)}
	f, a, b := twoReviewers(c)
	onA, err := f.Place(ctx, false, "t", "/trees/1")
	if err != nil || !slices.Equal(a.held(), []string{onA.ID}) {
		t.Fatalf("first session: %v on a: %v", err, a.held())
	}
	a.setDead(true)
	for i := 1; i < DownAfter; i++ {
		f.Check(ctx)
	}
	if st := f.Status(); !st[0].Up {
		t.Fatalf("a down after %d failed checks, want up until %d", DownAfter-1, DownAfter)
	}
	f.Check(ctx)
	if st := f.Status(); st[0].Up || st[0].Sessions != 1 {
		t.Fatalf("after %d failed checks: %+v, want a down, its session still held", DownAfter, st[0])
	}
	if _, err := f.Messages(ctx, onA.ID); errors.Is(err, agent.ErrNotFound) {
		t.Fatal("a session of a server just down reads as gone before the bound")
	}
	onB, err := f.Place(ctx, false, "t", "/trees/2")
	if err != nil || !slices.Equal(b.held(), []string{onB.ID}) {
		t.Fatalf("a session while a is down: %v, on b: %v", err, b.held())
	}
	if _, err := f.Place(ctx, false, "t", "/trees/3"); !errors.Is(err, ErrNoSlot) {
		t.Fatalf("a third session with a down and b full: %v, want ErrNoSlot", err)
	}
	c.add(LostAfter - time.Second)
	f.Check(ctx)
	if _, err := f.Messages(ctx, onA.ID); errors.Is(err, agent.ErrNotFound) {
		t.Fatal("lost before LostAfter")
	}
	c.add(time.Second)
	f.Check(ctx)
	if _, err := f.Messages(ctx, onA.ID); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("messages of a session lost: %v, want not found", err)
	}
	if err := f.Delete(ctx, onA.ID); err == nil {
		t.Fatal("deleting a lost session on a down server answered success")
	}
	if st := f.Status(); st[0].Lost != 1 || st[0].Sessions != 0 {
		t.Errorf("a once lost: %+v, want 1 lost, none held", st[0])
	}
	a.setDead(false)
	f.Check(ctx)
	if st := f.Status(); !st[0].Up || len(a.held()) != 0 {
		t.Fatalf("a answering again: %+v, holding %v; want up, the lost session deleted", st[0], a.held())
	}
	if again, err := f.Place(ctx, false, "t", "/trees/3"); err != nil || !slices.Equal(a.held(), []string{again.ID}) {
		t.Errorf("a session once a is back: %v, on a: %v", err, a.held())
	}
}

// TestADownServersStatusesAreUnknownUntilLost: while a server is down,
// the statuses of its directories are an error, never an empty answer, in
// which the sessions it may still be running would read as ended (seen
// busy, then absent: idle). Once they count lost the answer is empty and
// their messages read as gone.
func TestADownServersStatusesAreUnknownUntilLost(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)}
	f, a, _ := twoReviewers(c)
	s, err := f.Place(ctx, false, "t", "/trees/1")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := f.Statuses(ctx, "/trees/1"); err != nil || st[s.ID].Type != "busy" {
		t.Fatalf("statuses while up: %v, %v; want the session busy", st, err)
	}
	a.setDead(true)
	for range DownAfter {
		f.Check(ctx)
	}
	a.setDead(false) // answering again, not yet checked: still down
	if st, err := f.Statuses(ctx, "/trees/1"); err == nil {
		t.Fatalf("statuses of a down server: %v and no error; its running session reads as ended", st)
	}
	c.add(LostAfter)
	a.setDead(true)
	f.Check(ctx)
	st, err := f.Statuses(ctx, "/trees/1")
	if err != nil || len(st) != 0 {
		t.Fatalf("statuses once its sessions count lost: %v, %v; want none", st, err)
	}
	if _, err := f.Messages(ctx, s.ID); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("messages of the lost session: %v, want not found", err)
	}
}

// TestOneServerLosesNothing: a fleet of one never counts a session lost:
// there is no other server to start it on.
func TestOneServerLosesNothing(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)}
	a := newFakeServer("a")
	f := fleetOf(c, Server{Name: "a", Agent: a, Workers: 2, Review: true, Fix: true})
	s, err := f.Place(ctx, false, "t", "/trees/1")
	if err != nil {
		t.Fatal(err)
	}
	a.setDead(true)
	for range DownAfter {
		f.Check(ctx)
	}
	c.add(10 * LostAfter)
	f.Check(ctx)
	a.setDead(false)
	if _, err := f.Messages(ctx, s.ID); err != nil {
		t.Errorf("the one server's session after its outage: %v, want it followed on", err)
	}
	if st := f.Status(); st[0].Lost != 0 {
		t.Errorf("lost %d, want 0", st[0].Lost)
	}
}

// TestRolesAndAdoption: a fixer goes to the fix server only; sessions
// listed at start are routed to the server that holds them, and an
// adopted one fills its server's slot.
func TestRolesAndAdoption(t *testing.T) {
	ctx := context.Background()
	rev, fix := newFakeServer("r", "build", "reviewer"), newFakeServer("f", "reviewer")
	left, _ := fix.CreateSession(ctx, "left", "/trees/9")
	f := fleetOf(&clock{}, Server{Name: "r", Agent: rev, Workers: 2, Review: true}, Server{Name: "f", Agent: fix, Workers: 1, Fix: true})
	if names, err := f.Agents(ctx, ""); err != nil || !slices.Equal(names, []string{"reviewer"}) {
		t.Errorf("agents = %v, %v; want those every server has", names, err)
	}
	if _, err := f.Sessions(ctx); err != nil {
		t.Fatal(err)
	}
	f.Hold(left.ID)
	if f.Free(true) {
		t.Error("a fixer slot free while the fix server's one slot holds an adopted session")
	}
	if err := f.Delete(ctx, left.ID); err != nil || len(fix.held()) != 0 {
		t.Fatalf("deleting the adopted session: %v, fix server holds %v", err, fix.held())
	}
	s, err := f.Place(ctx, true, "t", "/trees/1")
	if err != nil || !slices.Equal(fix.held(), []string{s.ID}) || len(rev.held()) != 0 {
		t.Errorf("a fixer: %v; on the fix server %v, on the review server %v", err, fix.held(), rev.held())
	}
	if _, err := f.Place(ctx, true, "t", "/trees/2"); !errors.Is(err, ErrNoSlot) {
		t.Errorf("a second fixer with the fix server full: %v, want ErrNoSlot (the review server runs no fixer)", err)
	}
}

// TestEventsOfEveryServer: the fleet's stream carries every server's
// events and closes once ctx ends.
func TestEventsOfEveryServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	a, b := newFakeServer("a"), newFakeServer("b")
	f := fleetOf(&clock{}, Server{Name: "a", Agent: a, Workers: 1, Review: true}, Server{Name: "b", Agent: b, Workers: 1, Review: true})
	events := f.Events(ctx)
	a.events <- agent.Event{Type: agent.EventSessionIdle, SessionID: "ses_a1"}
	b.events <- agent.Event{Type: agent.EventSessionIdle, SessionID: "ses_b1"}
	var got []string
	for len(got) < 2 {
		got = append(got, (<-events).SessionID)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"ses_a1", "ses_b1"}) {
		t.Errorf("events of %v, want both servers'", got)
	}
	cancel()
	for range events {
	}
}

// TestAFailedCreateCountsAsAFailedCheck: a server that refuses to create a
// session is left out after DownAfter failures, checks and creates alike.
func TestAFailedCreateCountsAsAFailedCheck(t *testing.T) {
	ctx := context.Background()
	a, b := newFakeServer("a"), newFakeServer("b")
	f := fleetOf(&clock{}, Server{Name: "a", Agent: a, Workers: 5, Review: true}, Server{Name: "b", Agent: b, Workers: 5, Review: true})
	a.setDead(true)
	for range DownAfter - 1 {
		f.Check(ctx)
	}
	if _, err := f.Place(ctx, false, "t", "/trees/1"); err == nil {
		t.Fatal("placed on a dead server")
	}
	if st := f.Status(); st[0].Up {
		t.Fatalf("a up after %d failed checks and a failed create", DownAfter-1)
	}
	if s, err := f.Place(ctx, false, "t", "/trees/2"); err != nil || !slices.Equal(b.held(), []string{s.ID}) {
		t.Errorf("the next session: %v, on b: %v", err, b.held())
	}
}

// TestAReservationKeepsTheSlot: a slot reserved for a session is not
// offered to another; Place takes the reserved server, and a reservation
// given up frees the slot.
func TestAReservationKeepsTheSlot(t *testing.T) {
	ctx := context.Background()
	a, b := newFakeServer("a"), newFakeServer("b")
	f := fleetOf(&clock{}, Server{Name: "a", Agent: a, Workers: 1, Review: true}, Server{Name: "b", Agent: b, Workers: 1, Review: true})
	if !f.Reserve(false, "pr-1") || !f.Reserve(false, "pr-2") {
		t.Fatal("two reservations refused with two free slots")
	}
	if f.Reserve(false, "pr-3") || f.Free(false) {
		t.Fatal("a third reservation, or a free slot, with both slots reserved")
	}
	if _, err := f.Place(ctx, false, "pr-3", "/trees/3"); !errors.Is(err, ErrNoSlot) {
		t.Fatalf("a session without a reservation took a reserved slot: %v", err)
	}
	s, err := f.Place(ctx, false, "pr-2", "/trees/2")
	if err != nil || !slices.Equal(b.held(), []string{s.ID}) {
		t.Fatalf("pr-2's session: %v, on b %v; want it on b, reserved second", err, b.held())
	}
	f.Unreserve("pr-1")
	f.Unreserve("pr-2") // taken already: nothing to give up
	if !f.Free(false) || !f.Reserve(false, "pr-3") || f.Reserve(false, "pr-4") {
		t.Error("pr-1's slot not free once given up, or b's taken slot offered again")
	}
}

// TestASessionGoesWhereItsTreeIsWarm: a slot reserved on one server whose
// session gets a tree last used on the other server trades places with a
// reservation there, or moves to a free slot there, so the tree's next
// session runs where its instance is warm; a fixer never goes to a server
// that only reviews.
func TestASessionGoesWhereItsTreeIsWarm(t *testing.T) {
	ctx := context.Background()
	a, b := newFakeServer("a"), newFakeServer("b")
	f := fleetOf(&clock{}, Server{Name: "a", Agent: a, Workers: 1, Review: true, Fix: true},
		Server{Name: "b", Agent: b, Workers: 2, Review: true})
	first, err := f.Place(ctx, false, "pr-1", "/trees/1")
	if err != nil || !slices.Equal(a.held(), []string{first.ID}) {
		t.Fatalf("pr-1: %v, on a %v; want it on a", err, a.held())
	}
	second, err := f.Place(ctx, false, "pr-2", "/trees/2")
	if err != nil || !slices.Equal(b.held(), []string{second.ID}) {
		t.Fatalf("pr-2: %v, on b %v; want it on b", err, b.held())
	}
	for _, id := range []string{first.ID, second.ID} {
		if err := f.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// a has its one slot free, b two: a, b, b reserved in that order.
	for _, title := range []string{"pr-3", "pr-4", "pr-5"} {
		if !f.Reserve(false, title) {
			t.Fatalf("%s: no slot reserved", title)
		}
	}
	on := func(title, dir string, fixer bool) string {
		s, err := f.Place(ctx, fixer, title, dir)
		if err != nil {
			t.Fatalf("%s in %s: %v", title, dir, err)
		}
		if slices.Contains(a.held(), s.ID) {
			return "a"
		}
		return "b"
	}
	got := []string{on("pr-3", "/trees/2", false), on("pr-4", "/trees/1", false), on("pr-5", "/trees/new", false)}
	if !slices.Equal(got, []string{"b", "a", "b"}) {
		t.Errorf("pr-3 in b's warm tree, pr-4 in a's, pr-5 in a new one went to %v; want b, a, b", got)
	}
	// A fixer reserved on a stays there in a tree warm on b, which runs no
	// fixers.
	for _, id := range append(a.held(), b.held()...) {
		if err := f.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if !f.Reserve(true, "pr-6") {
		t.Fatal("pr-6: no slot for a fixer")
	}
	if where := on("pr-6", "/trees/2", true); where != "a" {
		t.Errorf("the fixer went to %s, want a: b runs no fixers", where)
	}
}

// TestWarmFillsEachServersSlotsAndARevivalColdsThem: trees are warmed on
// the servers that run reviews, as many on each as it has slots; a
// session in a warmed tree goes to the server that warmed it; once a
// server was down and answers again, its trees are cold and Revived says
// so, and the other's stay warm.
func TestWarmFillsEachServersSlotsAndARevivalColdsThem(t *testing.T) {
	ctx := context.Background()
	a, b, fix := newFakeServer("a"), newFakeServer("b"), newFakeServer("fix")
	f := fleetOf(&clock{}, Server{Name: "a", Agent: a, Workers: 2, Review: true}, Server{Name: "b", Agent: b, Workers: 1, Review: true, Fix: true},
		Server{Name: "fix", Agent: fix, Workers: 3, Fix: true})
	if n := f.ReviewSlots(); n != 3 {
		t.Fatalf("review slots %d, want 3 (the fix server's are not)", n)
	}
	for _, dir := range []string{"/trees/1", "/trees/2", "/trees/3"} {
		if !f.Cold(dir) {
			t.Errorf("%s warm before it was warmed", dir)
		}
		if _, err := f.Warm(ctx, dir); err != nil {
			t.Fatal(err)
		}
		if f.Cold(dir) {
			t.Errorf("%s cold once warmed", dir)
		}
	}
	if !slices.Equal(a.warmed, []string{"/trees/1", "/trees/3"}) || !slices.Equal(b.warmed, []string{"/trees/2"}) || len(fix.warmed) != 0 {
		t.Fatalf("warmed on a %v, b %v, fix %v; want two on a, one on b, none on the fix server", a.warmed, b.warmed, fix.warmed)
	}
	if !f.Reserve(false, "pr-1") { // the least busy: a
		t.Fatal("no slot for pr-1")
	}
	s, err := f.Place(ctx, false, "pr-1", "/trees/2")
	if err != nil || !slices.Equal(b.held(), []string{s.ID}) {
		t.Fatalf("pr-1 in the tree warmed on b: %v, on b %v", err, b.held())
	}
	revived := f.Revived()
	a.setDead(true)
	for range DownAfter {
		f.Check(ctx)
	}
	if !f.Cold("/trees/1") || f.Cold("/trees/2") {
		t.Errorf("a down: /trees/1 cold %v, /trees/2 cold %v; want a's cold, b's warm", f.Cold("/trees/1"), f.Cold("/trees/2"))
	}
	select {
	case <-revived:
		t.Fatal("revived while a is down")
	default:
	}
	a.setDead(false)
	f.Check(ctx)
	select {
	case <-revived:
	default:
		t.Fatal("a answers again, and Revived says nothing")
	}
	if !f.Cold("/trees/1") || !f.Cold("/trees/3") || f.Cold("/trees/2") {
		t.Errorf("a back: its trees cold %v %v, b's cold %v; want a's cold (a restart lost them), b's warm",
			f.Cold("/trees/1"), f.Cold("/trees/3"), f.Cold("/trees/2"))
	}
	if _, err := f.Warm(ctx, "/trees/1"); err != nil || f.Cold("/trees/1") || !slices.Equal(a.warmed, []string{"/trees/1", "/trees/3", "/trees/1"}) {
		t.Errorf("warming /trees/1 again: %v, cold %v, a warmed %v; want it on a again", err, f.Cold("/trees/1"), a.warmed)
	}
	if err := f.Dispose(ctx, "/trees/1"); err != nil || !f.Cold("/trees/1") {
		t.Errorf("disposed: %v, cold %v; want cold", err, f.Cold("/trees/1"))
	}
}
