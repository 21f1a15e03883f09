package layers

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// heavy are what no small package may link: the config loader (and viper
// inside it), go-git and the Forgejo SDK, which only the supervisor's forge
// client (pool/forgejo/sdkclient) uses.
var heavy = []string{"pool/configs", "github.com/spf13/viper", "github.com/go-git/go-git", "codeberg.org/mvdkleijn/forgejo-sdk"}

// small are the packages that must stay small, each with what it must not
// link beyond heavy. A path names a package and everything under it.
var small = []struct {
	pkg       string
	forbidden []string
}{
	// the pure decision packages: no HTTP at all, no project package that speaks it
	{"pool/forge", []string{"net/http", "pool/forgejo", "pool/ops", "pool/report"}},
	{"pool/claims", []string{"net/http", "pool/forgejo", "pool/ops", "pool/report"}},
	{"pool/lifecycle", []string{"net/http", "pool/forgejo", "pool/ops", "pool/report", "pool/claims"}},
	{"pool/slots", []string{"net/http", "pool/forgejo", "pool/ops"}},
	// the prompt texts and the descriptions: no loop, no status server;
	// texts renders the prompt's data block itself, with no forge client
	{"pool/texts", []string{"pool/forgejo", "pool/report", "pool/pool", "pool/serve", "pool/ops"}},
	{"pool/describe", []string{"pool/pool", "pool/serve", "pool/forgejo", "pool/ops"}},
	// the status page's data, and the commit status made from it: no status
	// server (ops), no loop; commitstatus writes through the plain forge
	// client, not the supervisor's
	{"pool/statuspage", []string{"net/http", "pool/forgejo", "pool/ops", "pool/pool", "pool/serve"}},
	{"pool/commitstatus", []string{"pool/forgejo/sdkclient", "pool/ops", "pool/pool", "pool/serve"}},
	{"pool/store", []string{"pool/pool", "pool/serve"}},
	{"pool/sessions", []string{"pool/pool", "pool/serve", "pool/forgejo", "pool/ops"}},
	// the reviewer's tool, installed where the agent runs: the plain forge
	// client, not the supervisor's
	{"pool/cmd/pool-review", []string{"pool/forgejo/sdkclient", "pool/pool", "pool/serve", "pool/ops", "pool/agent", "pool/fleet", "pool/store", "bbolt", "pool/report", "pool/lifecycle"}},
}

// TestSmallPackagesLinkNothingHeavy: none of small links heavy or its own
// forbidden packages; a failure names the package and the chain of imports
// that brings the forbidden one in.
func TestSmallPackagesLinkNothingHeavy(t *testing.T) {
	var roots []string
	for _, s := range small {
		roots = append(roots, s.pkg)
	}
	imports := importGraph(t, roots)
	for _, s := range small {
		if _, ok := imports[s.pkg]; !ok {
			t.Errorf("%s: not listed by go list; fix the table", s.pkg)
			continue
		}
		for _, f := range append(append([]string{}, heavy...), s.forbidden...) {
			if chain := chainTo(imports, s.pkg, f); chain != nil {
				t.Errorf("%s links %s: %s", s.pkg, f, strings.Join(chain, " -> "))
			}
		}
	}
}

// importGraph lists every package the roots link, with its imports.
func importGraph(t *testing.T, roots []string) map[string][]string {
	t.Helper()
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}, roots...)
	out, err := exec.Command(goCmd, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	g := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		g[f[0]] = f[1:]
	}
	return g
}

// chainTo is the shortest chain of imports from pkg to a package that is
// target or under it, or nil.
func chainTo(g map[string][]string, pkg, target string) []string {
	from := map[string]string{pkg: ""}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if matches(p, target) {
			var chain []string
			for ; p != ""; p = from[p] {
				chain = append([]string{p}, chain...)
			}
			return chain
		}
		for _, q := range g[p] {
			if _, seen := from[q]; !seen {
				from[q] = p
				queue = append(queue, q)
			}
		}
	}
	return nil
}

// matches says whether p is target or a package under it; a target
// without a slash (bbolt) names a path element anywhere.
func matches(p, target string) bool {
	if !strings.Contains(target, "/") && !strings.Contains(target, ".") {
		for _, e := range strings.Split(p, "/") {
			if e == target {
				return true
			}
		}
		return false
	}
	return p == target || strings.HasPrefix(p, target+"/")
}
