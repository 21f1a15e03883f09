package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"pool/claims"
	"pool/forge"
	"pool/internal/sandbox"
)

// TestThreePoolsShareOneForge: three pools with two workers each, started
// at the same moment on twelve PRs, share one forge and one agent server.
// Every PR gets exactly one reviewer session for its head, and all merge.
func TestThreePoolsShareOneForge(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 12, nil)
	bin := buildPool(t)

	var pools []*poolProc
	for _, name := range []string{"pool-a", "pool-b", "pool-c"} {
		tmp := t.TempDir()
		env := poolEnv(t, sb, tmp, "POOL_INSTANCE_ID="+name, "POOL_IDLE_EXIT=4")
		pools = append(pools, startPool(t, ctx, bin, env, "--workers", "2"))
	}
	for _, p := range pools {
		p.wait(t, ctx)
	}

	for _, n := range sb.PRs {
		assertMerged(t, ctx, sb, n)
	}
	heads := promptsPerHead(sb)
	for key, count := range heads {
		if count != 1 {
			t.Errorf("PR@head %s got %d reviewer sessions, want exactly 1", key, count)
		}
	}
	if len(heads) != 12 {
		t.Errorf("%d PR heads reviewed, want 12", len(heads))
	}
	reviewed := 0
	for _, p := range pools {
		var n int
		if _, err := fmt.Sscanf(lineAfter(p.stdout.String(), "TOTAL_PRS_REVIEWED: "), "%d", &n); err == nil {
			reviewed += n
		}
	}
	if reviewed != 12 {
		t.Errorf("the pools reviewed %d PRs between them, want 12", reviewed)
	}
	assertNoSessions(t, ctx, sb)
}

func lineAfter(s, prefix string) string {
	_, rest, _ := strings.Cut(s, prefix)
	line, _, _ := strings.Cut(rest, "\n")
	return line
}

// TestUntrustedClaimDoesNotBlock: the claim sentence and marker typed by an
// account the pool does not trust never delay a review.
func TestUntrustedClaimDoesNotBlock(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 1, nil)
	n := sb.PRs[0]
	head := getPR(t, ctx, sb, n).Head.Sha
	fake := claims.Body(claims.Claim{Instance: "squatter", SHA: head, At: time.Now().UTC()})
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "POST", fmt.Sprintf("/repos/%s/%s/issues/%d/comments", sb.Owner, sb.Repo, n),
		map[string]string{"body": fake}, nil); err != nil {
		t.Fatal(err)
	}
	bin := buildPool(t)
	start := time.Now()
	// A 30-minute claim TTL: a pool that honoured the fake claim would not finish within the test.
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir()), "--workers", "1", "--claim-ttl", "30m")
	pool.wait(t, ctx)
	assertMerged(t, ctx, sb, n)
	t.Logf("reviewed and merged %s after start despite the untrusted claim", time.Since(start).Round(time.Second))
}

// TestStaleClaimIsTakenOver: a claim left by a pool that died (same trusted
// account, another instance) blocks the PR until it goes stale, then the
// pool takes it over and says so in its own claim's marker.
func TestStaleClaimIsTakenOver(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 1, nil)
	n := sb.PRs[0]
	head := getPR(t, ctx, sb, n).Head.Sha
	dead := claims.Body(claims.Claim{Instance: "dead-pool", SHA: head, At: time.Now().UTC()})
	if _, err := sb.Forge.Do(ctx, sb.PoolToken, "POST", fmt.Sprintf("/repos/%s/%s/issues/%d/comments", sb.Owner, sb.Repo, n),
		map[string]string{"body": dead}, nil); err != nil {
		t.Fatal(err)
	}
	bin := buildPool(t)
	tmp := t.TempDir()
	pool := startPool(t, ctx, bin, poolEnv(t, sb, tmp, "POOL_IDLE_EXIT=0"), "--workers", "1", "--claim-ttl", "6s")
	eventually(t, ctx, "the merge", func() bool { return isMerged(t, ctx, sb, n) }, pool)
	eventually(t, ctx, "the session collected", func() bool { return sessionCount(t, ctx, sb) == 0 }, pool)
	_ = pool.cmd.Process.Signal(sigterm)
	pool.wait(t, ctx)

	var takeover bool
	for _, c := range prComments(t, ctx, sb, n) {
		if cl, ok := claims.Parse(commentOf(c)); ok && cl.Instance != "dead-pool" {
			takeover = takeover || cl.Takeover == "dead-pool"
		}
	}
	if !takeover {
		t.Errorf("no claim marks the takeover of dead-pool's claim")
	}
	if !strings.Contains(pool.stdout.String(), "Approved and merged: 1") {
		t.Errorf("report:\n%s", pool.stdout.String())
	}
	assertNoClone(t, sb, tmp)
}

const sigterm = syscall.SIGTERM

func commentOf(c apiComment) forge.Comment {
	return forge.Comment{ID: c.ID, Author: c.User.Login, Body: c.Body}
}

func sessionCount(t *testing.T, ctx context.Context, sb *sandbox.Sandbox) int {
	t.Helper()
	return len(ownSessions(t, ctx, sb))
}
