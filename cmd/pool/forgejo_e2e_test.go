package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"pool/internal/faultproxy"
	"pool/internal/sandbox"
)

// forgejoStoryReviewer approves every PR; on PRs 5 and 6 it first posts a
// commenting review, so their approval is the second review on the head.
func forgejoStoryReviewer(pr string) sandbox.Verdict {
	return sandbox.Verdict{Remark: pr == "5" || pr == "6", Event: "APPROVED"}
}

// TestSixPRsTwoWorkersOnForgejo is the main story told through the proxy's
// Forgejo mode: the pool's merge calls meet a storage-quota 413, a race lost
// to another merge (409 with Forgejo's error struct) and an already-merged
// 405 with an empty message; every PR list carries a null; review lists come
// back with a short first page; the webhook is registered without
// commit-status events. Every PR still merges, each head gets one reviewer session, and no
// PR gets a conflict comment.
func TestSixPRsTwoWorkersOnForgejo(t *testing.T) {
	parallelLong(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 6, sandbox.Reviewer(forgejoStoryReviewer))
	forge := startFaultProxy(t, faultproxy.Options{Upstream: sb.Forge.URL, Seed: faultSeed(t),
		// Every PR list carries a null: Forgejo lists a PR it fails to
		// convert so for as long as the fault lasts.
		Forgejo: &faultproxy.ForgejoOptions{QuotaRefusals: 1, MergeRaces: 1, MergedTwice: 1,
			NullShare: 1, ShortPages: true, NoStatusHook: true}})
	bin := buildPool(t)
	addr := freeAddr(t)
	env := append(poolEnv(t, sb, t.TempDir(), "POOL_WEBHOOK_SECRET=s3cret-for-tests"),
		"POOL_FORGEJO_URL="+forge.URL) // the last value of a variable wins

	install := exec.CommandContext(ctx, bin, "hook", "install", "--hook-url", "http://"+addr+"/hook")
	install.Env = env
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("pool hook install: %v\n%s", err, out)
	}
	p := startPool(t, ctx, bin, env, "--workers", "2", "--listen", addr)
	p.wait(t, ctx)
	stats := forge.Stats()
	logs := p.stderr.String()

	if !strings.Contains(p.stdout.String(), "Approved and merged: 6") {
		t.Errorf("report:\n%s", p.stdout.String())
	}
	for _, n := range sb.PRs {
		assertMerged(t, ctx, sb, n)
		for _, c := range prComments(t, ctx, sb, n) {
			if strings.Contains(c.Body, "Merge conflict detected") {
				t.Errorf("PR #%d got a conflict comment: %q", n, c.Body)
			}
		}
	}
	perHead := promptsPerHead(sb)
	for head, n := range perHead {
		if n != 1 {
			t.Errorf("PR@head %s got %d reviewer sessions, want 1", head, n)
		}
	}
	if len(perHead) != len(sb.PRs) {
		t.Errorf("%d PR heads got a session, want %d", len(perHead), len(sb.PRs))
	}
	for _, name := range []string{faultproxy.RewriteQuota, faultproxy.RewriteRace, faultproxy.RewriteMergedTwice,
		faultproxy.RewriteNull, faultproxy.RewriteShortPage, faultproxy.RewriteStatusHook} {
		if stats.Rewrites[name] == 0 {
			t.Errorf("the story never met Forgejo's %q", name)
		}
	}
	if t.Failed() {
		t.Logf("pool stderr:\n%s", logs)
	}
	var b strings.Builder
	for _, name := range sortedKeys(stats.Rewrites) {
		fmt.Fprintf(&b, "| %s | %d |\n", name, stats.Rewrites[name])
	}
	t.Logf("figure: Forgejo mode, %s: %d forge requests; rewrites:\n| rewrite | count |\n|---|---|\n%s", machine(), stats.Requests, b.String())
}
