package main

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"pool/internal/faultproxy"
	"pool/internal/sandbox"
)

// trainCI is a stand-in CI for the pool's train branches: once a second it
// lists the repository's branches and reports on the commit of each
// pool-train/* branch (every branch, with heads) not reported yet: failure
// when its tree holds every one of the files bad (none: never), else
// success, once it has seen the commit for delay. It returns the commits
// it reported, each with whether it passed.
func trainCI(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, heads bool, delay time.Duration, bad ...string) func() map[string]bool {
	t.Helper()
	var mu sync.Mutex
	reported := map[string]bool{}
	firstSeen := map[string]time.Time{}
	go func() {
		for ctx.Err() == nil {
			var branches []struct {
				Name   string `json:"name"`
				Commit struct {
					ID string `json:"id"`
				} `json:"commit"`
			}
			_, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/branches?limit=50", sb.Owner, sb.Repo), nil, &branches)
			for _, b := range branches {
				mu.Lock()
				_, seen := reported[b.Commit.ID]
				mu.Unlock()
				if err != nil || seen || (!heads && !strings.HasPrefix(b.Name, "pool-train/")) || b.Name == "main" {
					continue
				}
				if _, ok := firstSeen[b.Commit.ID]; !ok {
					firstSeen[b.Commit.ID] = time.Now()
				}
				if time.Since(firstSeen[b.Commit.ID]) < delay {
					continue
				}
				state := "success"
				if len(bad) > 0 && holdsAll(ctx, sb, b.Commit.ID, bad) {
					state = "failure"
				}
				if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, b.Commit.ID, sandbox.CIContext, state, "", state); err == nil {
					mu.Lock()
					reported[b.Commit.ID] = state == "success"
					mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return func() map[string]bool {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]bool{}
		for k, v := range reported {
			out[k] = v
		}
		return out
	}
}

// holdsAll reports whether the tree of commit sha holds every file.
func holdsAll(ctx context.Context, sb *sandbox.Sandbox, sha string, files []string) bool {
	for _, f := range files {
		status, _ := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/contents/%s?ref=%s", sb.Owner, sb.Repo, f, sha), nil, nil)
		if status != 200 {
			return false
		}
	}
	return true
}

// gitCommit is a commit as the forge's git API shows it.
type gitCommit struct {
	SHA    string `json:"sha"`
	Commit struct {
		Tree struct {
			SHA string `json:"sha"`
		} `json:"tree"`
	} `json:"commit"`
	Parents []struct {
		SHA string `json:"sha"`
	} `json:"parents"`
}

func readCommit(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, ref string) gitCommit {
	t.Helper()
	var c gitCommit
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/git/commits/%s", sb.Owner, sb.Repo, ref), nil, &c); err != nil {
		t.Fatalf("read commit %s: %v", ref, err)
	}
	return c
}

// trainSandbox starts a sandbox of n PRs, reviewed by script (nil: the
// sandbox's approver), on a main that blocks outdated branches and
// requires the CI's check, with a stand-in CI for the PRs' heads and one
// for the pool's train branches (trainCI, no delay), both stopped at the
// test's end. It returns the train CI's results.
func trainSandbox(t *testing.T, ctx context.Context, n int, script sandbox.Script) (*sandbox.Sandbox, func() map[string]bool) {
	t.Helper()
	sb := startSandbox(t, ctx, n, script)
	protectOutdated(t, ctx, sb, nil)
	ciCtx, stopCI := context.WithCancel(ctx)
	t.Cleanup(stopCI)
	standInCI(t, ciCtx, sb, sb.PRs)
	return sb, trainCI(t, ciCtx, sb, false, 0)
}

// TestATrainLandsThreePRsOnTheForge: three approved PRs on a branch that blocks
// outdated branches and requires the CI's check, with merge.train always.
// The pool forms three cars on its own train branches, where the stand-in
// CI tests them; each PR is merged fast-forward at its car, which the CI
// tested (the landed tree is the tested tree: the base's commit is the car
// itself), with its approval carried over (three reviewer sessions), no
// update by the forge, and no train branch left.
func TestATrainLandsThreePRsOnTheForge(t *testing.T) {
	parallelLong(t)
	trainLandsThree(t, nil, false, func(sb *sandbox.Sandbox) string { return sb.Forge.URL })
}

// TestATrainLandsWithAWriteTokenOnTheForge: the same with the pool's
// account a write collaborator only, whose token cannot read the branch
// protection whole (nor whether it dismisses stale approvals): the forge
// keeps each approval over the push of its car to the PR's branch (not
// stale, not dismissed, official), so the approvals carry over, three
// reviewer sessions (issue 36).
func TestATrainLandsWithAWriteTokenOnTheForge(t *testing.T) {
	parallelLong(t)
	trainLandsThree(t, nil, true, func(sb *sandbox.Sandbox) string { return sb.Forge.URL })
}

// TestATrainLandsThreePRsOnForgejo is the same train through the fault
// proxy's Forgejo mode: a car's merge that lost a race to another merge of
// the PR (409, Forgejo's error struct), one sent twice and answered 405
// with an empty message (Forgejo's answer for a merged PR: the pool took
// it for a refusal, left the car landed untold and noted the merged PR on
// hold, until it re-read the PR first), a null in every PR list, review
// and timeline lists paged as Forgejo pages them (PR 2's reviewer first
// posts a commenting review: a short page mid-list).
func TestATrainLandsThreePRsOnForgejo(t *testing.T) {
	parallelLong(t)
	var proxy *faultproxy.Proxy
	remark := sandbox.Reviewer(func(pr string) sandbox.Verdict { return sandbox.Verdict{Remark: pr == "2", Event: "APPROVED"} })
	trainLandsThree(t, remark, false, func(sb *sandbox.Sandbox) string {
		proxy = startFaultProxy(t, faultproxy.Options{Upstream: sb.Forge.URL, Seed: faultSeed(t),
			Forgejo: &faultproxy.ForgejoOptions{MergeRaces: 1, MergedTwice: 1, NullShare: 1, ShortPages: true}})
		return proxy.URL
	})
	stats := proxy.Stats()
	for _, name := range []string{faultproxy.RewriteRace, faultproxy.RewriteMergedTwice, faultproxy.RewriteNull, faultproxy.RewriteShortPage} {
		if stats.Rewrites[name] == 0 {
			t.Errorf("the train never met Forgejo's %q", name)
		}
	}
	t.Logf("figure: a train of three through the Forgejo mode: %d forge requests; rewrites %v", stats.Requests, stats.Rewrites)
}

// trainLandsThree runs TestATrainLandsThreePRsOnTheForge with the
// sandbox's reviewer script and the pool's forge at through's URL for the
// sandbox (the forge itself, or a proxy in front of it); the pool's
// account a write collaborator only when writeOnly.
func trainLandsThree(t *testing.T, script sandbox.Script, writeOnly bool, through func(*sandbox.Sandbox) string) {
	ctx := testContext(t)
	sb, tested := trainSandbox(t, ctx, 3, script)
	if writeOnly {
		if err := sb.Forge.AddCollaborator(ctx, sb.OwnerToken, sb.Owner, sb.Repo, sb.PoolUser, "write"); err != nil {
			t.Fatal(err)
		}
	}
	forge := countRequests(t, through(sb))
	bin := buildPool(t)
	start := time.Now()
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir(), "POOL_FORGEJO_URL="+forge.url, "POOL_IDLE_EXIT=5",
		"POOL_MERGE_TRAIN=always", "POOL_MERGE_TRAIN_SIZE=8"), "--workers", "2")
	pool.wait(t, ctx)
	took := time.Since(start)
	cars := tested()
	for _, n := range sb.PRs {
		var pr struct {
			Merged         bool   `json:"merged"`
			MergeCommitSHA string `json:"merge_commit_sha"`
			Head           struct {
				Sha string `json:"sha"`
			} `json:"head"`
		}
		if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/pulls/%d", sb.Owner, sb.Repo, n), nil, &pr); err != nil {
			t.Fatal(err)
		}
		if !pr.Merged || !cars[pr.Head.Sha] {
			t.Errorf("#%d: merged %v at %s; want merged at a car the CI tested (%d cars tested)", n, pr.Merged, pr.Head.Sha, len(cars))
			continue
		}
		landed, car := readCommit(t, ctx, sb, pr.MergeCommitSHA), readCommit(t, ctx, sb, pr.Head.Sha)
		if landed.Commit.Tree.SHA != car.Commit.Tree.SHA {
			t.Errorf("#%d: landed tree %s (commit %s), tested tree %s (car %s)", n, landed.Commit.Tree.SHA, landed.SHA, car.Commit.Tree.SHA, car.SHA)
		}
		if len(car.Parents) != 2 {
			t.Errorf("#%d: its car %s has %d parents, want 2 (the base tip, the approved head)", n, car.SHA, len(car.Parents))
		}
	}
	for _, n := range sb.PRs {
		for _, c := range prComments(t, ctx, sb, n) {
			if strings.Contains(c.Body, "Merging is on hold") {
				t.Errorf("#%d: a hold note, though it merged: %s", n, c.Body)
			}
		}
		if refs := commitRefs(t, ctx, sb, n); len(refs) > 0 {
			t.Errorf("#%d: %d timeline entries of commits that reference it (%v), want none: a car's message names no PR the forge can link", n, len(refs), refs)
		}
	}
	sessions := len(sb.Model.Prompts())
	if sessions != 3 {
		t.Errorf("%d reviewer sessions, want 3: the approvals carry over to the cars", sessions)
	}
	if updates := forge.countPOST("/update?style=merge"); updates != 0 {
		t.Errorf("%d updates by the forge, want none: the cars bring the PRs up to date", updates)
	}
	if n := strings.Count(pool.stderr.String(), "car landed; the base's tree is the car's"); n != 3 {
		t.Errorf("the pool compared %d landed trees equal, want 3", n)
	}
	var branches []struct {
		Name string `json:"name"`
	}
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/branches?limit=50", sb.Owner, sb.Repo), nil, &branches); err != nil {
		t.Fatal(err)
	}
	for _, b := range branches {
		if strings.HasPrefix(b.Name, "pool-train/") {
			t.Errorf("train branch %s left", b.Name)
		}
	}
	if writeOnly && !strings.Contains(pool.stderr.String(), "cannot read the whole branch protection") {
		t.Errorf("the pool did not say at start that its token cannot read the whole rule")
	}
	t.Logf("figure: 3 PRs on one train, 2 workers, write-only token %v: %d reviewer sessions, %d cars tested, %d merge calls, %s (pool start to exit, 5 idle cycles)",
		writeOnly, sessions, len(cars), forge.countPOST("/merge"), took.Round(time.Second))
	if t.Failed() {
		t.Logf("pool stderr:\n%s", tailOf(pool.stderr.String(), 30000))
	}
}

// TestAFailingCarIsEjectedOnTheForge: PRs A and B each pass alone, but
// together they fail the CI (a stand-in CI for every branch and car that
// fails every commit holding both of their files). Whichever of them rides
// behind the other has its car fail: it leaves the train with one note
// naming the check and is neither merged nor updated (its update would
// hold both, the tree its car tested); the other two land at cars the CI
// passed, and no commit of the base holds both files.
func TestAFailingCarIsEjectedOnTheForge(t *testing.T) {
	parallelLong(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 3, nil)
	protectOutdated(t, ctx, sb, nil)
	fileOf := map[int]string{}
	for _, n := range sb.PRs[:2] {
		var files []struct {
			Filename string `json:"filename"`
		}
		if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/pulls/%d/files", sb.Owner, sb.Repo, n), nil, &files); err != nil || len(files) == 0 {
			t.Fatalf("the files of #%d: %v, %v", n, files, err)
		}
		fileOf[n] = files[0].Filename
	}
	ciCtx, stopCI := context.WithCancel(ctx)
	defer stopCI()
	tested := trainCI(t, ciCtx, sb, true, 0, fileOf[sb.PRs[0]], fileOf[sb.PRs[1]])
	headOf := map[int]string{}
	for _, n := range sb.PRs[:2] {
		headOf[n] = getPR(t, ctx, sb, n).Head.Sha
	}
	bin := buildPool(t)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir(), "POOL_IDLE_EXIT=0", "POOL_MERGE_TRAIN=always",
		"POOL_FIXERS_ENABLED=false"), "--workers", "2")
	// The ejected PR waits for a new head, which keeps the pool from its
	// idle exit: it stops 20 s (twenty polls) after two PRs merged and the
	// third was ejected, time enough for an update one by one to show.
	var settled time.Time
	eventually(t, ctx, "two PRs merged, the third ejected, and 20 s more", func() bool {
		merged := 0
		for _, n := range sb.PRs {
			if isMerged(t, ctx, sb, n) {
				merged++
			}
		}
		if settled.IsZero() && merged == 2 && strings.Contains(pool.stderr.String(), "action=eject") {
			settled = time.Now()
		}
		return !settled.IsZero() && time.Since(settled) > 20*time.Second
	}, pool)
	if err := pool.cmd.Process.Signal(sigterm); err != nil {
		t.Fatal(err)
	}
	pool.wait(t, ctx)
	cars := tested()
	var unmerged []int
	for _, n := range sb.PRs {
		pr := getPR(t, ctx, sb, n)
		switch {
		case !pr.Merged:
			unmerged = append(unmerged, n)
		case !cars[pr.Head.Sha]:
			t.Errorf("#%d merged at %s, want a car the CI passed", n, pr.Head.Sha)
		}
	}
	if len(unmerged) != 1 || (unmerged[0] != sb.PRs[0] && unmerged[0] != sb.PRs[1]) {
		t.Fatalf("PRs not merged: %v, want one of #%d and #%d", unmerged, sb.PRs[0], sb.PRs[1])
	}
	bad := unmerged[0]
	var comments []struct {
		Body string `json:"body"`
	}
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/issues/%d/comments", sb.Owner, sb.Repo, bad), nil, &comments); err != nil {
		t.Fatal(err)
	}
	notes := 0
	for _, c := range comments {
		if strings.Contains(c.Body, "left the merge train") {
			notes++
			if !strings.Contains(c.Body, sandbox.CIContext) {
				t.Errorf("the ejection note does not name the check %s:\n%s", sandbox.CIContext, c.Body)
			}
		}
	}
	if notes != 1 {
		t.Errorf("%d ejection notes on #%d, want 1", notes, bad)
	}
	// Brought up to date, it would be the tree its car tested: the pool
	// leaves it at its head, for a new push.
	if head := getPR(t, ctx, sb, bad).Head.Sha; head != headOf[bad] {
		t.Errorf("#%d is at %s, want its approved head %s: updated after its ejection", bad, head, headOf[bad])
	}
	if holdsAll(ctx, sb, "main", []string{fileOf[sb.PRs[0]], fileOf[sb.PRs[1]]}) {
		t.Errorf("the base holds both PRs' files: the failing combination landed")
	}
	failed := 0
	for _, passed := range cars {
		if !passed {
			failed++
		}
	}
	t.Logf("figure: 3 PRs, two failing together: %d commits tested (PR heads and cars), %d failed, %d reviewer sessions", len(cars), failed, len(sb.Model.Prompts()))
	if t.Failed() {
		t.Logf("pool stderr:\n%s", tailOf(pool.stderr.String(), 30000))
	}
}

// TestAnAuthorsPushDuringATrainIsReviewedOnTheForge: while the first PR's
// car waits for its CI (8 s), its author pushes a commit to the PR's
// branch. The push stands (the pool's landing is leased on the approved
// head), no approval carries to it (a fourth reviewer session reviews it),
// and the PR merges with the author's commit in the base.
func TestAnAuthorsPushDuringATrainIsReviewedOnTheForge(t *testing.T) {
	parallelLong(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 3, nil)
	protectOutdated(t, ctx, sb, nil)
	ciCtx, stopCI := context.WithCancel(ctx)
	defer stopCI()
	standInCI(t, ciCtx, sb, sb.PRs)
	trainCI(t, ciCtx, sb, false, 8*time.Second)
	bin := buildPool(t)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir(), "POOL_IDLE_EXIT=5", "POOL_MERGE_TRAIN=always"), "--workers", "2")
	var pushedTo int
	var pushed string
	eventually(t, ctx, "a car formed", func() bool {
		var branches []struct {
			Name string `json:"name"`
		}
		sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/branches?limit=50", sb.Owner, sb.Repo), nil, &branches)
		for _, b := range branches {
			if _, err := fmt.Sscanf(b.Name, "pool-train/main/%d", &pushedTo); err == nil {
				return true
			}
		}
		return false
	}, pool)
	sha, err := sb.Forge.PushFile(ctx, sb.OwnerToken, sb.Owner, sb.Repo, getPR(t, ctx, sb, pushedTo).Head.Ref,
		"author-during-train.txt", "pushed while the PR rode a train\n", "a push during the train")
	if err != nil {
		t.Fatal(err)
	}
	pushed = sha
	pool.wait(t, ctx)
	for _, n := range sb.PRs {
		assertMerged(t, ctx, sb, n)
	}
	if !holdsAll(ctx, sb, "main", []string{"author-during-train.txt"}) {
		t.Errorf("the author's push %s to #%d is not in the base", pushed, pushedTo)
	}
	if sessions := len(sb.Model.Prompts()); sessions != 4 {
		t.Errorf("%d reviewer sessions, want 4: the author's push is reviewed, no approval carries to it", sessions)
	}
	reviewed := false
	for _, p := range sb.Model.Prompts() {
		if n, _, head, ok := sandbox.PromptTarget(p); ok && n == fmt.Sprint(pushedTo) && head == pushed {
			reviewed = true
		}
	}
	if !reviewed {
		t.Errorf("no reviewer session on #%d at the author's push %s", pushedTo, pushed)
	}
	if t.Failed() {
		t.Logf("pool stderr:\n%s", tailOf(pool.stderr.String(), 30000))
	}
}

// TestNoTrainWhereTheRepositoryForbidsFastForwardOnTheForge: the
// repository does not allow fast-forward-only merges (PATCH
// allow_fast_forward_only_merge false), with which cars land. With
// merge.train always, the pool reads the setting at start and says in one
// line that it merges one by one and why; it forms no car (the train CI
// tests none), and both PRs merge one by one.
func TestNoTrainWhereTheRepositoryForbidsFastForwardOnTheForge(t *testing.T) {
	parallelLong(t)
	ctx := testContext(t)
	sb, tested := trainSandbox(t, ctx, 2, nil)
	repo := fmt.Sprintf("/repos/%s/%s", sb.Owner, sb.Repo)
	var settings struct {
		FastForwardOnly *bool `json:"allow_fast_forward_only_merge"`
	}
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "PATCH", repo, map[string]any{"allow_fast_forward_only_merge": false}, &settings); err != nil {
		t.Fatal(err)
	}
	if settings.FastForwardOnly == nil || *settings.FastForwardOnly {
		t.Fatalf("the forge's repository after the PATCH: allow_fast_forward_only_merge %v, want false", settings.FastForwardOnly)
	}
	bin := buildPool(t)
	pool := startPool(t, ctx, bin, poolEnv(t, sb, t.TempDir(), "POOL_IDLE_EXIT=5", "POOL_MERGE_TRAIN=always"), "--workers", "2")
	pool.wait(t, ctx)
	for _, n := range sb.PRs {
		assertMerged(t, ctx, sb, n)
	}
	if cars := tested(); len(cars) != 0 {
		t.Errorf("%d cars tested, want none", len(cars))
	}
	const said = "merge.train is on, but the pool merges one by one: the repository does not allow fast-forward-only merges, which land a train's cars (its merge settings)"
	if n := strings.Count(pool.stderr.String(), "merge.train is on, but the pool merges one by one"); n != 1 || !strings.Contains(pool.stderr.String(), said) {
		t.Errorf("%d lines saying the pool merges one by one, want 1: %q", n, said)
	}
	if t.Failed() {
		t.Logf("pool stderr:\n%s", tailOf(pool.stderr.String(), 30000))
	}
}

// carMaker is the pool instance a car's commit message names ("" for a
// commit that is no car of a named pool).
var carMaker = regexp.MustCompile(`Made by pool instance (\S+)\.`)

// watchCars lists the repository's branches every half second until the
// test ends and records, for each listing, the pool instances whose cars
// are on train branches of main. It returns the listings that showed cars
// of more than one pool, the instances seen and the listings made.
func watchCars(t *testing.T, ctx context.Context, sb *sandbox.Sandbox) func() (mixed []string, makers map[string]int, listings int) {
	t.Helper()
	var mu sync.Mutex
	makers := map[string]int{}
	var mixed []string
	listings := 0
	go func() {
		for ctx.Err() == nil {
			var branches []struct {
				Name   string `json:"name"`
				Commit struct {
					ID      string `json:"id"`
					Message string `json:"message"`
				} `json:"commit"`
			}
			if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/branches?limit=50", sb.Owner, sb.Repo), nil, &branches); err == nil {
				now := map[string][]string{}
				for _, b := range branches {
					if !strings.HasPrefix(b.Name, "pool-train/main/") {
						continue
					}
					maker := ""
					if m := carMaker.FindStringSubmatch(b.Commit.Message); m != nil {
						maker = m[1]
					}
					now[maker] = append(now[maker], b.Name)
				}
				mu.Lock()
				listings++
				for maker := range now {
					makers[maker]++
				}
				if len(now) > 1 {
					mixed = append(mixed, fmt.Sprint(now))
				}
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return func() ([]string, map[string]int, int) {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(mixed), maps.Clone(makers), listings
	}
}

// TestTwoPoolsRunOneTrainOnTheForge: two pools with trains always share
// one forge and five PRs on main. At most one pool runs the train of main
// at a time (the train lease): no listing of the branches shows train
// branches with cars of both pools, and every car on them names a pool.
// Every PR lands at a car, and the lease is given back once the trains
// are empty.
func TestTwoPoolsRunOneTrainOnTheForge(t *testing.T) {
	parallelLong(t)
	ctx := testContext(t)
	sb, tested := trainSandbox(t, ctx, 5, nil)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watched := watchCars(t, watchCtx, sb)
	bin := buildPool(t)
	var pools []*poolProc
	for _, name := range []string{"pool-a", "pool-b"} {
		env := poolEnv(t, sb, t.TempDir(), "POOL_INSTANCE_ID="+name, "POOL_IDLE_EXIT=5", "POOL_MERGE_TRAIN=always")
		pools = append(pools, startPool(t, ctx, bin, env, "--workers", "2"))
	}
	for _, p := range pools {
		p.wait(t, ctx)
	}
	stopWatch()
	mixed, makers, listings := watched()
	for _, m := range mixed {
		t.Errorf("cars of two pools on the train branches of main at once: %s", m)
	}
	if _, ok := makers[""]; ok {
		t.Errorf("a car that names no pool instance: %v", makers)
	}
	cars := tested()
	landedBy := map[string]int{}
	for _, n := range sb.PRs {
		pr := getPR(t, ctx, sb, n)
		if !pr.Merged || !cars[pr.Head.Sha] {
			t.Errorf("#%d: merged %v at %s; want merged at a car the CI tested", n, pr.Merged, pr.Head.Sha)
			continue
		}
		var c struct {
			Commit struct {
				Message string `json:"message"`
			} `json:"commit"`
		}
		if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/git/commits/%s", sb.Owner, sb.Repo, pr.Head.Sha), nil, &c); err != nil {
			t.Fatal(err)
		}
		if m := carMaker.FindStringSubmatch(c.Commit.Message); m != nil {
			landedBy[m[1]]++
		}
	}
	status, _ := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/git/refs/pool-train-lease", sb.Owner, sb.Repo), nil, nil)
	if status == 200 {
		t.Errorf("the train lease is left: GET git/refs/pool-train-lease answered %d", status)
	}
	var waited []string
	for i, p := range pools {
		if strings.Contains(p.stderr.String(), "another pool runs the train of the base; this pool waits") {
			waited = append(waited, []string{"pool-a", "pool-b"}[i])
		}
	}
	t.Logf("figure: two pools, 5 PRs on one base: %d listings of the train branches, cars seen by maker %v, PRs landed by maker %v, pools that waited %v, %d reviewer sessions",
		listings, makers, landedBy, waited, len(sb.Model.Prompts()))
	if t.Failed() {
		for i, p := range pools {
			t.Logf("pool %d stderr:\n%s", i, tailOf(p.stderr.String(), 20000))
		}
	}
}

// commitRefs lists the commits whose messages the forge linked to PR n:
// the "referenced this pull request from a commit" entries of its
// timeline.
func commitRefs(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, n int) []string {
	t.Helper()
	var events []struct {
		Type string `json:"type"`
		Body string `json:"body"`
	}
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", fmt.Sprintf("/repos/%s/%s/issues/%d/timeline?limit=50", sb.Owner, sb.Repo, n), nil, &events); err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, e := range events {
		if e.Type == "commit_ref" {
			refs = append(refs, e.Body)
		}
	}
	return refs
}
