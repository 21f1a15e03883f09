package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
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

// sharedStart is something the tests of one test binary share: started by
// the first test that needs it, in a temporary directory of its own, and
// stopped by StopShared.
type sharedStart[T any] struct {
	once    sync.Once
	dir     string
	value   T
	err     error
	stop    func() error
	started atomic.Bool // value is set and running: readable without once
}

// get starts the shared thing on first use with start, in a directory
// named after prefix, and fails t if it could not be started.
func (s *sharedStart[T]) get(t testing.TB, prefix string, start func(ctx context.Context, dir string, log io.Writer) (T, func() error, error)) T {
	t.Helper()
	s.once.Do(func() {
		// Building gitea the first time takes minutes; a cached binary starts in seconds.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		if s.dir, s.err = os.MkdirTemp("", prefix); s.err != nil {
			return
		}
		var log bytes.Buffer
		if s.value, s.stop, s.err = start(ctx, s.dir, &log); s.err != nil {
			s.err = fmt.Errorf("shared %s: %w\n%s", strings.TrimSuffix(prefix, "-"), s.err, log.String())
			return
		}
		s.started.Store(true)
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.value
}

// peek returns the shared thing if it has been started, without starting
// it or waiting for a start under way.
func (s *sharedStart[T]) peek() (T, bool) {
	if !s.started.Load() {
		var zero T
		return zero, false
	}
	return s.value, true
}

// close stops the shared thing, if it was started, and removes its data.
func (s *sharedStart[T]) close() {
	if s.stop != nil {
		if err := s.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "sandbox: stopping the shared %s: %v\n", s.dir, err)
		}
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

var (
	sharedServers sharedStart[*Servers]
	sharedForge   sharedStart[*Forge]
)

// SharedServers returns the forge, model and agent server that every test
// of this test binary shares, starting them on first use. Under -short it
// skips the test. The test binary's TestMain stops them with StopShared.
// The agent server runs as SeparateUser when the tests run as root
// (Servers.AgentUser): a pool on these servers must share its work trees
// with that user's group and open the way to its state directory.
//
// A test on shared servers isolates itself by the sandbox it joins
// (Servers.Join): accounts, repositories and a model route of its own. A
// test that stops, freezes or restarts a server starts servers of its own.
func SharedServers(t testing.TB) *Servers {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: needs the real forge and agent server (run without -short)")
	}
	return sharedServers.get(t, "pool-servers-", func(ctx context.Context, dir string, log io.Writer) (*Servers, func() error, error) {
		s, err := startServers(ctx, dir, "", log, true, sharedCheckWorkers)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Stop, nil
	})
}

// SharedForge is SharedServers for tests that need a forge alone: one forge
// per test binary, started on first use, stopped by StopShared. Each test
// makes accounts and repositories with names of its own.
func SharedForge(t testing.TB) *Forge {
	t.Helper()
	if testing.Short() {
		t.Skip("starting a real Gitea forge is skipped in -short mode")
	}
	return sharedForge.get(t, "pool-forge-", func(ctx context.Context, dir string, log io.Writer) (*Forge, func() error, error) {
		f, err := startForge(ctx, dir, log, sharedCheckWorkers)
		if err != nil {
			return nil, nil, err
		}
		return f, f.Stop, nil
	})
}

// probeTimeout bounds one reading of SharedServersLatency.
const probeTimeout = 5 * time.Second

// SharedServersLatency is how long the shared servers, if started, take to
// answer a cheap read: the slower of the agent server's session status and
// the forge's version, or probeTimeout if either fails. A server that is
// slow to answer these is saturated: the tests use it to admit no more
// work than the machine can carry. ok is false when no shared servers run.
func SharedServersLatency(ctx context.Context) (latency time.Duration, ok bool) {
	s, ok := sharedServers.peek()
	if !ok {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	start := time.Now()
	if err := s.Agent.get(ctx, s.Agent.opts.Password, "/session/status", nil); err != nil {
		return probeTimeout, true
	}
	agent := time.Since(start)
	start = time.Now()
	if status, err := s.Forge.Do(ctx, "", "GET", "/version", nil, nil); err != nil || status != 200 {
		return probeTimeout, true
	}
	return max(agent, time.Since(start)), true
}

// StopShared stops the shared servers and forge, if any were started, and
// removes their data.
func StopShared() {
	sharedForge.close()
	sharedServers.close()
}
