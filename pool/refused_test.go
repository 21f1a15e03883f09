package pool

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"pool/forge"
	"pool/forgejo"
)

// TestARefusedPRIsNotReadEveryCycle: the forge refuses PR 1's merge for a
// rule (a hook's 409 PushRejected, held up to 8 hours) and nothing on the
// PR changes for an hour at the default 30 s poll. The pool reads the PR's
// reviews and checks (what the refusal depends on that moves no update
// time) every sixth of the claim TTL and at the back-off's merge calls,
// not at every cycle. Before, it decided the PR every cycle: 120 reads of
// its reviews and 120 of its checks in the hour (the simulation: about
// 390 requests an hour from one pool for one such PR).
func TestARefusedPRIsNotReadEveryCycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge(1)
		f.mergeAnswer[1] = forgejo.MergeAnswer(409, `{"message":"PushRejected with remote message: pre-receive hook declined"}`)
		f.statuses[f.prs[1].HeadSHA] = []forge.Status{{Context: "ci", State: "success"}}
		f.review(1, "reviewer", forge.ReviewApproved)
		cfg := testConfig(1)
		cfg.PollInterval, cfg.StatusInterval, cfg.IdleExit = 30*time.Second, 30*time.Second, 0
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		p, err := New(ctx, cfg, Deps{Forge: f, Agent: newFakeAgent(approver(f, time.Millisecond))})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); _, _ = p.Run(ctx) }()
		reads := func() (merges, reads int) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.calls["merge"], f.calls["reviews"] + f.calls["statuses"]
		}
		for m, _ := reads(); m == 0; m, _ = reads() {
			time.Sleep(time.Second)
		}
		merges0, reads0 := reads()
		time.Sleep(time.Hour)
		merges1, reads1 := reads()
		cancel()
		<-done
		merges, read := merges1-merges0, reads1-reads0
		// The back-off's merge calls (30 s doubling: 6 in the hour) take
		// three decisions each (the loop's and the queue's before the
		// call, the loop's after it), and the PR is looked at every 5
		// minutes between: 3*6 + 12 decisions, 2 reads each.
		if want := 2 * (3*6 + 12); read > want {
			t.Errorf("%d reads of the refused PR's reviews and checks in an hour (%d merge calls), want at most %d", read, merges, want)
		}
		if merges > 7 {
			t.Errorf("%d merge calls in an hour, want the back-off's", merges)
		}
		if n := len(effectsWith(f, "#1: comment Merging is on hold")); n != 1 {
			t.Errorf("%d hold notes, want 1: %v", n, f.Effects())
		}
	})
}
