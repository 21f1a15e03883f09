package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"pool/internal/sandbox"
)

// The train mode's stand-in CI: it watches the forge (the branches and the
// open PRs' heads, every ciPoll) and tests each commit it has not seen
// once, wherever it appears: it reports `pending` at once and, after a fixed
// delay, `success`, or `failure` when the commit holds a change chosen to
// fail. The base branch's own commits are not tested: no merge waits on
// them.

// benchCIContext is the required check the stand-in CI reports.
const benchCIContext = "bench/ci"

// ciPoll is how often the stand-in CI reads the branches and open PRs.
const ciPoll = 500 * time.Millisecond

// failRule makes the CI fail every commit whose tree holds file, but for
// the change's own head as the bench pushed it: the PR passes on its own
// and fails once combined with anything else (a semantic conflict).
type failRule struct {
	file, ownHead string
}

// ciRun is one commit tested.
type ciRun struct {
	sha        string
	start, end time.Time // end is zero while the run is going
	failed     bool
}

// ciVerdict is the state the CI reports for sha: failure when a rule's file
// is in its tree (holds answers that) and sha is not that rule's own head.
func ciVerdict(sha string, rules []failRule, holds func(file string) bool) string {
	for _, r := range rules {
		if sha != r.ownHead && holds(r.file) {
			return "failure"
		}
	}
	return "success"
}

// unseen returns the commits of shas not in seen, each once, in order,
// leaving out base and empty ones.
func unseen(shas []string, seen map[string]bool, base string) []string {
	var out []string
	fresh := map[string]bool{}
	for _, s := range shas {
		if s == "" || s == base || seen[s] || fresh[s] {
			continue
		}
		fresh[s] = true
		out = append(out, s)
	}
	return out
}

// standInCI is the CI. Its forge requests go straight to the forge, not
// through the pool's counting proxy.
type standInCI struct {
	sb    *sandbox.Sandbox
	delay time.Duration
	warn  func(format string, args ...any)

	mu     sync.Mutex
	seen   map[string]bool // guarded by mu: commits tested or being tested
	runs   []ciRun         // guarded by mu, in the order they started
	rules  []failRule      // guarded by mu
	paused bool            // guarded by mu: while the bench pushes a failing change
}

func newStandInCI(sb *sandbox.Sandbox, delay time.Duration, warn func(string, ...any)) *standInCI {
	return &standInCI{sb: sb, delay: delay, warn: warn, seen: map[string]bool{}}
}

// pause stops the CI from starting runs until resume: the bench pauses it
// while it pushes a change chosen to fail, whose own head it learns only
// after the push.
func (c *standInCI) pause() {
	c.mu.Lock()
	c.paused = true
	c.mu.Unlock()
}

// resume adds rule (if its file is set) and lets runs start again.
func (c *standInCI) resume(rule failRule) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rule.file != "" {
		c.rules = append(c.rules, rule)
	}
	c.paused = false
}

// watch tests new commits until ctx ends.
func (c *standInCI) watch(ctx context.Context) {
	for ctx.Err() == nil {
		shas, base, err := c.heads(ctx)
		if err != nil && ctx.Err() == nil {
			c.warn("stand-in CI: %v", err)
		}
		c.mu.Lock()
		var fresh []string
		if !c.paused {
			fresh = unseen(shas, c.seen, base)
			for _, s := range fresh {
				c.seen[s] = true
			}
		}
		c.mu.Unlock()
		for _, s := range fresh {
			go c.test(ctx, s)
		}
		select {
		case <-ctx.Done():
		case <-time.After(ciPoll):
		}
	}
}

// heads lists the commits at the tip of every branch and every open PR's
// head, and the base branch's tip.
func (c *standInCI) heads(ctx context.Context) (shas []string, base string, err error) {
	sb := c.sb
	for page := 1; ; page++ {
		var branches []struct {
			Name   string `json:"name"`
			Commit struct {
				ID string `json:"id"`
			} `json:"commit"`
		}
		path := fmt.Sprintf("/repos/%s/%s/branches?limit=50&page=%d", sb.Owner, sb.Repo, page)
		if _, err := sb.Forge.Do(ctx, sb.OwnerToken, http.MethodGet, path, nil, &branches); err != nil {
			return shas, base, fmt.Errorf("list branches: %w", err)
		}
		for _, br := range branches {
			if br.Name == "main" {
				base = br.Commit.ID
				continue
			}
			shas = append(shas, br.Commit.ID)
		}
		if len(branches) < 50 {
			break
		}
	}
	var open []benchPR
	path := fmt.Sprintf("/repos/%s/%s/pulls?state=open&limit=50", sb.Owner, sb.Repo)
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, http.MethodGet, path, nil, &open); err != nil {
		return shas, base, fmt.Errorf("list open PRs: %w", err)
	}
	for _, pr := range open {
		shas = append(shas, pr.Head.SHA)
	}
	return shas, base, nil
}

// test runs the CI on sha: pending now, the verdict after the delay.
func (c *standInCI) test(ctx context.Context, sha string) {
	c.mu.Lock()
	i := len(c.runs)
	c.runs = append(c.runs, ciRun{sha: sha, start: time.Now()})
	rules := append([]failRule(nil), c.rules...)
	c.mu.Unlock()
	c.post(ctx, sha, "pending", "running")
	state := ciVerdict(sha, rules, func(file string) bool { return c.holds(ctx, sha, file) })
	c.mu.Lock()
	c.runs[i].failed = state == "failure"
	c.mu.Unlock()
	select {
	case <-ctx.Done():
		return
	case <-time.After(c.delay):
	}
	c.post(ctx, sha, state, "finished")
	c.mu.Lock()
	c.runs[i].end = time.Now()
	c.mu.Unlock()
}

func (c *standInCI) post(ctx context.Context, sha, state, description string) {
	sb := c.sb
	if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, sha, benchCIContext, state, "", description); err != nil && ctx.Err() == nil {
		c.warn("stand-in CI: %v", err)
	}
}

// holds reports whether sha's tree has file; a read that keeps failing
// (not a 404) counts as held, so the CI fails rather than passes blind.
func (c *standInCI) holds(ctx context.Context, sha, file string) bool {
	sb := c.sb
	path := fmt.Sprintf("/repos/%s/%s/contents/%s?ref=%s", sb.Owner, sb.Repo, file, url.QueryEscape(sha))
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var status int
		status, err = sb.Forge.Do(ctx, sb.OwnerToken, http.MethodGet, path, nil, nil)
		switch {
		case err == nil:
			return true
		case status == http.StatusNotFound:
			return false
		}
	}
	c.warn("stand-in CI: read %s at %s: %v", file, sha, err)
	return true
}

// awaitDone waits until every commit of shas has a finished run.
func (c *standInCI) awaitDone(ctx context.Context, shas []string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for !c.finished(shas) {
		if time.Now().After(deadline) {
			return fmt.Errorf("stand-in CI: %d heads not tested after %s", len(shas), limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

func (c *standInCI) finished(shas []string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	done := map[string]bool{}
	for _, r := range c.runs {
		if !r.end.IsZero() {
			done[r.sha] = true
		}
	}
	for _, s := range shas {
		if !done[s] {
			return false
		}
	}
	return true
}

// runsBetween counts the runs started in [from, to], and those of them
// that failed.
func (c *standInCI) runsBetween(from, to time.Time) (runs, failed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return countRuns(c.runs, from, to)
}

func countRuns(all []ciRun, from, to time.Time) (runs, failed int) {
	for _, r := range all {
		if r.start.Before(from) || r.start.After(to) {
			continue
		}
		runs++
		if r.failed {
			failed++
		}
	}
	return runs, failed
}
