package lifecycle

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// linked are the packages outside the standard library that the decision
// packages may link: themselves and the leaf of plain forge types and pure
// rules (standard library only). No SDK, no HTTP client of the project, no
// SSH.
var linked = []string{"pool/lifecycle", "pool/claims", "pool/forge"}

// TestLinksOnlyTheLeaf: lifecycle and claims, with everything they import,
// link nothing outside the standard library but the packages above.
func TestLinksOnlyTheLeaf(t *testing.T) {
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goCmd, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}",
		"pool/lifecycle", "pool/claims").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if !slices.Contains(linked, p) {
			t.Errorf("lifecycle or claims links %s; allowed outside the standard library: %v", p, linked)
		}
	}
}
