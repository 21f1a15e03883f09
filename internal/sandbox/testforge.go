package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
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

// shared are the servers the tests of one test binary share.
var shared struct {
	once    sync.Once
	dir     string
	servers *Servers
	err     error
}

// SharedServers returns the forge, model and agent server that every test
// of this test binary shares, starting them on first use. Under -short it
// skips the test. The test binary's TestMain stops them with StopShared.
//
// A test on shared servers isolates itself by the sandbox it joins
// (Servers.Join): accounts, repositories and a model route of its own. A
// test that stops, freezes or restarts a server starts servers of its own.
func SharedServers(t testing.TB) *Servers {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: needs the real forge and agent server (run without -short)")
	}
	shared.once.Do(func() {
		// Building gitea the first time takes minutes; a cached binary starts in seconds.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		if shared.dir, shared.err = os.MkdirTemp("", "pool-servers-"); shared.err != nil {
			return
		}
		var log bytes.Buffer
		start := time.Now()
		shared.servers, shared.err = StartServers(ctx, shared.dir, "", &log)
		if shared.err != nil {
			shared.err = fmt.Errorf("shared servers: %w\n%s", shared.err, log.String())
			return
		}
		fmt.Fprintf(os.Stderr, "sandbox: shared forge %s and agent server %s up in %s\n",
			shared.servers.Forge.URL, shared.servers.Agent.URL, time.Since(start).Round(100*time.Millisecond))
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.servers
}

// sharedForge is the forge the tests of a package that needs no agent
// server share.
var sharedForge struct {
	once  sync.Once
	dir   string
	forge *Forge
	err   error
}

// SharedForge is SharedServers for tests that need a forge alone: one forge
// per test binary, started on first use, stopped by StopShared. Each test
// makes accounts and repositories with names of its own.
func SharedForge(t testing.TB) *Forge {
	t.Helper()
	if testing.Short() {
		t.Skip("starting a real Gitea forge is skipped in -short mode")
	}
	sharedForge.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		if sharedForge.dir, sharedForge.err = os.MkdirTemp("", "pool-forge-"); sharedForge.err != nil {
			return
		}
		var log bytes.Buffer
		if sharedForge.forge, sharedForge.err = StartForge(ctx, sharedForge.dir, &log); sharedForge.err != nil {
			sharedForge.err = fmt.Errorf("shared forge: %w\n%s", sharedForge.err, log.String())
		}
	})
	if sharedForge.err != nil {
		t.Fatal(sharedForge.err)
	}
	return sharedForge.forge
}

// StopShared stops the shared servers and forge, if any were started, and
// removes their data.
func StopShared() {
	if sharedForge.forge != nil {
		if err := sharedForge.forge.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "sandbox: stopping the shared forge: %v\n", err)
		}
	}
	if sharedForge.dir != "" {
		os.RemoveAll(sharedForge.dir)
	}
	if shared.servers != nil {
		if err := shared.servers.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "sandbox: stopping the shared servers: %v\n", err)
		}
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
}
