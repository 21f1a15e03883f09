package main

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"time"
)

// skipLabel is the pool's default skip label: PRs carrying it are left to
// humans, so the bench's bulk PRs are quiet.
const skipLabel = "needs feedback"

// branchPlan names the branches of every figure.
type branchPlan struct {
	refill, polling, webhooks, quiet []string
}

func newBranchPlan(o options) branchPlan {
	return branchPlan{
		refill:   names("refill", o.samples+1),
		polling:  names("poll", o.samples),
		webhooks: names("hook", o.samples),
		quiet:    names("quiet", o.prs4),
	}
}

// timed are the branches of figures 1 and 2.
func (p branchPlan) timed() []string {
	var out []string
	for _, s := range [][]string{p.refill, p.polling, p.webhooks} {
		out = append(out, s...)
	}
	return out
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i+1)
	}
	return out
}

// seedStep is one timed seeding step.
type seedStep struct {
	count int
	took  time.Duration
}

// seedBranches pushes the branches the latency figures open PRs from, and
// with -seed api those of the quiet PRs too.
func (b *bench) seedBranches(ctx context.Context, plan branchPlan) (seedStep, error) {
	branches := plan.timed()
	if b.opts.seed == seedAPI {
		branches = append(branches, plan.quiet...)
	}
	b.progress("pushing %d branches with git (fast-import, then pushes of up to 250 refs)", len(branches))
	start := time.Now()
	if err := b.bulk.PushBranches(ctx, branches); err != nil {
		return seedStep{}, err
	}
	s := seedStep{count: len(branches), took: time.Since(start)}
	b.progress("%d branches pushed in %s", s.count, round(s.took))
	return s, nil
}

// seedQuietPRs opens a PR labelled with the skip label per name: by AGit
// pushes then labelling through the API, or (-seed api) through the
// create-PR API from the pushed branches, label included.
func (b *bench) seedQuietPRs(ctx context.Context, names []string) (seedStep, error) {
	if len(names) == 0 {
		return seedStep{}, nil
	}
	id, err := b.sb.LabelID(ctx, skipLabel)
	if err != nil {
		return seedStep{}, err
	}
	b.progress("opening %d PRs labelled %q (%s)", len(names), skipLabel, b.opts.seed)
	start := time.Now()
	if b.opts.seed == seedAPI {
		_, err = b.sb.CreatePRs(ctx, names, []int64{id}, b.opts.parallel)
	} else {
		err = b.openAGitPRs(ctx, names, id)
	}
	if err != nil {
		return seedStep{}, err
	}
	s := seedStep{count: len(names), took: time.Since(start)}
	b.progress("%d PRs opened in %s (%.0f ms each)", s.count, round(s.took), float64(s.took.Milliseconds())/float64(s.count))
	return s, nil
}

func (b *bench) openAGitPRs(ctx context.Context, names []string, label int64) error {
	numbers, err := b.bulk.OpenAGitPRs(ctx, names)
	if err != nil {
		return err
	}
	b.progress("  %d PRs pushed; labelling them, %d at a time", len(numbers), b.opts.parallel)
	return b.sb.LabelPRs(ctx, numbers, label, b.opts.parallel)
}

// openPR opens one PR from branch and returns its number and the moment
// the create call returned.
func (b *bench) openPR(ctx context.Context, branch string) (int, time.Time, error) {
	sb := b.sb
	n, _, err := sb.Forge.CreatePR(ctx, sb.OwnerToken, sb.Owner, sb.Repo, branch, "main", "Timed "+branch, "A timed PR.")
	return n, time.Now(), err
}

// checkMerged warns when a PR of figures 1 and 2 is still open: figure 3
// assumes every open PR is quiet.
func (b *bench) checkMerged(ctx context.Context) {
	sb := b.sb
	for _, n := range sb.PRs {
		var pr struct {
			State string `json:"state"`
		}
		path := fmt.Sprintf("/repos/%s/%s/pulls/%d", sb.Owner, sb.Repo, n)
		if _, err := sb.Forge.Do(ctx, sb.OwnerToken, http.MethodGet, path, nil, &pr); err != nil {
			b.progress("warning: reading PR #%d: %v", n, err)
			continue
		}
		if pr.State == "open" {
			b.progress("warning: PR #%d is still open; figure 3 will count its work", n)
		}
	}
}

// touchNewestPR waits two seconds, then comments on the newest PR, so that
// the repository's newest update is that one PR alone in its second.
func (b *bench) touchNewestPR(ctx context.Context) error {
	time.Sleep(2 * time.Second)
	sb := b.sb
	n := sb.PRs[len(sb.PRs)-1]
	path := fmt.Sprintf("/repos/%s/%s/issues/%d/comments", sb.Owner, sb.Repo, n)
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, http.MethodPost, path, map[string]any{"body": "A human remark."}, nil); err != nil {
		return fmt.Errorf("comment on PR #%d: %w", n, err)
	}
	return nil
}

// removeHooks deletes the repository's webhooks, so that later seeding does
// not queue deliveries nobody receives.
func (b *bench) removeHooks(ctx context.Context) error {
	sb := b.sb
	var hooks []struct {
		ID int64 `json:"id"`
	}
	path := fmt.Sprintf("/repos/%s/%s/hooks", sb.Owner, sb.Repo)
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, http.MethodGet, path, nil, &hooks); err != nil {
		return fmt.Errorf("list webhooks: %w", err)
	}
	for _, h := range hooks {
		if _, err := sb.Forge.Do(ctx, sb.OwnerToken, http.MethodDelete, fmt.Sprintf("%s/%d", path, h.ID), nil, nil); err != nil {
			return fmt.Errorf("delete webhook %d: %w", h.ID, err)
		}
	}
	return nil
}

// goBuild builds the pool binary; the bench runs from the module.
func goBuild(ctx context.Context, out string) ([]byte, error) {
	return exec.CommandContext(ctx, "go", "build", "-o", out, "pool/cmd/pool").CombinedOutput()
}
