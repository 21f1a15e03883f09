package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"pool/internal/syncbuf"
	"pool/serve"
)

// TestAPRMergedBehindTheForgesBackIsMarkedMerged: a PR as a merge cut off
// mid-call leaves it (its head pushed to the base, the PR open, read
// mergeable, every merge answered "try again later") is found on the base in
// the pool's clone and marked merged, with no reviewer session.
func TestAPRMergedBehindTheForgesBackIsMarkedMerged(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 1, nil)
	n := sb.PRs[0]
	if err := sb.ApprovePRs(ctx, sb.PRs, 1); err != nil {
		t.Fatal(err)
	}
	commit, err := sb.Forge.MergeBehindTheForgesBack(ctx, sb.OwnerToken, sb.Owner, sb.Repo, "main", n)
	if err != nil {
		t.Fatal(err)
	}
	// The approval is the reviewer account's own, filed by no session: it
	// counts because the account is listed as a human's.
	cfg := loadConfig(t, sb, sb.Forge.URL, sb.Agent.URL, "--workers", "1", "--poll-interval", "1s", "--idle-exit", "3",
		"--human-reviewers", sb.ReviewerUser)
	var logs syncbuf.Buffer
	var marks markCounter
	watchProgress(ctx, "the pool's log", marks.count)
	rep, err := serve.Run(ctx, cfg, slog.New(slog.NewTextHandler(io.MultiWriter(&logs, &marks), nil)))
	if err != nil || ctx.Err() != nil {
		t.Fatalf("serve.Run: %v, %v\nlogs:\n%s", err, ctx.Err(), logs.String())
	}
	assertMerged(t, ctx, sb, n)
	if rep.Merged != 1 {
		t.Errorf("report: %d merged, want 1", rep.Merged)
	}
	if !strings.Contains(logs.String(), "commit="+commit) {
		t.Errorf("the log does not name the base's commit %s that holds the head", commit)
	}
	if p := sb.Model.Prompts(); len(p) != 0 {
		t.Errorf("%d reviewer sessions for an approved PR, want none", len(p))
	}
	if t.Failed() {
		t.Logf("logs:\n%s", logs.String())
	}
}
