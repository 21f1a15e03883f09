package serve

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"pool/configs"
	"pool/internal/bwrap"
	"pool/internal/syncbuf"
)

// TestFixersAreRefusedWithoutASandbox: where no sandbox can be made (no
// bwrap here), fixers are refused at start with one log line saying why;
// where one can, fixers.enabled decides.
func TestFixersAreRefusedWithoutASandbox(t *testing.T) {
	cfg := configs.Default()
	if err := bwrap.Probe(context.Background()); err != nil {
		t.Skipf("no sandbox on this machine to compare with: %v", err)
	}
	var logs syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	if !fixersEnabled(context.Background(), cfg, log) || logs.String() != "" {
		t.Errorf("with a sandbox: fixers refused, log %q", logs.String())
	}
	cfg.Fixers.Enabled = false
	if fixersEnabled(context.Background(), cfg, log) {
		t.Error("fixers.enabled false: fixers on")
	}
	cfg.Fixers.Enabled = true
	saved := bwrap.Path
	bwrap.Path = "/nonexistent/bwrap"
	defer func() { bwrap.Path = saved }()
	if fixersEnabled(context.Background(), cfg, log) {
		t.Error("no bwrap: fixers on")
	}
	if lines := strings.Split(strings.TrimSpace(logs.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "fixers refused") ||
		!strings.Contains(lines[0], "/nonexistent/bwrap") {
		t.Errorf("log: %q, want one line saying fixers are refused and why", logs.String())
	}
}
