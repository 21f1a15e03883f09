package report

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"pool/configs"
	"pool/forge"
	"pool/forgejo"
	"pool/forgejo/sdkclient"
	"pool/internal/sandbox"
	"pool/lifecycle"
)

// forgeFixture is a real forge with one open PR: alice's feature-1 into
// main, reviewable by review-bot, answerable by pool-bot (the pool's
// account, which runs report and tick); mallory is a registered account
// without access to the repository.
type forgeFixture struct {
	ctx    context.Context
	t      *testing.T // the running subtest
	f      *sandbox.Forge
	client *sdkclient.Client // pool-bot's

	alice, reviewer, fixer, mallory string // tokens
	reviewerName, fixerName         string
	owner, repo                     string
	n                               int
	head                            string
	target                          string // OWNER/REPO#N
	lastStderr                      string
}

func newForgeFixture(t *testing.T, ctx context.Context, f *sandbox.Forge, repo string) *forgeFixture {
	t.Helper()
	fx := &forgeFixture{f: f, owner: "alice", repo: repo, ctx: ctx, t: t,
		reviewerName: "review-bot", fixerName: "pool-bot"}
	fx.alice = fx.user("alice")
	fx.reviewer = fx.user(fx.reviewerName)
	fx.fixer = fx.user(fx.fixerName)
	fx.mallory = fx.user("mallory")
	var err error
	fx.client, err = sdkclient.New(ctx, f.URL, fx.fixer, forgejo.Options{})
	must(t, err)
	fx.n, fx.head = fx.openPR(repo, nil)
	fx.target = fmt.Sprintf("%s/%s#%d", fx.owner, repo, fx.n)
	return fx
}

// openPR creates alice's repository, with review-bot and pool-bot as
// writers and main protected by the given rule if any, and a PR of feature-1
// into main that the forge has checked.
func (fx *forgeFixture) openPR(repo string, protection map[string]any) (n int, head string) {
	fx.t.Helper()
	must(fx.t, fx.f.CreateRepo(fx.ctx, fx.alice, repo))
	if protection != nil {
		must(fx.t, fx.f.ProtectBranch(fx.ctx, fx.alice, fx.owner, repo, "main", protection))
	}
	for _, u := range []string{fx.reviewerName, fx.fixerName} {
		must(fx.t, fx.f.AddCollaborator(fx.ctx, fx.alice, fx.owner, repo, u, "write"))
	}
	must(fx.t, fx.f.CreateBranchWithFile(fx.ctx, fx.alice, fx.owner, repo, "feature-1", "main.go",
		"package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"))
	n, head, err := fx.f.CreatePR(fx.ctx, fx.alice, fx.owner, repo, "feature-1", "main", "Add main", "")
	must(fx.t, err)
	fx.waitMergeable(repo, n)
	return n, head
}

// user creates an account and returns its token.
func (fx *forgeFixture) user(name string) string {
	fx.t.Helper()
	tok, err := fx.f.CreateUser(fx.ctx, name)
	must(fx.t, err)
	return tok
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// waitMergeable waits for the forge's conflict check on a new PR.
func (fx *forgeFixture) waitMergeable(repo string, n int) {
	fx.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pr, err := fx.client.PRDetail(fx.ctx, fx.owner, repo, n)
		must(fx.t, err)
		if pr.Mergeable {
			return
		}
		if time.Now().After(deadline) {
			fx.t.Fatalf("%s/%s#%d never became mergeable", fx.owner, repo, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (fx *forgeFixture) status(context, state, description string) {
	fx.t.Helper()
	must(fx.t, fx.f.PostStatus(fx.ctx, fx.alice, fx.owner, fx.repo, fx.head, context, state,
		"http://ci.test/"+url.PathEscape(context), description))
}

func (fx *forgeFixture) comment(token, body string) {
	fx.t.Helper()
	path := fmt.Sprintf("/repos/%s/%s/issues/%d/comments", fx.owner, fx.repo, fx.n)
	_, err := fx.f.Do(fx.ctx, token, http.MethodPost, path, map[string]any{"body": body}, nil)
	must(fx.t, err)
}

type inline struct {
	path, body string
	line       int
}

func (fx *forgeFixture) review(token, event, body string, comments ...inline) {
	fx.t.Helper()
	var cs []map[string]any
	for _, c := range comments {
		cs = append(cs, map[string]any{"path": c.path, "body": c.body, "new_position": c.line})
	}
	req := map[string]any{"event": event, "body": body, "commit_id": fx.head, "comments": cs}
	path := fmt.Sprintf("/repos/%s/%s/pulls/%d/reviews", fx.owner, fx.repo, fx.n)
	_, err := fx.f.Do(fx.ctx, token, http.MethodPost, path, req, nil)
	must(fx.t, err)
}

// report reports on the PR through forgeURL as `pool report` does, and
// returns what it prints: its settings resolved by configs.ForgeFlags (the
// pool's file too, by POOL_CONFIG), judged by their policy. extra are
// --json, --wait, --interval and --cap.
func (fx *forgeFixture) report(forgeURL string, extra ...string) string {
	fx.t.Helper()
	fx.t.Setenv("POOL_FORGEJO_TOKEN", fx.fixer)
	fs := pflag.NewFlagSet("report", pflag.ContinueOnError)
	resolve := configs.ForgeFlags(fs)
	asJSON, wait := fs.Bool("json", false, ""), fs.Bool("wait", false, "")
	interval, capAfter := fs.Duration("interval", DefaultInterval, ""), fs.Duration("cap", DefaultCap, "")
	must(fx.t, fs.Parse(append([]string{"--forgejo-url", forgeURL, "--reviewers", fx.reviewerName}, extra...)))
	settings, err := resolve()
	must(fx.t, err)
	c, err := sdkclient.New(fx.ctx, settings.ForgejoURL, settings.Token, forgejo.Options{})
	must(fx.t, err)
	var w *Wait
	if *wait {
		w = &Wait{Interval: *interval, Cap: *capAfter}
	}
	r, err := Produce(fx.ctx, c, forge.Target{Owner: fx.owner, Repo: fx.repo, Number: fx.n}, settings.Policy(), settings.StatusContext, w)
	must(fx.t, err)
	out := r.Render()
	if *asJSON {
		b, err := r.JSON()
		must(fx.t, err)
		out = string(b) + "\n"
	}
	fx.lastStderr = strings.Join(r.Errors, "\n")
	fx.t.Logf("pool report %s:\n%s%s", strings.Join(extra, " "), out, fx.lastStderr)
	return out
}

func (fx *forgeFixture) tick(opt TickOptions) Digest {
	fx.t.Helper()
	d, err := Tick(fx.ctx, fx.client, fx.owner, fx.repo, fx.n, opt)
	must(fx.t, err)
	return d
}

// wantLines checks that every line appears in the report, in order.
func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	rest := out
	for _, l := range lines {
		i := strings.Index(rest, l+"\n")
		if i < 0 {
			t.Errorf("report lacks %q (in order):\n%s", l, out)
			return
		}
		rest = rest[i+len(l):]
	}
}

func TestAgainstForge(t *testing.T) {
	f := sandbox.ForgeForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	fx := newForgeFixture(t, ctx, f, "demo")

	t.Run("no statuses is unknown", func(t *testing.T) { fx.t = t; testNoStatuses(fx) })
	t.Run("statuses", func(t *testing.T) { fx.t = t; testStatuses(fx) })
	t.Run("review and replies", func(t *testing.T) { fx.t = t; testReviewAndReplies(fx) })
	t.Run("statuses answer 500", func(t *testing.T) { fx.t = t; testStatuses500(fx) })
	t.Run("to green", func(t *testing.T) { fx.t = t; testToGreen(fx) })
	t.Run("an open dependency holds it", func(t *testing.T) { fx.t = t; testOpenDependency(fx) })
	t.Run("the pool's skip label", func(t *testing.T) { fx.t = t; testPoolsSkipLabel(fx) })
	t.Run("base moves", func(t *testing.T) { fx.t = t; testBaseMoves(fx) })
}

// testOpenDependency: the PR, green and approved, depends on an issue
// still open; the forge would refuse its merge, and so the report does not
// say it may merge until the issue is closed.
func testOpenDependency(fx *forgeFixture) {
	issue, err := fx.f.CreateIssue(fx.ctx, fx.alice, fx.owner, fx.repo, "do this first")
	must(fx.t, err)
	must(fx.t, fx.f.AddDependency(fx.ctx, fx.alice, fx.owner, fx.repo, fx.n, issue))
	wantLines(fx.t, fx.report(fx.f.URL), "recommendation: "+RecommendHeld)
	must(fx.t, fx.f.CloseIssue(fx.ctx, fx.alice, fx.owner, fx.repo, issue))
	wantLines(fx.t, fx.report(fx.f.URL), "recommendation: "+RecommendGreen)
}

// poolFile gives the commands the supervisor's config file for the rest
// of the subtest, as POOL_CONFIG.
func (fx *forgeFixture) poolFile(yaml string) {
	fx.t.Helper()
	file := filepath.Join(fx.t.TempDir(), "pool.yaml")
	must(fx.t, os.WriteFile(file, []byte(yaml), 0o600))
	fx.t.Setenv("POOL_CONFIG", file)
}

// testPoolsSkipLabel: the green, approved PR carries the label the pool's
// file leaves to humans; the supervisor would not merge it, and so the
// report does not say it may merge. Without the file the label is no skip
// label, and the PR may merge.
func testPoolsSkipLabel(fx *forgeFixture) {
	const label = "hold for humans"
	must(fx.t, fx.f.AddLabel(fx.ctx, fx.alice, fx.owner, fx.repo, fx.n, label))
	wantLines(fx.t, fx.report(fx.f.URL), "recommendation: "+RecommendGreen)
	fx.poolFile("skip_label: " + label + "\n")
	wantLines(fx.t, fx.report(fx.f.URL), "recommendation: "+RecommendHeld)
}

func testNoStatuses(fx *forgeFixture) {
	out := fx.report(fx.f.URL)
	wantLines(fx.t, out,
		fmt.Sprintf("pr=%d  branch=feature-1", fx.n),
		"head_sha: "+fx.head,
		"state: open",
		"mergeable: true",
		"ci_failed: unknown",
		"ci_passed: unknown",
		"ci_pending: unknown",
		"  review-bot: pending  reviews=0",
		"unresolved_review_threads: 0",
		"comments_from_bots: 0",
		"recommendation: "+RecommendFetchFailed)
}

func testStatuses(fx *forgeFixture) {
	// More reports than one page holds, so the history is read across pages.
	for i := 0; i < 51; i++ {
		fx.status("ci/woodpecker/pr/build", "pending", fmt.Sprintf("step %d", i))
	}
	fx.status("ci / test (pull_request)", "failure", "Has been cancelled")
	fx.status("lint / vet (pull_request)", "failure", "go vet found 2 problems")
	fx.status("ci / test (push)", "success", "tests passed")
	out := fx.report(fx.f.URL)
	wantLines(fx.t, out,
		"ci_failed:",
		"  - context=lint / vet (pull_request)  state=failure  url=http://ci.test/lint%20%2F%20vet%20%28pull_request%29  description=go vet found 2 problems",
		"ci_passed: 1",
		"ci_pending: ci/woodpecker/pr/build",
		"recommendation: "+RecommendCIFailed)
	if strings.Contains(out, "context=ci / test") {
		fx.t.Errorf("the superseded cancellation is reported as a failure:\n%s", out)
	}
	var j struct {
		Superseded []jsonCheck `json:"superseded"`
		CIFailed   []jsonCheck `json:"ci_failed"`
	}
	must(fx.t, json.Unmarshal([]byte(fx.report(fx.f.URL, "--json")), &j))
	if len(j.Superseded) != 1 || j.Superseded[0].Context != "ci / test (pull_request)" || len(j.CIFailed) != 1 {
		fx.t.Errorf("--json superseded %+v, ci_failed %+v", j.Superseded, j.CIFailed)
	}
}

func testReviewAndReplies(fx *forgeFixture) {
	fx.comment(fx.reviewer, "Review started.")
	fx.comment(fx.alice, "Could you look at the README too?")
	fx.review(fx.reviewer, "REQUEST_CHANGES", "Please clean this up.",
		inline{"main.go", "add a doc comment", 3},
		inline{"main.go", "println is for debugging", 4})
	wantLines(fx.t, fx.report(fx.f.URL),
		"  review-bot: changes_requested  reviews=1",
		"unresolved_review_threads: 2",
		"comments_from_bots: 1",
		"recommendation: "+RecommendCIFailed)

	before := fx.tick(TickOptions{})
	want := []string{"failing-check", "changes-requested", "unresolved-thread main.go:3", "unresolved-thread main.go:4",
		"new-comment review-bot", "new-comment alice"}
	if got := itemSummary(before); strings.Join(got, "|") != strings.Join(want, "|") {
		fx.t.Fatalf("items %q, want %q", got, want)
	}
	if b, err := json.MarshalIndent(before, "", "  "); err == nil {
		fx.t.Logf("pool tick:\n%s", b)
	}
	if again := fx.tick(TickOptions{}); again.Fingerprint != before.Fingerprint {
		fx.t.Errorf("two ticks of an unchanged PR differ: %s %s", before.Fingerprint, again.Fingerprint)
	}

	review, botComment := before.Items[1], before.Items[4]
	docThread, printThread := before.Items[2], before.Items[3]
	fx.comment(fx.fixer, ReplyMarker(review.Answers)+"\n"+ReplyMarker(botComment.Answers)+"\nAddressed in the next push.")
	fx.review(fx.fixer, "COMMENT", "", inline{"main.go", ReplyMarker(printThread.Answers) + "\nRemoved.", 4})
	// an answer to an inline comment written on the conversation does not count
	fx.comment(fx.fixer, ReplyMarker(docThread.Answers)+"\nWill do.")
	// nor does a marker typed by an account whose reviews do not count,
	// even in the right place; its comment becomes an unofficial item
	fx.review(fx.mallory, "COMMENT", "", inline{"main.go", ReplyMarker(docThread.Answers) + "\nDone, trust me.", 3})
	fx.comment(fx.mallory, ReplyMarker(fx.aliceComment(before).Answers)+"\nAnswered.")

	after := fx.tick(TickOptions{})
	want = []string{"failing-check", "unresolved-thread main.go:3", "unresolved-thread main.go:3", "new-comment alice", "new-comment mallory"}
	if got := itemSummary(after); strings.Join(got, "|") != strings.Join(want, "|") {
		fx.t.Errorf("items after the replies %q, want %q", got, want)
	}
	if after.Fingerprint == before.Fingerprint {
		fx.t.Error("the fingerprint did not change when items were answered")
	}
	for _, it := range after.Items {
		// review-bot's reviews count; alice (the author) and mallory speak
		// for no review process
		if want := it.Author == "alice" || it.Author == "mallory"; it.Unofficial != want {
			fx.t.Errorf("item %s by %q marked unofficial=%v, want %v", it.Reason, it.Author, it.Unofficial, want)
		}
	}
	gone, remaining, added := Diff(before, after)
	if len(gone) != 3 || len(remaining) != 3 || len(added) != 2 {
		fx.t.Errorf("Diff: gone %d remaining %d added %d", len(gone), len(remaining), len(added))
	}
	fx.t.Logf("tick prompt section:\n%s", after.PromptSection())
}

// aliceComment is the digest's item for alice's conversation comment.
func (fx *forgeFixture) aliceComment(d Digest) forge.Item {
	fx.t.Helper()
	for _, it := range d.Items {
		if it.Reason == forge.ReasonNewComment && it.Author == "alice" {
			return it
		}
	}
	fx.t.Fatalf("no comment item by alice: %q", itemSummary(d))
	return forge.Item{}
}

func itemSummary(d Digest) []string {
	var out []string
	for _, it := range d.Items {
		s := it.Reason
		switch it.Source {
		case forge.SourceInline:
			s += fmt.Sprintf(" %s:%d", it.File, it.Line)
		case forge.SourceComment:
			s += " " + it.Author
		}
		out = append(out, s)
	}
	return out
}

// failingStatuses is a proxy in front of the forge that answers 500 for
// every commit-status read.
func failingStatuses(t *testing.T, forgeURL string) string {
	t.Helper()
	u, err := url.Parse(forgeURL)
	must(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/statuses") {
			http.Error(w, `{"message":"boom"}`, http.StatusInternalServerError)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func testStatuses500(fx *forgeFixture) {
	proxyURL := failingStatuses(fx.t, fx.f.URL)
	out := fx.report(proxyURL)
	wantLines(fx.t, out,
		"ci_failed: unknown",
		"ci_passed: unknown",
		"ci_pending: unknown",
		"  review-bot: changes_requested  reviews=1",
		"recommendation: "+RecommendFetchFailed)
	if !strings.Contains(fx.lastStderr, "HTTP 500") {
		fx.t.Errorf("stderr does not name the failed read: %q", fx.lastStderr)
	}
	c, err := sdkclient.New(fx.ctx, proxyURL, fx.alice, forgejo.Options{})
	must(fx.t, err)
	d, err := Tick(fx.ctx, c, fx.owner, fx.repo, fx.n, TickOptions{})
	must(fx.t, err)
	if d.Checks != nil || len(d.Errors) != 1 || itemSummary(d)[0] == forge.ReasonFailingCheck {
		fx.t.Errorf("digest with unread statuses: checks %v errors %q items %q", d.Checks, d.Errors, itemSummary(d))
	}
}

func testToGreen(fx *forgeFixture) {
	fx.status("lint / vet (pull_request)", "success", "clean")
	wantLines(fx.t, fx.report(fx.f.URL), "ci_passed: 2", "recommendation: "+RecommendChanges)

	fx.review(fx.reviewer, "APPROVED", "Looks good now.")
	out := fx.report(fx.f.URL, "--wait", "--interval", "100ms", "--cap", "300ms")
	wantLines(fx.t, out, "ci_pending: ci/woodpecker/pr/build", "  review-bot: approved  reviews=2",
		"recommendation: "+RecommendTimedOut)
	fx.autoMergeArmedRoundTrip()

	fx.status("ci/woodpecker/pr/build", "success", "done")
	wantLines(fx.t, fx.report(fx.f.URL, "--wait"), "ci_passed: 3", "ci_pending: none",
		"unresolved_review_threads: 1", "recommendation: "+RecommendThreads)

	d := fx.tick(TickOptions{AutoMerge: true, Policy: lifecycle.Policy{Rule: lifecycle.ReviewRule{Reviewers: []string{fx.reviewerName}}}})
	want := []string{"unresolved-thread main.go:3", "unresolved-thread main.go:3", "new-comment alice", "new-comment mallory", "auto-merge-not-armed"}
	if got := itemSummary(d); strings.Join(got, "|") != strings.Join(want, "|") {
		fx.t.Errorf("items %q, want %q", got, want)
	}
	fx.review(fx.fixer, "COMMENT", "", inline{"main.go", ReplyMarker(d.Items[0].Answers) + "\n" + ReplyMarker(d.Items[1].Answers) + "\nAdded.", 3})
	wantLines(fx.t, fx.report(fx.f.URL), "unresolved_review_threads: 0", "recommendation: "+RecommendGreen)
}

// autoMergeArmedRoundTrip schedules an auto-merge while a required check is
// pending, reads it from the timeline, and cancels it. It does so on a PR of
// its own, in a repository whose main requires that check: the forge's
// auto-merge worker merges at once where no check is required, and may do so
// after the cancel was answered (it read the schedule before), which merged
// the demo PR under the later subtests.
func (fx *forgeFixture) autoMergeArmedRoundTrip() {
	fx.t.Helper()
	const repo, check = "armed", "ci/required"
	n, head := fx.openPR(repo, map[string]any{
		"enable_status_check": true, "status_check_contexts": []string{check}})
	must(fx.t, fx.f.PostStatus(fx.ctx, fx.alice, fx.owner, repo, head, check, "pending", "http://ci.test/required", "running"))
	res, err := fx.client.Merge(fx.ctx, fx.owner, repo, n, forgejo.MergeOptions{Style: "merge", HeadSHA: head, WhenChecksSucceed: true})
	must(fx.t, err)
	if res.Outcome != forge.MergeScheduled {
		fx.t.Fatalf("scheduling an auto-merge: %+v", res)
	}
	armed, err := fx.client.AutoMergeArmed(fx.ctx, fx.owner, repo, n)
	if err != nil || !armed {
		fx.t.Errorf("AutoMergeArmed after scheduling = %v, %v", armed, err)
	}
	path := fmt.Sprintf("/repos/%s/%s/pulls/%d/merge", fx.owner, repo, n)
	_, err = fx.f.Do(fx.ctx, fx.alice, http.MethodDelete, path, nil, nil)
	must(fx.t, err)
	armed, err = fx.client.AutoMergeArmed(fx.ctx, fx.owner, repo, n)
	if err != nil || armed {
		fx.t.Errorf("AutoMergeArmed after cancelling = %v, %v", armed, err)
	}
}

// testBaseMoves pushes to main: first a change elsewhere (the branch is
// behind its base), then a conflicting one.
func testBaseMoves(fx *forgeFixture) {
	_, err := fx.f.PushFile(fx.ctx, fx.alice, fx.owner, fx.repo, "main", "NOTES.md", "notes\n", "add notes")
	must(fx.t, err)
	// The forge tests the PR against the moved base in the background: it
	// reads the PR not mergeable meanwhile, and just before, mergeable as
	// against the old base (its API shows neither apart). So each state is
	// awaited, never read once: behind, and in the end no conflict.
	fx.tickUntil(forge.ReasonStaleBase, forge.ReasonMergeConflict)
	// Behind its base, green and approved: the supervisor merges it as it
	// is by default, and updates it first under merge.update always.
	fx.reportUntil("recommendation: " + RecommendGreen)
	fx.poolFile("merge:\n  update: always\n")
	fx.reportUntil("recommendation: " + RecommendHeld)
	fx.t.Setenv("POOL_CONFIG", "")
	_, err = fx.f.PushFile(fx.ctx, fx.alice, fx.owner, fx.repo, "main", "main.go", "package main\n\n// conflicting\n", "conflict")
	must(fx.t, err)
	fx.tickUntil(forge.ReasonMergeConflict)
	wantLines(fx.t, fx.report(fx.f.URL), "mergeable: false", "recommendation: "+RecommendConflict)
}

// reportUntil reports until the line shows up: the forge tests a PR
// against its moved base in the background, and calls it not mergeable
// meanwhile.
func (fx *forgeFixture) reportUntil(line string) {
	fx.t.Helper()
	const patience = 2 * time.Minute
	deadline := time.Now().Add(patience)
	for {
		out := fx.report(fx.f.URL)
		if strings.Contains(out, line+"\n") {
			return
		}
		if time.Now().After(deadline) {
			fx.t.Fatalf("no %q after %s:\n%s", line, patience, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// tickUntil ticks until an item of the reason shows up: the forge checks a
// PR against its base in the background.
func (fx *forgeFixture) tickUntil(reason string, without ...string) Digest {
	fx.t.Helper()
	// The forge tests a PR against its moved base in a background queue,
	// which takes its time on a machine busy with other tests.
	const patience = 2 * time.Minute
	deadline := time.Now().Add(patience)
	for {
		d := fx.tick(TickOptions{})
		if hasReason(d, reason) && !slices.ContainsFunc(without, func(r string) bool { return hasReason(d, r) }) {
			return d
		}
		if time.Now().After(deadline) {
			fx.t.Fatalf("no digest with a %s item and none of %q after %s: %q", reason, without, patience, itemSummary(d))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func hasReason(d Digest, reason string) bool {
	return slices.ContainsFunc(d.Items, func(it forge.Item) bool { return it.Reason == reason })
}
