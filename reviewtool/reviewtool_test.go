package reviewtool

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pool/internal/sandbox"
	"pool/sessionmark"
	"pool/texts"
)

func TestSignatureIsThePools(t *testing.T) {
	if Signature != texts.Signature {
		t.Errorf("Signature = %q, want the pool's %q", Signature, texts.Signature)
	}
	if !slices.Equal(ReviewerScopes, sandbox.ReviewerScopes) {
		t.Errorf("the sandbox's reviewer has scopes %v, the tool says it needs %v", sandbox.ReviewerScopes, ReviewerScopes)
	}
	if EnvForgeURL != sandbox.EnvReviewForgeURL || EnvTokenFile != sandbox.EnvReviewTokenFile {
		t.Errorf("the sandbox sets %s and %s, the tool reads %s and %s",
			sandbox.EnvReviewForgeURL, sandbox.EnvReviewTokenFile, EnvForgeURL, EnvTokenFile)
	}
}

func TestCheckForgeURL(t *testing.T) {
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://forge.example.org", true},
		{"http://127.0.0.1:3000", true},
		{"http://localhost:3000", true},
		{"http://forge.example.org", false},
		{"https://u:p@forge.example.org", false},
		{"forge.example.org", false},
		{"", false},
	}
	for _, tt := range tests {
		if err := checkForgeURL("--forge", tt.url); (err == nil) != tt.ok {
			t.Errorf("checkForgeURL(%q) = %v, want ok=%v", tt.url, err, tt.ok)
		}
	}
}

func TestSignOnce(t *testing.T) {
	once := sign("Looks good.\n")
	if once != "Looks good."+Signature {
		t.Errorf("sign = %q", once)
	}
	if twice := sign(once); twice != once {
		t.Errorf("signing a signed body again gave %q", twice)
	}
}

func TestParseLineComment(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // path:line:body, "" for an error
	}{
		{"plain", "main.go:12:nil check missing", "main.go:12:nil check missing"},
		{"colon in text", "a/b.go:3:see: here", "a/b.go:3:see: here"},
		{"multi-line text", "x.go:1:one\ntwo", "x.go:1:one\ntwo"},
		{"line zero", "x.go:0:no", ""},
		{"no line", "x.go:text", ""},
		{"empty text", "x.go:4: ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lc, err := parseLineComment(tt.in)
			got := ""
			if err == nil {
				got = fmt.Sprintf("%s:%d:%s", lc.Path, lc.Line, lc.Body)
			}
			if got != tt.want {
				t.Errorf("parseLineComment(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got, err := readToken(write("ok", "  tok123\nsecond line\n", 0o600)); err != nil || got != "tok123" {
		t.Errorf("readToken = %q, %v; want tok123", got, err)
	}
	if _, err := readToken(write("world", "tok\n", 0o644)); err == nil || !strings.Contains(err.Error(), "readable by every user") {
		t.Errorf("a world-readable token file: %v; want refused", err)
	}
	if _, err := readToken(write("empty", "\n", 0o600)); err == nil {
		t.Error("an empty token file was accepted")
	}
	if _, err := readToken(""); err == nil || !strings.Contains(err.Error(), EnvTokenFile) {
		t.Errorf("no token file: %v; want the variable named", err)
	}
}

// run runs the tool in-process with env as its whole environment.
func run(ctx context.Context, env map[string]string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(ctx, args, func(k string) string { return env[k] }, &out, &errb)
	return code, out.String(), errb.String()
}

// enterSession makes dir (a new directory if "") the work tree of a
// session started for repo#pr at head: its .git/HEAD, if it has none, and
// the record the pool writes beside it. It becomes the working directory.
func enterSession(t *testing.T, dir, repo string, pr int, head string) sessionmark.Record {
	t.Helper()
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "tree")
		if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte(head+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const session = "ses_test"
	r := sessionmark.Record{Repo: repo, PR: pr, Head: head, Session: session,
		Mark: sessionmark.NewKey("the pool's token").Mark(repo, pr, head, session)}
	if err := sessionmark.Write(dir, r); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	return r
}

func tokenFile(t *testing.T, token string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "reviewer-token")
	if err := os.WriteFile(p, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTokenNeverPrinted: a forge (a fake in front, in addition to the real
// one below) that echoes the request's Authorization header in every
// answer, errors included: nothing the tool prints shows the token.
func TestTokenNeverPrinted(t *testing.T) {
	const token = "s3cr3t-reviewer-token-0123456789"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"message": "no: you sent %s"}`, auth)
	}))
	defer echo.Close()
	env := map[string]string{EnvForgeURL: echo.URL, EnvTokenFile: tokenFile(t, token)}
	ctx := context.Background()
	head := strings.Repeat("0123456789", 4)
	enterSession(t, "", "o/r", 1, head)
	for _, args := range [][]string{
		{"pr", "o/r#1"},
		{"review", "o/r#1", "--commit", head, "--verdict", "approve", "--body", "ok"},
		{"comment", "o/r#1", "--body", "hello"},
	} {
		code, stdout, stderr := run(ctx, env, args...)
		if code == 0 {
			t.Errorf("%v: exit 0 against a forge that refuses everything", args)
		}
		if strings.Contains(stdout+stderr, token) {
			t.Errorf("%v printed the token:\nstdout %s\nstderr %s", args, stdout, stderr)
		}
		if !strings.Contains(stderr, "403") {
			t.Errorf("%v: stderr %q does not say what the forge answered", args, stderr)
		}
	}
}

// forgeFixture is a real forge with a PR by an author and a reviewer with
// write access, each named for the test.
type forgeFixture struct {
	forge         *sandbox.Forge
	author        string
	authorToken   string
	reviewer      string
	reviewerToken string
	repo          string
	pr            int
	head          string
	env           map[string]string
}

func newForgeFixture(t *testing.T) forgeFixture {
	t.Helper()
	f := sandbox.ForgeForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	id := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(id) > 30 {
		id = id[len(id)-30:]
	}
	fx := forgeFixture{forge: f, author: "a-" + id, reviewer: "r-" + id, repo: "repo"}
	ch, err := f.OpenChange(ctx, fx.author, fx.repo, "feature", "feature.txt")
	if err != nil {
		t.Fatal(err)
	}
	fx.authorToken, fx.pr, fx.head = ch.Token, ch.PR, ch.Head
	if _, err = f.CreateUser(ctx, fx.reviewer); err != nil {
		t.Fatal(err)
	}
	if fx.reviewerToken, err = f.ScopedToken(ctx, fx.reviewer, ReviewerScopes); err != nil {
		t.Fatal(err)
	}
	if err := f.AddCollaborator(ctx, fx.authorToken, fx.author, fx.repo, fx.reviewer, "write"); err != nil {
		t.Fatal(err)
	}
	fx.env = map[string]string{EnvForgeURL: f.URL, EnvTokenFile: tokenFile(t, fx.reviewerToken)}
	return fx
}

// enter makes dir the work tree of a session for the fixture's PR at its
// head (enterSession).
func (fx forgeFixture) enter(t *testing.T, dir string) sessionmark.Record {
	return enterSession(t, dir, fx.author+"/"+fx.repo, fx.pr, fx.head)
}

func (fx forgeFixture) target() string { return fmt.Sprintf("%s/%s#%d", fx.author, fx.repo, fx.pr) }

type forgeReview struct {
	ID       int64  `json:"id"`
	State    string `json:"state"`
	Body     string `json:"body"`
	CommitID string `json:"commit_id"`
	Official bool   `json:"official"`
	User     struct {
		Login string `json:"login"`
	} `json:"user"`
}

func (fx forgeFixture) reviews(t *testing.T) []forgeReview {
	t.Helper()
	var rs []forgeReview
	if _, err := fx.forge.Do(context.Background(), fx.authorToken, http.MethodGet,
		fmt.Sprintf("/repos/%s/%s/pulls/%d/reviews", fx.author, fx.repo, fx.pr), nil, &rs); err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestReviewLineAndCommentOnTheRealForge: the tool files a review with a
// verdict and a line comment on the head, a line comment alone, and a
// comment, each signed and by the reviewer's account; `pr` reads the PR.
func TestReviewLineAndCommentOnTheRealForge(t *testing.T) {
	fx := newForgeFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()

	rec := fx.enter(t, "")
	code, stdout, stderr := run(ctx, fx.env, "pr", fx.target())
	if code != 0 || !strings.Contains(stdout, `"head_sha": "`+fx.head+`"`) || !strings.Contains(stdout, `"author": "`+fx.author+`"`) {
		t.Fatalf("pr: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = run(ctx, fx.env, "review", fx.target(), "--commit", fx.head, "--verdict", "approve",
		"--body", "Reads well.", "--comment", "feature.txt:1:A fine line.")
	if code != 0 || !strings.Contains(stdout, `"posted": "review"`) {
		t.Fatalf("review: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = run(ctx, fx.env, "line", fx.target(), "--commit", fx.head,
		"--path", "feature.txt", "--line", "1", "--body", "Second look:\nstill fine.")
	if code != 0 {
		t.Fatalf("line: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr = run(ctx, fx.env, "comment", fx.target(), "--body", "Thanks."); code != 0 {
		t.Fatalf("comment: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// Texts that would publish the token, or read standard input, are refused
	// before anything is posted.
	for _, args := range [][]string{
		{"comment", fx.target(), "--body", "see " + fx.reviewerToken},
		{"comment", fx.target(), "--body", "-"},
		{"review", fx.target(), "--commit", fx.head, "--verdict", "comment", "--body", "x", "--comment", "feature.txt:1:" + fx.reviewerToken},
	} {
		if code, stdout, stderr := run(ctx, fx.env, args...); code != exitUsage || strings.Contains(stdout+stderr, fx.reviewerToken) {
			t.Errorf("%s: exit %d, %q %q; want %d and no token shown", args[0], code, stdout, stderr, exitUsage)
		}
	}

	rs := fx.reviews(t)
	if len(rs) != 2 {
		t.Fatalf("reviews %+v, want the approval and the line comment's review", rs)
	}
	approval, line := rs[0], rs[1]
	if approval.State != "APPROVED" || approval.CommitID != fx.head || approval.User.Login != fx.reviewer ||
		!approval.Official || approval.Body != "Reads well."+Signature+sessionmark.Tag(rec.Mark) {
		t.Errorf("approval %+v; want APPROVED on %s by %s, official, signed", approval, fx.head, fx.reviewer)
	}
	if line.State != "COMMENT" || line.CommitID != fx.head {
		t.Errorf("line review %+v; want COMMENT on %s", line, fx.head)
	}
	for _, r := range rs {
		var cs []struct {
			Body     string `json:"body"`
			Path     string `json:"path"`
			Position int    `json:"position"`
		}
		if _, err := fx.forge.Do(ctx, fx.authorToken, http.MethodGet,
			fmt.Sprintf("/repos/%s/%s/pulls/%d/reviews/%d/comments", fx.author, fx.repo, fx.pr, r.ID), nil, &cs); err != nil {
			t.Fatal(err)
		}
		if len(cs) != 1 || cs[0].Path != "feature.txt" || cs[0].Position != 1 || !strings.HasSuffix(cs[0].Body, Signature) {
			t.Errorf("review %d's line comments %+v; want one, signed, on feature.txt line 1", r.ID, cs)
		}
	}
	var comments []struct {
		Body string `json:"body"`
		User struct {
			Login string `json:"login"`
		} `json:"user"`
	}
	if _, err := fx.forge.Do(ctx, fx.authorToken, http.MethodGet,
		fmt.Sprintf("/repos/%s/%s/issues/%d/comments", fx.author, fx.repo, fx.pr), nil, &comments); err != nil {
		t.Fatal(err)
	}
	if len(comments) != 1 || comments[0].Body != "Thanks."+Signature || comments[0].User.Login != fx.reviewer {
		t.Errorf("comments %+v; want one signed by %s", comments, fx.reviewer)
	}
}

// TestReviewRefusesAnotherCommit: once the head has moved, a review of the
// old head is refused and nothing is filed; an unknown verdict is a usage
// error.
func TestReviewRefusesAnotherCommit(t *testing.T) {
	fx := newForgeFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	newHead, err := fx.forge.PushFile(ctx, fx.authorToken, fx.author, fx.repo, "feature", "more.txt", "more\n", "more")
	if err != nil {
		t.Fatal(err)
	}
	fx.enter(t, "")
	code, _, stderr := run(ctx, fx.env, "review", fx.target(), "--commit", fx.head, "--verdict", "approve", "--body", "ok")
	if code != exitFail || !strings.Contains(stderr, newHead) {
		t.Errorf("review of the old head: exit %d, %q; want 1 naming the head %s", code, stderr, newHead)
	}
	if code, _, _ := run(ctx, fx.env, "review", fx.target(), "--commit", newHead, "--verdict", "merge", "--body", "ok"); code != exitUsage {
		t.Errorf("verdict merge: exit %d, want %d", code, exitUsage)
	}
	if rs := fx.reviews(t); len(rs) != 0 {
		t.Errorf("reviews filed: %+v; want none", rs)
	}
}

// TestThereIsNoPush: the tool pushes nothing; a fixer commits and the pool
// pushes (clone.PushFix), with a token the agent side never sees.
func TestThereIsNoPush(t *testing.T) {
	env := map[string]string{EnvForgeURL: "http://127.0.0.1:9", EnvTokenFile: tokenFile(t, "0123456789abcdef")}
	code, stdout, stderr := run(context.Background(), env, "push", "o/r#1")
	if code != exitUsage || strings.Contains(usage, "push") {
		t.Errorf("push: exit %d, want %d, an unknown command\n%s\n%s", code, exitUsage, stdout, stderr)
	}
}

// TestActsOnlyForItsSession: in the work tree of a session for o/r#1, the
// tool refuses any other PR or repository (exit 2, naming the session's
// PR), a verdict on a head prefix or on another commit, a body carrying a
// session mark, and a tree whose HEAD moved; outside a session's tree it
// refuses everything and says why. Nothing reaches the forge (nothing
// answers at its URL).
func TestActsOnlyForItsSession(t *testing.T) {
	ctx := context.Background()
	env := map[string]string{EnvForgeURL: "http://127.0.0.1:9", EnvTokenFile: tokenFile(t, "tok-0123456789")}
	head := strings.Repeat("ab", 20)
	other := strings.Repeat("cd", 20)
	outside := t.TempDir()
	t.Chdir(outside)
	code, _, stderr := run(ctx, env, "review", "o/r#1", "--commit", head, "--verdict", "approve", "--body", "ok")
	if code != exitUsage || !strings.Contains(stderr, "not the work tree of a session the pool started") {
		t.Errorf("outside a session's tree: exit %d, %q; want %d saying why", code, stderr, exitUsage)
	}
	enterSession(t, "", "o/r", 1, head)
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"another PR", []string{"review", "o/r#2", "--commit", head, "--verdict", "approve", "--body", "ok"}, exitUsage, "may act only on o/r#1"},
		{"another repository", []string{"review", "x/r#1", "--commit", head, "--verdict", "approve", "--body", "ok"}, exitUsage, "may act only on o/r#1"},
		{"another PR's data", []string{"pr", "o/r#2"}, exitUsage, "may act only on o/r#1"},
		{"a comment elsewhere", []string{"comment", "o/r#2", "--body", "hi"}, exitUsage, "may act only on o/r#1"},
		{"a short commit", []string{"review", "o/r#1", "--commit", head[:7], "--verdict", "approve", "--body", "ok"}, exitUsage, "not a full commit id"},
		{"another commit", []string{"review", "o/r#1", "--commit", other, "--verdict", "approve", "--body", "ok"}, exitUsage, "not the head this session was started for"},
		{"a line on a prefix", []string{"line", "o/r#1", "--commit", head[:12], "--path", "a", "--line", "1", "--body", "x"}, exitUsage, "not a full commit id"},
		{"a forged mark", []string{"review", "o/r#1", "--commit", head, "--verdict", "approve", "--body", "ok" + sessionmark.Tag("ses_x."+strings.Repeat("0", 32))}, exitUsage, "session mark"},
	} {
		code, stdout, stderr := run(ctx, env, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, %q %q; want %d saying %q", tt.name, code, stdout, stderr, tt.code, tt.want)
		}
	}
	if err := os.WriteFile(filepath.Join(".git", "HEAD"), []byte(other+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = run(ctx, env, "review", "o/r#1", "--commit", head, "--verdict", "approve", "--body", "ok")
	if code != exitFail || !strings.Contains(stderr, "work tree's HEAD is") {
		t.Errorf("a tree whose HEAD moved: exit %d, %q; want %d", code, stderr, exitFail)
	}
}
