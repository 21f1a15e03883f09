package pool

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"pool/forge"
)

// TestTheMergeQueueCallsNoLoopFunction: the merge queue's worker (every
// method of merger) decides through lifecycle and makes its own calls; it
// never carries out a decision the loop's way (act, decideAndAct, step,
// perform), whose Merge would queue the PR again, and never adds to the
// queue. Before merger, mergeQueued and settleMerged called decideAndAct,
// and merge, checkOnBase and afterUpdate called act.
func TestTheMergeQueueCallsNoLoopFunction(t *testing.T) {
	loops := map[string]bool{"act": true, "decideAndAct": true, "perform": true, "add": true}
	fset := token.NewFileSet()
	methods := 0
	for _, file := range []string{"merger.go", "update.go"} {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || !isMerger(fn.Recv.List[0].Type) {
				continue
			}
			methods++
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && loops[sel.Sel.Name] {
					t.Errorf("%s: merger.%s calls %s, the discovery loop's", fset.Position(call.Pos()), fn.Name.Name, sel.Sel.Name)
				}
				return true
			})
		}
	}
	if methods < 10 {
		t.Errorf("found %d methods of merger, want the worker's dozen: the test reads the wrong files", methods)
	}
}

func isMerger(e ast.Expr) bool {
	star, ok := e.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	return ok && id.Name == "merger"
}

// TestARequestForChangesFiledWhileTheQueueReadsStopsItsMerge: PR 1 is
// approved and queued. The merge queue's decision reads its reviews, then
// its checks, which the forge answers 5 s late, and meanwhile a human
// requests changes. The queue reads the reviews again before its merge
// call, and does not merge. Before, it merged on the approval it had read
// (the simulation's seed 34: "#40 merged at update-40-...: counted
// approval false", the request for changes filed 26 s before the merge).
func TestARequestForChangesFiledWhileTheQueueReadsStopsItsMerge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge(1)
		f.review(1, "reviewer", forge.ReviewApproved)
		cfg := testConfig(1)
		cfg.HumanReviewers = append(cfg.HumanReviewers, "alice")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		p, err := New(ctx, cfg, Deps{Forge: f, Agent: newFakeAgent(approver(f, time.Millisecond))})
		if err != nil {
			t.Fatal(err)
		}
		var filed atomic.Bool
		f.mu.Lock()
		f.onStatuses = func(string) {
			if !p.queue.has(1) || filed.Swap(true) {
				return // the discovery loop's read, or the request for changes filed already
			}
			time.Sleep(5 * time.Second) // a slow answer: the forge takes the review meanwhile
			f.review(1, "alice", forge.ReviewRequestChanges)
		}
		f.mu.Unlock()
		if _, err := p.Run(ctx); err != nil || ctx.Err() != nil {
			t.Fatalf("Run: %v, %v", err, ctx.Err())
		}
		if !filed.Load() {
			t.Fatal("the merge queue read no checks of the queued PR: the request for changes was never filed")
		}
		if f.isMerged(1) {
			t.Errorf("PR 1 merged after alice requested changes during the queue's reads; effects %v", f.Effects())
		}
	})
}

// TestTheMergeQueueReadsAMergesFactsAtOnce: PR 1 is approved and queued,
// and the forge answers each read of its reviews and of its checks in
// 600 ms. The merge queue's decision reads its reviews, checks and open
// dependencies at once, not one round after another: its merge call waits
// for the slowest read, not for their sum (1.2 s here, past
// reviewsFreshFor, after which the reviews were read once more).
func TestTheMergeQueueReadsAMergesFactsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge(1)
		f.review(1, "reviewer", forge.ReviewApproved)
		f.reviewsDelay = map[int]time.Duration{1: 600 * time.Millisecond}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		p, err := New(ctx, testConfig(1), Deps{Forge: f, Agent: newFakeAgent(approver(f, time.Millisecond))})
		if err != nil {
			t.Fatal(err)
		}
		var queued, beside atomic.Int32
		f.mu.Lock()
		f.onStatuses = func(string) {
			if !p.queue.has(1) {
				return // the discovery loop's read
			}
			queued.Add(1)
			time.Sleep(time.Millisecond) // a read of the reviews made at once has begun
			f.mu.Lock()
			inAir := f.reviewsInAir
			f.mu.Unlock()
			if inAir > 0 {
				beside.Add(1)
			}
			time.Sleep(600 * time.Millisecond)
		}
		f.mu.Unlock()
		if _, err := p.Run(ctx); err != nil || ctx.Err() != nil {
			t.Fatalf("Run: %v, %v", err, ctx.Err())
		}
		if !f.isMerged(1) {
			t.Fatalf("PR 1 not merged; effects %v", f.Effects())
		}
		if queued.Load() == 0 {
			t.Fatal("the merge queue read no checks of the queued PR")
		}
		if beside.Load() != queued.Load() {
			t.Errorf("the merge queue read the checks of PR 1 after its reviews, not beside them (%d of %d reads)", queued.Load()-beside.Load(), queued.Load())
		}
		f.mu.Lock()
		reviews := f.calls["reviews"]
		f.mu.Unlock()
		if reviews != 2 {
			t.Errorf("%d reads of PR 1's reviews, want 2 (the discovery loop's and the queue's, none again before the merge call)", reviews)
		}
	})
}
