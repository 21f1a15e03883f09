package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"path/filepath"
	"time"

	"pool/agent"
)

const (
	// debugLog makes the latency runs' logs show each wake-up and decision,
	// to read when a figure surprises.
	debugLog      = "POOL_LOG_LEVEL=debug"
	webhookSecret = "poolbench-webhook-secret"
	stopGrace     = 60 * time.Second
	sessionLimit  = 3 * time.Minute // a scripted session takes seconds
)

// runPool starts the pool binary as run name, with its own home and state
// dir, and waits until its supervisor has started.
func (b *bench) runPool(ctx context.Context, name string, extraEnv []string, args ...string) (*poolProc, error) {
	dir := filepath.Join(b.dir, name)
	env, err := poolEnv(b.sb, dir, extraEnv...)
	if err != nil {
		return nil, err
	}
	p, err := startPool(b.bin, env, filepath.Join(b.dir, name+".log"), args...)
	if err != nil {
		return nil, err
	}
	if _, err := p.waitFor(ctx, time.Minute, "the pool to start", isMsg(msgStarting, 0)); err != nil {
		_ = p.stop(stopGrace)
		return nil, fmt.Errorf("%s: %w (log in %s.log)", name, err, name)
	}
	return p, nil
}

// openings is figure 1 for one mode: PR opened → session started, and,
// for the PRs whose webhook woke the pool before the session started, how
// that splits into the forge's delivery (opened → woken) and the pool's
// reaction (woken → session started).
type openings struct {
	latency, delivery, reaction []time.Duration
	// model: opened → the reviewer's first model request; toModel: session
	// created → that request.
	model, toModel []time.Duration
}

// webhookPoll is the poll interval with webhooks: long enough that only a
// delivery can make the pool notice a new PR in time, as in the e2e test.
const webhookPoll = 10 * time.Minute

// figure1 times PR opened → session started, one PR at a time, each opened
// after a random pause within -poll so that polling sees PRs at every phase
// of its timer. With webhooks the pool listens for the forge's deliveries
// and polls only every webhookPoll, so the figure is the webhook path alone
// (with the same interval as polling, a poll would sometimes beat a slow
// delivery and flatter the figure).
func (b *bench) figure1(ctx context.Context, webhooks bool, branches []string) (openings, error) {
	return b.figure1As(ctx, "", webhooks, branches)
}

// figure1As is figure1 with its run's name suffixed, so that it can run
// twice.
func (b *bench) figure1As(ctx context.Context, suffix string, webhooks bool, branches []string) (openings, error) {
	name, extraEnv, poll := "fig1-polling"+suffix, []string{debugLog}, b.opts.poll
	if webhooks {
		poll = webhookPoll
	}
	args := []string{"--workers", "2", "--poll-interval", poll.String(), "--status-interval", "1s",
		"--idle-exit", "0", "--abort-on-exit=true"}
	if webhooks {
		addr, err := freeAddr()
		if err != nil {
			return openings{}, err
		}
		name, extraEnv = "fig1-webhooks"+suffix, []string{debugLog, "POOL_WEBHOOK_SECRET=" + webhookSecret}
		args = append(args, "--listen", addr)
		if err := b.installHook(ctx, name, extraEnv, "http://"+addr+"/hook"); err != nil {
			return openings{}, err
		}
		defer func() {
			if err := b.removeHooks(ctx); err != nil {
				b.progress("warning: %v", err)
			}
		}()
	}
	b.progress("figure 1 (%s): %d PRs, one at a time, poll interval %s", name, len(branches), poll)
	p, err := b.runPool(ctx, name, extraEnv, args...)
	if err != nil {
		return openings{}, err
	}
	o, err := b.timeOpenings(ctx, p, branches)
	if serr := p.stop(stopGrace); err == nil && serr != nil {
		err = fmt.Errorf("%s: %w", name, serr)
	}
	return o, err
}

// timeOpenings opens each branch's PR when the pool is idle, and times it
// until the pool logs its session started.
func (b *bench) timeOpenings(ctx context.Context, p *poolProc, branches []string) (openings, error) {
	time.Sleep(b.settle) // let the first cycle finish
	var o openings
	for _, br := range branches {
		time.Sleep(rand.N(b.opts.poll))
		n, opened, err := b.openPR(ctx, br)
		if err != nil {
			return o, err
		}
		var woken time.Time
		started, err := p.waitFor(ctx, b.opts.poll+time.Minute, fmt.Sprintf("PR #%d's session", n), func(l logLine) bool {
			if woken.IsZero() && isMsg(msgWoken, n)(l) {
				woken = l.time
			}
			return isMsg(msgStarted, n)(l)
		})
		if err != nil {
			return o, err
		}
		o.note(opened, woken, started.time)
		if _, err := p.waitFor(ctx, sessionLimit, fmt.Sprintf("PR #%d's session to end", n), isSessionEnd(n)); err != nil {
			return o, err
		}
		b.progress("  PR #%d: session after %s%s%s", n, started.time.Sub(opened).Round(time.Millisecond), wokenNote(opened, woken), o.noteModel(b.calls, n, opened, started.time))
	}
	return o, nil
}

func (o *openings) note(opened, woken, started time.Time) {
	o.latency = append(o.latency, started.Sub(opened))
	if !woken.IsZero() {
		o.delivery = append(o.delivery, woken.Sub(opened))
		o.reaction = append(o.reaction, started.Sub(woken))
	}
}

// noteModel notes when the model first heard from PR n's reviewer.
func (o *openings) noteModel(calls *firstCalls, n int, opened, started time.Time) string {
	at, ok := calls.of(n)
	if !ok {
		return "; the model heard nothing from its reviewer"
	}
	o.model = append(o.model, at.Sub(opened))
	o.toModel = append(o.toModel, at.Sub(started))
	return fmt.Sprintf("; first model request after %s", at.Sub(opened).Round(time.Millisecond))
}

func wokenNote(opened, woken time.Time) string {
	if woken.IsZero() {
		return ""
	}
	return fmt.Sprintf(" (webhook woke the pool after %s)", woken.Sub(opened).Round(time.Millisecond))
}

// installHook runs `pool hook install` for the webhook receiver at url.
func (b *bench) installHook(ctx context.Context, name string, extraEnv []string, url string) error {
	env, err := poolEnv(b.sb, filepath.Join(b.dir, name), extraEnv...)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, b.bin, "hook", "install", "--hook-url", url)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pool hook install: %w: %s", err, out)
	}
	return nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// figure2 queues PRs for one worker and times each session.idle event (from
// the agent server's stream) to the next session started in the slot. The
// status interval stays at its default, 10 s, so only the event frees the
// slot sooner.
func (b *bench) figure2(ctx context.Context, branches []string) (refills, error) {
	b.progress("figure 2: %d PRs queued for one worker", len(branches))
	if _, err := b.sb.CreatePRs(ctx, branches, []int64{}, b.opts.parallel); err != nil {
		return refills{}, err
	}
	evCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := agent.New(b.sb.Agent.URL, "", agent.Options{}).Events(evCtx)
	if err := awaitConnected(ctx, events); err != nil {
		return refills{}, err
	}
	p, err := b.runPool(ctx, "fig2", []string{debugLog}, "--workers", "1", "--poll-interval", b.opts.poll.String(),
		"--status-interval", "10s", "--idle-exit", "0", "--abort-on-exit=true")
	if err != nil {
		return refills{}, err
	}
	gaps, err := b.collectRefills(ctx, p, events, len(branches))
	if serr := p.stop(stopGrace); err == nil && serr != nil {
		err = fmt.Errorf("fig2: %w", serr)
	}
	return gaps, err
}

// awaitConnected waits for the stream's first connect, so that no idle
// event of the pool's sessions is missed.
func awaitConnected(ctx context.Context, events <-chan agent.Event) error {
	t := time.NewTimer(time.Minute)
	defer t.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return fmt.Errorf("agent event stream: closed before it connected")
			}
			if ev.Type == agent.EventReconnected {
				return nil
			}
		case <-t.C:
			return fmt.Errorf("agent event stream: not connected after a minute")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// refillLog is what figure 2 saw: sessions in start order, when each
// first went idle, and when the pool logged it finished.
type refillLog struct {
	starts   []logLine
	idle     map[string]time.Time
	finished map[string]time.Time
	ended    int
}

// refills is figure 2: idle event → next session started, split into the
// pool collecting the ended session (idle event → "session finished") and
// refilling the slot ("session finished" → next "session started").
type refills struct {
	gaps, collect, refill []time.Duration
}

// collectRefills follows the pool until want sessions have ended, then
// pairs each session's idle event with the next session's start.
func (b *bench) collectRefills(ctx context.Context, p *poolProc, events <-chan agent.Event, want int) (refills, error) {
	rl := &refillLog{idle: map[string]time.Time{}, finished: map[string]time.Time{}}
	deadline := time.NewTimer(time.Duration(want) * sessionLimit)
	defer deadline.Stop()
	for rl.ended < want {
		select {
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			rl.noteEvent(ev, time.Now())
		case l, ok := <-p.lines:
			if !ok {
				return refills{}, fmt.Errorf("fig2: the pool exited after %d sessions", rl.ended)
			}
			b.noteLine(rl, l)
		case <-deadline.C:
			return refills{}, fmt.Errorf("fig2: only %d of %d sessions ended in time", rl.ended, want)
		case <-ctx.Done():
			return refills{}, ctx.Err()
		}
	}
	return b.refillGaps(rl), nil
}

func (rl *refillLog) noteEvent(ev agent.Event, at time.Time) {
	if ev.Type != agent.EventSessionIdle || ev.SessionID == "" {
		return
	}
	if _, seen := rl.idle[ev.SessionID]; !seen {
		rl.idle[ev.SessionID] = at
	}
}

func (b *bench) noteLine(rl *refillLog, l logLine) {
	switch l.msg {
	case msgStarted:
		rl.starts = append(rl.starts, l)
		if k := len(rl.starts); k > 1 {
			prev := rl.starts[k-2].attrs["session"]
			if t, ok := rl.idle[prev]; ok {
				b.progress("  PR #%s: started %s after the previous session's idle event", l.attrs["pr"], l.time.Sub(t).Round(time.Millisecond))
			}
		}
	case msgFinished, msgNoResult:
		rl.finished[l.attrs["session"]] = l.time
		rl.ended++
	}
}

// refillGaps pairs session k's idle event with session k+1's start.
func (b *bench) refillGaps(rl *refillLog) refills {
	var r refills
	for k := 1; k < len(rl.starts); k++ {
		prev := rl.starts[k-1].attrs["session"]
		idle, ok := rl.idle[prev]
		if !ok {
			b.progress("warning: no session.idle event seen for session %s; sample dropped", prev)
			continue
		}
		next := rl.starts[k].time
		r.gaps = append(r.gaps, next.Sub(idle))
		if fin, ok := rl.finished[prev]; ok {
			r.collect = append(r.collect, fin.Sub(idle))
			r.refill = append(r.refill, next.Sub(fin))
		}
	}
	return r
}
