package forgejo

import (
	"os"
	"testing"

	"pool/internal/sandbox"
)

// TestMain stops the forge the real-forge tests of this package share
// (sandbox.SharedForge).
func TestMain(m *testing.M) {
	code := m.Run()
	sandbox.StopShared()
	os.Exit(code)
}
