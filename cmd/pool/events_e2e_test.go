package main

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestWebhookAndAgentEventsDriveThePool: with the poll and status intervals
// set to ten minutes, only a forge webhook can make the pool notice a new
// PR, and only the agent server's event stream can tell it the session
// ended. The PR still gets reviewed and merged.
func TestWebhookAndAgentEventsDriveThePool(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 0, nil)
	bin := buildPool(t)
	addr := freeAddr(t)
	env := poolEnv(t, sb, t.TempDir(), "POOL_WEBHOOK_SECRET=s3cret-for-tests", "POOL_IDLE_EXIT=0", "POOL_LOG_LEVEL=debug")

	install := exec.CommandContext(ctx, bin, "hook", "install", "--hook-url", "http://"+addr+"/hook")
	install.Env = env
	var out bytes.Buffer
	install.Stdout, install.Stderr = &out, &out
	if err := install.Run(); err != nil {
		t.Fatalf("pool hook install: %v\n%s", err, out.String())
	}

	pool := startPool(t, ctx, bin, env, "--workers", "1", "--listen", addr,
		"--poll-interval", "10m", "--status-interval", "10m")
	eventually(t, ctx, "the first (empty) cycle", func() bool {
		return strings.Contains(pool.stderr.String(), "serving forge webhooks")
	}, pool)
	time.Sleep(time.Second) // let the first cycle finish: from here on only events drive the pool

	n, err := sb.AddPR(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, fmt.Sprintf("PR #%d merged", n), func() bool { return isMerged(t, ctx, sb, n) }, pool)
	eventually(t, ctx, "the session collected", func() bool { return sessionCount(t, ctx, sb) == 0 }, pool)
	_ = pool.cmd.Process.Signal(sigterm)
	pool.wait(t, ctx)

	logs := pool.stderr.String()
	if !strings.Contains(logs, "woken by the forge") {
		t.Errorf("no webhook wake-up in the log")
	}
	if !strings.Contains(pool.stdout.String(), "Approved and merged: 1") {
		t.Errorf("report:\n%s", pool.stdout.String())
	}
	if strings.Contains(logs, "s3cret-for-tests") || strings.Contains(logs, sb.PoolToken) {
		t.Errorf("a secret appears in the logs")
	}
}
