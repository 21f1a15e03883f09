package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCacheDir(t *testing.T) {
	root := t.TempDir()
	tests := []struct {
		name                 string
		poolCache, xdg, home string
		want                 string
	}{
		{"POOL_CACHE_DIR wins", root + "/pool", root + "/xdg", root + "/home", root + "/pool"},
		{"then XDG_CACHE_HOME", "", root + "/xdg", root + "/home", root + "/xdg/pool"},
		{"then HOME", "", "", root + "/home", root + "/home/.cache/pool"},
		{"relative POOL_CACHE_DIR is made absolute", "rel", "", "", "rel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(root)
			t.Setenv("POOL_CACHE_DIR", tt.poolCache)
			t.Setenv("XDG_CACHE_HOME", tt.xdg)
			t.Setenv("HOME", tt.home)
			got, err := CacheDir()
			if err != nil {
				t.Fatal(err)
			}
			want, _ := filepath.Abs(tt.want)
			if got != want {
				t.Errorf("CacheDir() = %q, want %q", got, want)
			}
			if fi, err := os.Stat(got); err != nil || !fi.IsDir() {
				t.Errorf("CacheDir() did not create %s: %v", got, err)
			}
		})
	}
}

func TestForge(t *testing.T) {
	f := ForgeForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), EndToEndLimit)
	defer cancel()

	var version struct{ Version string }
	if _, err := f.Do(ctx, "", http.MethodGet, "/version", nil, &version); err != nil {
		t.Fatal(err)
	}
	if version.Version != GiteaVersion {
		t.Errorf("version = %q, want %q", version.Version, GiteaVersion)
	}

	ownerTok := mustCreateUser(ctx, t, f, "owner")
	reviewerTok := mustCreateUser(ctx, t, f, "reviewer")
	setUpRepo(ctx, t, f, ownerTok)

	number, firstHead, err := f.CreatePR(ctx, ownerTok, "owner", "demo", "feature-1", "main", "Add hello", "Please review.")
	if err != nil {
		t.Fatal(err)
	}
	if number != 1 || len(firstHead) != 40 {
		t.Fatalf("CreatePR = #%d head %q, want #1 and a 40-hex head", number, firstHead)
	}
	head := pushTwice(ctx, t, f, ownerTok, firstHead)
	waitForPRHead(ctx, t, f, ownerTok, number, head)
	checkStatus(ctx, t, f, ownerTok, head)
	checkLabel(ctx, t, f, ownerTok, number)
	checkReviewRules(ctx, t, f, ownerTok, reviewerTok, number)
	checkPause(ctx, t, f)
	checkStop(ctx, t, f)
}

func mustCreateUser(ctx context.Context, t *testing.T, f *Forge, name string) string {
	t.Helper()
	token, err := f.CreateUser(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	var me struct{ Login string }
	if _, err := f.Do(ctx, token, http.MethodGet, "/user", nil, &me); err != nil {
		t.Fatal(err)
	}
	if me.Login != name {
		t.Fatalf("token of %s belongs to %q", name, me.Login)
	}
	return token
}

// setUpRepo creates owner/demo with reviewer as a writer and a branch
// feature-1 that adds hello.txt.
func setUpRepo(ctx context.Context, t *testing.T, f *Forge, ownerTok string) {
	t.Helper()
	if err := f.CreateRepo(ctx, ownerTok, "demo"); err != nil {
		t.Fatal(err)
	}
	if err := f.AddCollaborator(ctx, ownerTok, "owner", "demo", "reviewer", "write"); err != nil {
		t.Fatal(err)
	}
	var perm struct{ Permission string }
	if _, err := f.Do(ctx, ownerTok, http.MethodGet, "/repos/owner/demo/collaborators/reviewer/permission", nil, &perm); err != nil {
		t.Fatal(err)
	}
	if perm.Permission != "write" {
		t.Errorf("reviewer permission = %q, want write", perm.Permission)
	}
	if err := f.CreateBranchWithFile(ctx, ownerTok, "owner", "demo", "feature-1", "hello.txt", "hello\n"); err != nil {
		t.Fatal(err)
	}
}

// pushTwice updates hello.txt (PUT path), then adds docs/new.txt (POST path),
// and returns the final head.
func pushTwice(ctx context.Context, t *testing.T, f *Forge, tok, oldHead string) string {
	t.Helper()
	updated, err := f.PushFile(ctx, tok, "owner", "demo", "feature-1", "hello.txt", "hello again\n", "update hello")
	if err != nil {
		t.Fatal(err)
	}
	added, err := f.PushFile(ctx, tok, "owner", "demo", "feature-1", "docs/new.txt", "new\n", "add new")
	if err != nil {
		t.Fatal(err)
	}
	if updated == oldHead || added == updated || len(added) != 40 {
		t.Fatalf("pushes gave heads %q then %q after %q", updated, added, oldHead)
	}
	var file struct{ Content string }
	if _, err := f.Do(ctx, tok, http.MethodGet, "/repos/owner/demo/contents/hello.txt?ref=feature-1", nil, &file); err != nil {
		t.Fatal(err)
	}
	if file.Content != "aGVsbG8gYWdhaW4K" { // base64 of "hello again\n"
		t.Errorf("hello.txt content = %q", file.Content)
	}
	return added
}

// waitForPRHead waits for the PR to follow a push: gitea updates it from a
// queue, not within the push request.
func waitForPRHead(ctx context.Context, t *testing.T, f *Forge, tok string, number int, want string) {
	t.Helper()
	var pr struct {
		Head struct{ SHA string } `json:"head"`
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := f.Do(ctx, tok, http.MethodGet, fmt.Sprintf("/repos/owner/demo/pulls/%d", number), nil, &pr); err != nil {
			t.Fatal(err)
		}
		if pr.Head.SHA == want {
			return
		}
	}
	t.Fatalf("PR #%d head = %s, want %s", number, pr.Head.SHA, want)
}

func checkStatus(ctx context.Context, t *testing.T, f *Forge, tok, sha string) {
	t.Helper()
	if err := f.PostStatus(ctx, tok, "owner", "demo", sha, "ci/test", "success", "http://127.0.0.1/ci/1", "all green"); err != nil {
		t.Fatal(err)
	}
	var combined struct {
		State      string
		TotalCount int `json:"total_count"`
		Statuses   []struct{ Context, Status string }
	}
	if _, err := f.Do(ctx, tok, http.MethodGet, "/repos/owner/demo/commits/"+sha+"/status", nil, &combined); err != nil {
		t.Fatal(err)
	}
	if combined.State != "success" || combined.TotalCount != 1 || combined.Statuses[0].Context != "ci/test" {
		t.Errorf("combined status = %+v", combined)
	}
}

// checkLabel adds the same label twice: the second call must reuse it.
func checkLabel(ctx context.Context, t *testing.T, f *Forge, tok string, number int) {
	t.Helper()
	for range 2 {
		if err := f.AddLabel(ctx, tok, "owner", "demo", number, "pool/reviewing"); err != nil {
			t.Fatal(err)
		}
	}
	var labels []struct{ Name string }
	if _, err := f.Do(ctx, tok, http.MethodGet, "/repos/owner/demo/labels", nil, &labels); err != nil {
		t.Fatal(err)
	}
	if len(labels) != 1 || labels[0].Name != "pool/reviewing" {
		t.Errorf("repo labels = %+v, want just pool/reviewing", labels)
	}
	if _, err := f.Do(ctx, tok, http.MethodGet, "/repos/owner/demo/issues/1/labels", nil, &labels); err != nil {
		t.Fatal(err)
	}
	if len(labels) != 1 || labels[0].Name != "pool/reviewing" {
		t.Errorf("PR labels = %+v, want just pool/reviewing", labels)
	}
}

// checkReviewRules pins the rule that made the harness create several users:
// the author cannot approve their own PR, a collaborator can.
func checkReviewRules(ctx context.Context, t *testing.T, f *Forge, ownerTok, reviewerTok string, number int) {
	t.Helper()
	approve := map[string]any{"event": "APPROVED", "body": "LGTM"}
	path := "/repos/owner/demo/pulls/1/reviews"
	status, err := f.Do(ctx, ownerTok, http.MethodPost, path, approve, nil)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || status != http.StatusUnprocessableEntity {
		t.Errorf("author approving own PR: status %d, err %v; want 422", status, err)
	}
	var review struct {
		State    string
		Official bool
	}
	if _, err := f.Do(ctx, reviewerTok, http.MethodPost, path, approve, &review); err != nil {
		t.Fatal(err)
	}
	if review.State != "APPROVED" || !review.Official {
		t.Errorf("reviewer's review = %+v, want an official approval", review)
	}
}

// checkPause freezes the forge: a request must time out, then work again
// after Resume.
func checkPause(ctx context.Context, t *testing.T, f *Forge) {
	t.Helper()
	if err := f.Pause(); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := f.Do(short, "", http.MethodGet, "/version", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("request to a paused forge: err = %v, want a deadline error", err)
	}
	if err := f.Resume(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Do(ctx, "", http.MethodGet, "/version", nil, nil); err != nil {
		t.Errorf("request after resume: %v", err)
	}
}

// checkStop stops a paused forge twice; it must be gone afterwards.
func checkStop(ctx context.Context, t *testing.T, f *Forge) {
	t.Helper()
	if err := f.Pause(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := f.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Do(ctx, "", http.MethodGet, "/version", nil, nil); err == nil {
		t.Error("forge still answers after Stop")
	}
	if err := f.Resume(); err == nil {
		t.Error("Resume after Stop succeeded")
	}
}

// TestCheckWorkersSetOnlyTheWorkers: CheckWorkers (which SharedServers and
// SharedForge set to sharedCheckWorkers) writes the PR re-test queue's
// workers and nothing else into app.ini: the queue's type stays Gitea's
// on-disk one (its channel queue loses PRs), and 0 (sandbox.Start: the demo,
// the benchmarks) leaves the queue as Gitea configures it.
func TestCheckWorkersSetOnlyTheWorkers(t *testing.T) {
	for _, tc := range []struct {
		workers int
		want    bool
	}{{0, false}, {sharedCheckWorkers, true}} {
		s := newForgeSettings(t.TempDir(), "")
		s.CheckWorkers = tc.workers
		if err := s.usePort(); err != nil {
			t.Fatal(err)
		}
		ini, err := os.ReadFile(s.confPath())
		if err != nil {
			t.Fatal(err)
		}
		section := fmt.Sprintf("[queue.pr_patch_checker]\nMAX_WORKERS = %d\n", sharedCheckWorkers)
		if got := strings.Contains(string(ini), section); got != tc.want {
			t.Errorf("CheckWorkers %d: app.ini holds %q: %v, want %v\n%s", tc.workers, section, got, tc.want, ini)
		}
		if strings.Contains(string(ini), "[queue.pr_patch_checker]\nTYPE") {
			t.Errorf("CheckWorkers %d: app.ini sets the re-test queue's type, want Gitea's on-disk queue\n%s", tc.workers, ini)
		}
		if !tc.want && strings.Contains(string(ini), "pr_patch_checker") {
			t.Errorf("CheckWorkers 0: app.ini names the re-test queue, want Gitea's default\n%s", ini)
		}
	}
}
