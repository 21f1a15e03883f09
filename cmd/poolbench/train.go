package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"pool/internal/sandbox"
)

// The train mode (-mode train) is issue 36's benchmark. The base branch
// requires up-to-date PRs (block_on_outdated_branch) and a check that the
// bench's stand-in CI reports (trainci.go) after a fixed delay. K approved
// branch PRs, each adding its own file, are merged by the pool twice, each
// time from a fresh backlog: first one by one (merge.train off: update the
// PR behind its base, wait for the CI on the new head, merge, next), then
// with merge.train always. Each side's time runs from the pool's start to
// its last merge answered, read from the counting proxy's record; CI runs
// are the commits the CI tested meanwhile.

// trainSize is the most cars of the train side (merge.train_size).
const trainSize = 8

// trainSide is one side's figures.
type trainSide struct {
	name       string
	took       time.Duration // pool start → last merge answered
	merged     int
	runs       int // CI runs (commits tested) from the pool's start to the last merge seen
	failedRuns int
	requests   int // the pool's forge requests over the same span
	updates    int // the pool's update calls the forge answered 200 (POST pulls/{n}/update)
	load       [2]string
	failing    int  // the PR chosen to fail (0: none)
	notes      int  // the pool's comments on it
	failMerged bool // it was merged (it should not be)
}

type trainTable struct {
	k           int
	ciDelay     time.Duration
	fail        int // the index (1..k) of the PR chosen to fail; 0: none
	knowsTrains bool
	sides       [2]trainSide // one by one, then trains
	seed, total time.Duration
}

// trainEnv is each side's train settings, as environment variables.
var trainEnv = [2][]string{
	{"POOL_MERGE_TRAIN=off"},
	{"POOL_MERGE_TRAIN=always", "POOL_MERGE_TRAIN_SIZE=" + strconv.Itoa(trainSize)},
}

func (b *bench) trains(ctx context.Context) (*trainTable, error) {
	t := &trainTable{k: b.opts.mergeK, ciDelay: b.opts.ciDelay, fail: b.opts.failPR, knowsTrains: b.poolKnowsTrains(ctx)}
	if !t.knowsTrains {
		b.progress("the pool binary names no merge.train setting in its --help: the train side will merge one by one")
	}
	if err := b.protectForTrains(ctx); err != nil {
		return nil, err
	}
	ci := newStandInCI(b.sb, t.ciDelay, b.progress)
	ciCtx, stopCI := context.WithCancel(ctx)
	defer stopCI()
	go ci.watch(ciCtx)
	for i, name := range []string{"one", "train"} {
		side, err := b.trainSide(ctx, t, ci, name, trainEnv[i])
		t.sides[i] = side
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}

// poolKnowsTrains reports whether the pool's --help names merge.train.
func (b *bench) poolKnowsTrains(ctx context.Context) bool {
	out, _ := exec.CommandContext(ctx, b.bin, "--help").CombinedOutput()
	return trainSetting.Match(out)
}

var trainSetting = regexp.MustCompile(`(?i)merge[-._]train`)

// protectForTrains requires up-to-date PRs and the stand-in CI's check on
// main.
func (b *bench) protectForTrains(ctx context.Context) error {
	sb := b.sb
	return sb.Forge.ProtectBranch(ctx, sb.OwnerToken, sb.Owner, sb.Repo, "main", map[string]any{
		"enable_status_check": true, "status_check_contexts": []string{benchCIContext}, "block_on_outdated_branch": true})
}

// trainBacklog opens K branch PRs named after prefix, each adding its own
// file, approves them, and waits until the CI has tested their heads. It
// returns their numbers and the one chosen to fail (0: none).
func (b *bench) trainBacklog(ctx context.Context, t *trainTable, ci *standInCI, prefix string) ([]int, int, error) {
	start := time.Now()
	sb, branches := b.sb, names(prefix, t.k)
	b.progress("%s: pushing %d branches, opening their PRs and approving them", prefix, t.k)
	ci.pause()
	// A seeder of its own: its branches start from main as it is now, as
	// the other side's did (a seeder fetches main once).
	heads, err := sb.Bulk(filepath.Join(b.dir, "seed-"+prefix)).PushEach(ctx, bulkBranches(branches))
	rule := failRule{}
	if err == nil && t.fail > 0 {
		rule = failRule{file: sandbox.BulkFile(branches[t.fail-1]), ownHead: heads[t.fail-1]}
	}
	ci.resume(rule)
	if err != nil {
		return nil, 0, err
	}
	// One at a time: the PRs' numbers follow the branches, so the pool,
	// which takes PRs in number order, meets the PR chosen to fail at the
	// place -fail names (opened in parallel, the 5th branch's PR was once
	// the first: a train's front car, 7 cars behind it).
	numbers, err := sb.CreatePRs(ctx, branches, nil, 1)
	if err != nil {
		return nil, 0, err
	}
	for i, n := range numbers {
		if _, err := sb.Forge.Review(ctx, sb.ReviewerToken, sb.Owner, sb.Repo, n, heads[i], "APPROVED", "Approved for the bench."); err != nil {
			return nil, 0, err
		}
	}
	if err := ci.awaitDone(ctx, heads, t.ciDelay+5*time.Minute); err != nil {
		return nil, 0, err
	}
	t.seed += time.Since(start)
	failing := 0
	if t.fail > 0 {
		failing = numbers[t.fail-1]
	}
	b.progress("%s: %d approved PRs, their heads tested, in %s", prefix, len(numbers), round(time.Since(start)))
	return numbers, failing, nil
}

// bulkBranches is one branch per name adding sandbox.BulkFile(name).
func bulkBranches(names []string) []sandbox.Branch {
	out := make([]sandbox.Branch, len(names))
	for i, n := range names {
		out[i] = sandbox.Branch{Name: n, Message: "add " + sandbox.BulkFile(n), Files: []sandbox.File{{Path: sandbox.BulkFile(n), Content: n + "\n"}}}
	}
	return out
}

// trainSide lets the pool, with the extra environment, merge a fresh
// backlog, and measures it.
func (b *bench) trainSide(ctx context.Context, t *trainTable, ci *standInCI, name string, extra []string) (trainSide, error) {
	numbers, failing, err := b.trainBacklog(ctx, t, ci, name)
	if err != nil {
		return trainSide{name: name}, err
	}
	side := trainSide{name: name, failing: failing}
	counter, err := newCountingProxy(b.sb.Forge.URL)
	if err != nil {
		return side, err
	}
	defer counter.Close()
	dir := filepath.Join(b.dir, "train-"+name)
	env, err := poolEnv(b.sb, dir, append([]string{"POOL_FORGEJO_URL=" + counter.URL, "POOL_IDLE_EXIT=0", "POOL_POLL_INTERVAL=5s",
		"POOL_HUMAN_REVIEWERS=" + b.sb.ReviewerUser, "POOL_FIXERS_ENABLED=false"}, extra...)...)
	if err != nil {
		return side, err
	}
	logPath := dir + ".log"
	b.progress("%s: the pool merges %d PRs (%v)", name, len(numbers), extra)
	side.load[0] = loadAverage()
	start := time.Now()
	// One worker: the backlog is approved, so no session is needed, and
	// each worker's warm-up (an agent-server instance) loads the machine.
	p, err := startPool(b.bin, env, logPath, "--workers", "1")
	if err != nil {
		return side, err
	}
	err = b.awaitMerged(ctx, without(numbers, failing), time.Duration(t.k)*(t.ciDelay+time.Minute)+5*time.Minute)
	seen := time.Now()
	side.load[1] = loadAverage()
	if err == nil && failing != 0 {
		err = b.settleFailing(ctx, &side)
	}
	calls := counter.recorded()
	if serr := p.stop(stopGrace); serr != nil && err == nil {
		err = serr
	}
	if werr := writeCalls(dir+"-requests.txt", calls); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return side, fmt.Errorf("%s: %w (log in %s)", name, err, logPath)
	}
	last, merged := mergesAnswered(calls, b.sb.Owner, b.sb.Repo)
	side.took, side.merged = last.Sub(start), merged
	side.runs, side.failedRuns = ci.runsBetween(start, seen)
	side.requests, side.updates = callsBefore(calls, seen), updatesAnswered(calls)
	b.progress("%s: %d merged in %s, %d CI runs (%d failed), %d forge requests", name, side.merged, round(side.took), side.runs, side.failedRuns, side.requests)
	return side, nil
}

// settleFailing waits one poll interval for the pool's note on the PR
// chosen to fail, counts the pool's comments on it, and closes it, so that
// the next side's pool does not see it.
func (b *bench) settleFailing(ctx context.Context, side *trainSide) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(5 * time.Second):
	}
	sb, n := b.sb, side.failing
	var comments []struct {
		User struct {
			Login string `json:"login"`
		} `json:"user"`
		Created string `json:"created_at"`
		Body    string `json:"body"`
	}
	path := fmt.Sprintf("/repos/%s/%s/issues/%d/comments", sb.Owner, sb.Repo, n)
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, http.MethodGet, path, nil, &comments); err != nil {
		return fmt.Errorf("read the comments of PR #%d: %w", n, err)
	}
	var kept strings.Builder
	for _, c := range comments {
		if c.User.Login == sb.PoolUser {
			side.notes++
			fmt.Fprintf(&kept, "--- %s\n%s\n", c.Created, c.Body)
		}
	}
	// The notes themselves, for -keep: which are the train's, which a claim's.
	if err := os.WriteFile(filepath.Join(b.dir, "train-"+side.name+"-failing-notes.txt"), []byte(kept.String()), 0o644); err != nil {
		return fmt.Errorf("keep the notes of PR #%d: %w", n, err)
	}
	pr, err := b.readPR(ctx, n)
	if err != nil {
		return err
	}
	if side.failMerged = pr.Merged; pr.Merged {
		return nil
	}
	path = fmt.Sprintf("/repos/%s/%s/pulls/%d", sb.Owner, sb.Repo, n)
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, http.MethodPatch, path, map[string]any{"state": "closed"}, nil); err != nil {
		return fmt.Errorf("close PR #%d: %w", n, err)
	}
	return nil
}

func without(numbers []int, n int) []int {
	var out []int
	for _, x := range numbers {
		if x != n {
			out = append(out, x)
		}
	}
	return out
}

// mergePath matches a merge call: /api/v1/repos/{owner}/{repo}/pulls/{n}/merge.
var mergePath = regexp.MustCompile(`^/api/v1/repos/([^/]+)/([^/]+)/pulls/\d+/merge$`)

// mergesAnswered is when the last merge call of owner/repo the forge
// answered 200 was answered, and how many such calls there were.
func mergesAnswered(calls []call, owner, repo string) (last time.Time, merged int) {
	for _, c := range calls {
		m := mergePath.FindStringSubmatch(c.uri)
		if c.method != http.MethodPost || c.status != http.StatusOK || m == nil || m[1] != owner || m[2] != repo {
			continue
		}
		merged++
		if c.end.After(last) {
			last = c.end
		}
	}
	return last, merged
}

// updatePath matches an update call: /api/v1/repos/{owner}/{repo}/pulls/{n}/update.
var updatePath = regexp.MustCompile(`^/api/v1/repos/[^/]+/[^/]+/pulls/\d+/update$`)

// updatesAnswered counts the update calls the forge answered 200: the
// one-by-one path's way to bring a PR up to date.
func updatesAnswered(calls []call) int {
	n := 0
	for _, c := range calls {
		path, _, _ := strings.Cut(c.uri, "?")
		if c.method == http.MethodPost && c.status == http.StatusOK && updatePath.MatchString(path) {
			n++
		}
	}
	return n
}

// callsBefore counts the calls started before to.
func callsBefore(calls []call, to time.Time) int {
	n := 0
	for _, c := range calls {
		if c.start.Before(to) {
			n++
		}
	}
	return n
}
