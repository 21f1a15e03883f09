package pool

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
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
