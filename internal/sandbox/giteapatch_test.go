package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPatchGitea(t *testing.T) {
	src := t.TempDir()
	file := filepath.Join(src, "models", "db", "engine.go")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	before := "func RegisterModel(bean any, initFunc ...func() error) {\n\tif len(registeredInitFuncs) > 0 && initFunc[0] != nil {\n"
	if err := os.WriteFile(file, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := patchGitea(src); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	if !strings.Contains(string(b), "if len(initFunc) > 0 && initFunc[0] != nil {") || strings.Contains(string(b), "registeredInitFuncs) > 0") {
		t.Errorf("patched file:\n%s", b)
	}
	// Patched already, or another version: the line is not there.
	if err := patchGitea(src); err == nil || !strings.Contains(err.Error(), "want once") {
		t.Errorf("patching twice: err = %v, want the line named as missing", err)
	}
}
