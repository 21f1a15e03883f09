package sandbox

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// TestLog sends sandbox progress lines to a test's log.
func TestLog(t testing.TB) io.Writer { return testLog{t} }

type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// ForgeForTest starts a forge for one test and stops it when the test ends,
// showing the end of its log if the test failed. Under -short it skips the
// test: a real forge is not a short test.
func ForgeForTest(t testing.TB) *Forge {
	t.Helper()
	if testing.Short() {
		t.Skip("starting a real Gitea forge is skipped in -short mode")
	}
	// Building gitea the first time takes minutes; a cached binary starts in seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	f, err := StartForge(ctx, t.TempDir(), TestLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gitea log tail:\n%s", f.LogTail())
		}
		if err := f.Stop(); err != nil {
			t.Error(err)
		}
	})
	return f
}
