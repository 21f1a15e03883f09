package main

import (
	"strings"
	"testing"

	"pool/internal/faultproxy"
)

// TestQuotaRefusalIsABlockOnForgejo: through the fault proxy's Forgejo mode,
// the first four merge calls of an approved, green PR are answered 413,
// storage quota exceeded, as Forgejo answers them. The pool posts one hold
// note naming the quota, backs off longer after each refusal (no
// diagnostic comments), and merges once the forge takes the merge.
func TestQuotaRefusalIsABlockOnForgejo(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 1, nil)
	const refusals = 4
	forge := startFaultProxy(t, faultproxy.Options{Upstream: sb.Forge.URL, Seed: faultSeed(t),
		Forgejo: &faultproxy.ForgejoOptions{QuotaRefusals: refusals}})
	bin := buildPool(t)
	env := append(poolEnv(t, sb, t.TempDir(), "POOL_IDLE_EXIT=0"), "POOL_FORGEJO_URL="+forge.URL)
	pool := startPool(t, ctx, bin, env, "--workers", "1")
	n := sb.PRs[0]
	eventually(t, ctx, "the merge", func() bool { return isMerged(t, ctx, sb, n) }, pool)
	_ = pool.cmd.Process.Signal(sigterm)
	pool.wait(t, ctx)

	notes, diagnostics := 0, 0
	for _, c := range prComments(t, ctx, sb, n) {
		switch {
		case strings.HasPrefix(c.Body, "Merging is on hold") && strings.Contains(c.Body, "quota"):
			notes++
		case strings.HasPrefix(c.Body, "Merge retry"):
			diagnostics++
		}
	}
	if notes != 1 || diagnostics != 0 {
		t.Errorf("hold notes naming the quota: %d, diagnostic comments: %d; want 1 and 0", notes, diagnostics)
	}
	perPR, outcomes := mergeCalls(pool.stderr.String())
	if perPR[n] != refusals+1 || outcomes["quota"] != refusals {
		t.Errorf("merge calls %d with outcomes %v; want %d, of which %d refused for the quota", perPR[n], outcomes, refusals+1, refusals)
	}
	if got := forge.Stats().Rewrites[faultproxy.RewriteQuota]; got != refusals {
		t.Errorf("the proxy refused %d merges for the quota, want %d", got, refusals)
	}
	if t.Failed() {
		t.Logf("pool stderr:\n%s", tailOf(pool.stderr.String(), 30000))
	}
}
