// Package sandbox starts real test servers (forge, agent server, scripted model)
// for tests and the local demo.
package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"
)

const (
	adminUser    = "pooladmin"
	startTimeout = 60 * time.Second
	stopGrace    = 10 * time.Second
)

// Forge is a Gitea server started by StartForge, with its data in Dir.
type Forge struct {
	URL        string // http://127.0.0.1:<port>, no trailing slash
	AdminUser  string
	AdminToken string // scopes ["all"]
	Dir        string

	client *http.Client
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for

	stopOnce sync.Once
	stopErr  error
}

// StartForge starts a Gitea server with a fresh SQLite database in dir (which
// should be empty or missing), which holds everything the server writes; its
// output goes to dir/gitea.log. It creates an admin user and token. The
// server outlives ctx: call Stop. The first call on a machine builds gitea
// (see GiteaBinary), which can take longer than go test's default timeout.
func StartForge(ctx context.Context, dir string, log io.Writer) (*Forge, error) {
	if log == nil {
		log = io.Discard
	}
	bin, staticRoot, err := GiteaBinary(ctx, log)
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: start forge: %w", err)
	}
	start := time.Now()
	g := giteaCmd{bin: bin, dir: dir, settings: newForgeSettings(dir, staticRoot)}
	password := adminUser + "-password"
	if err := g.prepare(ctx, password); err != nil {
		return nil, fmt.Errorf("sandbox: start forge: %w", err)
	}
	f, err := g.serve(ctx)
	if err != nil {
		return nil, fmt.Errorf("sandbox: start forge: %w", err)
	}
	f.AdminToken, err = f.createToken(ctx, adminUser, password)
	if err != nil {
		_ = f.Stop()
		return nil, fmt.Errorf("sandbox: start forge: admin token: %w", err)
	}
	fmt.Fprintf(log, "sandbox: forge ready at %s in %s (data in %s)\n",
		f.URL, time.Since(start).Round(10*time.Millisecond), dir)
	return f, nil
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before gitea binds it: serve then tries another.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// appINI keeps every path inside the work dir, delivers webhooks without
// queue polling, and turns off what a test forge does not need: SSH, LFS, mail, actions, packages, the update checker,
// the OAuth2 provider (its RSA key costs startup time) and the bleve issue
// indexer (the db indexer makes new issues searchable at once).
var appINI = template.Must(template.New("app.ini").Parse(`APP_NAME = pool test forge
RUN_MODE = prod
WORK_PATH = {{.Dir}}

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = {{.Port}}
DOMAIN = 127.0.0.1
ROOT_URL = http://127.0.0.1:{{.Port}}/
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
APP_DATA_PATH = {{.Dir}}/data
STATIC_ROOT_PATH = {{.StaticRoot}}

[database]
DB_TYPE = sqlite3
PATH = {{.Dir}}/data/gitea.db
SQLITE_JOURNAL_MODE = WAL
SQLITE_TIMEOUT = 5000

[repository]
ROOT = {{.Dir}}/repos
DEFAULT_BRANCH = main

[repository.signing]
SIGNING_KEY = none

[security]
INSTALL_LOCK = true
SECRET_KEY = {{.SecretKey}}
INTERNAL_TOKEN = {{.InternalToken}}

[oauth2]
ENABLED = false
JWT_SECRET = {{.JWTSecret}}

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = false
ENABLE_NOTIFY_MAIL = false

[mailer]
ENABLED = false

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[log]
MODE = console
LEVEL = Info
ROOT_PATH = {{.Dir}}/log

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[webhook]
ALLOWED_HOST_LIST = loopback

; Deliver webhooks at once. The default level queue looks for new deliveries
; on a timer that backs off to 2 s when idle, which delays them by up to that.
[queue.webhook_sender]
TYPE = channel

[actions]
ENABLED = false

[packages]
ENABLED = false

[cron.update_checker]
ENABLED = false
`))

// forgeSettings fill appINI. Only Port changes between attempts to start.
type forgeSettings struct {
	Dir, StaticRoot string
	Port            int
	SecretKey       string
	InternalToken   string
	JWTSecret       string
}

func newForgeSettings(dir, staticRoot string) *forgeSettings {
	return &forgeSettings{
		Dir:           dir,
		StaticRoot:    staticRoot,
		SecretKey:     randomHex(20),
		InternalToken: randomHex(32),
		// gitea wants exactly 32 bytes, unpadded URL-safe base64
		JWTSecret: base64.RawURLEncoding.EncodeToString(randomBytes(32)),
	}
}

// usePort picks a free port and writes dir/app.ini for it.
func (s *forgeSettings) usePort() error {
	port, err := freePort()
	if err != nil {
		return fmt.Errorf("free port: %w", err)
	}
	s.Port = port
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(s.confPath())
	if err != nil {
		return err
	}
	if err := appINI.Execute(f, s); err != nil {
		_ = f.Close()
		return fmt.Errorf("write app.ini: %w", err)
	}
	return f.Close()
}

func (s *forgeSettings) confPath() string { return filepath.Join(s.Dir, "app.ini") }

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on Linux
	return b
}

func randomHex(n int) string { return hex.EncodeToString(randomBytes(n)) }

// giteaCmd runs the gitea binary against one work dir.
type giteaCmd struct {
	bin, dir string
	settings *forgeSettings
}

func (g giteaCmd) command(ctx context.Context, args ...string) *exec.Cmd {
	args = append(args, "--config", g.settings.confPath(), "--work-path", g.dir)
	cmd := exec.CommandContext(ctx, g.bin, args...)
	cmd.Dir = g.dir
	cmd.Env = append(os.Environ(),
		"GITEA_WORK_DIR="+g.dir,
		"GITEA_CUSTOM="+filepath.Join(g.dir, "custom"),
		"GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT=true", // CI runs as root
	)
	return cmd
}

// prepare writes app.ini and creates the database schema and the admin user.
func (g giteaCmd) prepare(ctx context.Context, adminPassword string) error {
	if err := g.settings.usePort(); err != nil {
		return err
	}
	if err := g.run(ctx, "migrate"); err != nil {
		return err
	}
	return g.run(ctx, "admin", "user", "create",
		"--username", adminUser, "--password", adminPassword,
		"--email", adminUser+"@example.com", "--admin", "--must-change-password=false")
}

func (g giteaCmd) run(ctx context.Context, args ...string) error {
	out, err := g.command(ctx, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("gitea %s: %w: %s", args[0], err, tail(out, 2000))
	}
	return nil
}

// serve starts `gitea web` and waits until it answers. The port was free when
// picked but gitea binds it only some 700 ms later, so if another process
// took it meanwhile serve tries again on a new port.
func (g giteaCmd) serve(ctx context.Context) (*Forge, error) {
	for attempt := 1; ; attempt++ {
		f, err := g.startWeb()
		if err != nil {
			return nil, err
		}
		err = f.waitReady(ctx)
		if err == nil {
			return f, nil
		}
		_ = f.Stop()
		logTail := f.logTail()
		if attempt < 3 && strings.Contains(logTail, "address already in use") {
			// keep the failed attempt's log out of the next attempt's way
			_ = os.Rename(f.logPath(), fmt.Sprintf("%s.%d", f.logPath(), attempt))
			if err := g.settings.usePort(); err != nil {
				return nil, err
			}
			continue
		}
		return nil, fmt.Errorf("%w\n--- tail of %s ---\n%s", err, f.logPath(), logTail)
	}
}

// startWeb starts `gitea web` in the background. It is not bound to a
// context: the caller owns the process through Stop. The process is killed if
// the test binary dies first, so a crashed test leaves no server behind.
func (g giteaCmd) startWeb() (*Forge, error) {
	logFile, err := os.Create(filepath.Join(g.dir, "gitea.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own copy
	cmd := g.command(context.Background(), "web")
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("gitea web: %w", err)
	}
	f := &Forge{
		URL:       fmt.Sprintf("http://127.0.0.1:%d", g.settings.Port),
		AdminUser: adminUser,
		Dir:       g.dir,
		client:    &http.Client{Timeout: 30 * time.Second},
		cmd:       cmd,
		exited:    make(chan struct{}),
	}
	go func() {
		_ = cmd.Wait()
		close(f.exited)
	}()
	return f, nil
}

// waitReady polls /api/v1/version until it answers 200, the server exits or
// fails to listen, ctx ends or startTimeout passes.
func (f *Forge) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if f.versionOK(ctx) {
			return nil
		}
		// gitea logs a failed listen but keeps running
		if strings.Contains(f.logTail(), "Failed to start server") {
			return errors.New("gitea web could not listen")
		}
		select {
		case <-f.exited:
			return fmt.Errorf("gitea web exited: %v", f.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("no answer on %s/api/v1/version: %w", f.URL, ctx.Err())
		case <-tick.C:
		}
	}
}

func (f *Forge) versionOK(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	status, err := f.Do(ctx, "", http.MethodGet, "/version", nil, nil)
	return err == nil && status == http.StatusOK
}

func (f *Forge) logPath() string { return filepath.Join(f.Dir, "gitea.log") }

func (f *Forge) logTail() string { return fileTail(f.logPath()) }

// Stop ends the server: SIGTERM, then SIGKILL if it has not exited after a
// grace period. It is safe to call more than once, and on a paused server.
func (f *Forge) Stop() error {
	f.stopOnce.Do(func() { f.stopErr = f.stop() })
	return f.stopErr
}

func (f *Forge) stop() error { return stopProcess(f.cmd.Process, f.exited, stopGrace, "forge") }

// Pause freezes the server (SIGSTOP) to simulate an outage: connections are
// accepted by the kernel but never answered. Resume undoes it.
func (f *Forge) Pause() error {
	if err := f.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("sandbox: pause forge: %w", err)
	}
	// The signal is delivered asynchronously: wait until the kernel shows
	// the process stopped, or a request made at once may still be answered.
	stat := fmt.Sprintf("/proc/%d/stat", f.cmd.Process.Pid)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(stat)
		if err != nil {
			return nil // no procfs: the signal was sent, as before
		}
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && len(b) > i+2 && (b[i+2] == 'T' || b[i+2] == 't') {
			return nil
		}
	}
	return errors.New("sandbox: pause forge: the process did not stop within 2s")
}

// Resume continues a server frozen by Pause.
func (f *Forge) Resume() error {
	if err := f.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("sandbox: resume forge: %w", err)
	}
	return nil
}

// LogTail returns the last few kilobytes of the server's output, for test
// failure messages.
func (f *Forge) LogTail() string { return f.logTail() }

// APIError is a forge answer with a status outside 2xx.
type APIError struct {
	Method string
	Path   string
	Status int
	Body   string // the start of the response body
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: status %d: %s", e.Method, e.Path, e.Status, e.Body)
}

const (
	maxBody     = 8 << 20
	maxErrBody  = 1024
	labelColour = "#ededed"
)

// Do sends a JSON request to /api/v1+path (path may carry a query) with the
// token, if any, and decodes a 2xx answer into out, if not nil. Any other
// status is returned together with an *APIError.
func (f *Forge) Do(ctx context.Context, token, method, path string, body any, out any) (status int, err error) {
	return f.call(ctx, tokenAuth(token), method, path, body, out)
}

type authFunc func(*http.Request)

func tokenAuth(token string) authFunc {
	return func(r *http.Request) {
		if token != "" {
			r.Header.Set("Authorization", "token "+token)
		}
	}
}

func basicAuth(user, password string) authFunc {
	return func(r *http.Request) { r.SetBasicAuth(user, password) }
}

func (f *Forge) call(ctx context.Context, auth authFunc, method, path string, body, out any) (int, error) {
	req, err := newJSONRequest(ctx, method, f.URL+"/api/v1"+path, body)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	auth(req)
	resp, err := f.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, &APIError{Method: method, Path: path, Status: resp.StatusCode, Body: snippet(data)}
	}
	if out != nil && len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode answer: %w: %s", method, path, err, snippet(data))
		}
	}
	return resp.StatusCode, nil
}

func newJSONRequest(ctx context.Context, method, target string, body any) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > maxErrBody {
		return string(b[:maxErrBody]) + "..."
	}
	return string(b)
}

// CreateUser creates a user whose password is "<name>-password" and returns
// a token of theirs with scopes ["all"].
func (f *Forge) CreateUser(ctx context.Context, name string) (token string, err error) {
	password := name + "-password"
	user := map[string]any{
		"username":             name,
		"email":                name + "@example.com",
		"password":             password,
		"must_change_password": false,
	}
	if _, err := f.Do(ctx, f.AdminToken, http.MethodPost, "/admin/users", user, nil); err != nil {
		return "", fmt.Errorf("sandbox: create user %s: %w", name, err)
	}
	token, err = f.createToken(ctx, name, password)
	if err != nil {
		return "", fmt.Errorf("sandbox: create user %s: token: %w", name, err)
	}
	return token, nil
}

// ScopedToken returns a new token of user's (made by CreateUser) with only
// the given scopes.
func (f *Forge) ScopedToken(ctx context.Context, user string, scopes []string) (string, error) {
	token, err := f.createScopedToken(ctx, user, user+"-password", scopes)
	if err != nil {
		return "", fmt.Errorf("sandbox: token of %s with scopes %v: %w", user, scopes, err)
	}
	return token, nil
}

// createToken needs the password: gitea creates tokens only with basic auth.
func (f *Forge) createToken(ctx context.Context, user, password string) (string, error) {
	return f.createScopedToken(ctx, user, password, []string{"all"})
}

func (f *Forge) createScopedToken(ctx context.Context, user, password string, scopes []string) (string, error) {
	req := map[string]any{"name": "sandbox-" + randomHex(4), "scopes": scopes}
	var tok struct {
		SHA1 string `json:"sha1"`
	}
	path := "/users/" + url.PathEscape(user) + "/tokens"
	if _, err := f.call(ctx, basicAuth(user, password), http.MethodPost, path, req, &tok); err != nil {
		return "", err
	}
	if tok.SHA1 == "" {
		return "", fmt.Errorf("POST %s: answer has no sha1", path)
	}
	return tok.SHA1, nil
}

// CreateRepo creates a public repository of the token's user, with an
// initial commit on main.
func (f *Forge) CreateRepo(ctx context.Context, ownerToken, name string) error {
	repo := map[string]any{"name": name, "auto_init": true, "default_branch": "main"}
	if _, err := f.Do(ctx, ownerToken, http.MethodPost, "/user/repos", repo, nil); err != nil {
		return fmt.Errorf("sandbox: create repo %s: %w", name, err)
	}
	return nil
}

// CreateOrg creates a public organisation owned by the token's user.
func (f *Forge) CreateOrg(ctx context.Context, ownerToken, org string) error {
	if _, err := f.Do(ctx, ownerToken, http.MethodPost, "/orgs", map[string]any{"username": org, "visibility": "public"}, nil); err != nil {
		return fmt.Errorf("sandbox: create organisation %s: %w", org, err)
	}
	return nil
}

// CreateOrgRepo creates a public repository of the organisation, with an
// initial commit on main when initial, empty (no branch at all) otherwise.
func (f *Forge) CreateOrgRepo(ctx context.Context, ownerToken, org, name string, initial bool) error {
	repo := map[string]any{"name": name, "auto_init": initial, "default_branch": "main"}
	if _, err := f.Do(ctx, ownerToken, http.MethodPost, "/orgs/"+url.PathEscape(org)+"/repos", repo, nil); err != nil {
		return fmt.Errorf("sandbox: create repo %s/%s: %w", org, name, err)
	}
	return nil
}

// AddOwner puts user in the organisation's Owners team.
func (f *Forge) AddOwner(ctx context.Context, ownerToken, org, user string) error {
	var teams []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	if _, err := f.Do(ctx, ownerToken, http.MethodGet, "/orgs/"+url.PathEscape(org)+"/teams", nil, &teams); err != nil {
		return fmt.Errorf("sandbox: list the teams of %s: %w", org, err)
	}
	for _, t := range teams {
		if t.Name == "Owners" {
			path := fmt.Sprintf("/teams/%d/members/%s", t.ID, url.PathEscape(user))
			if _, err := f.Do(ctx, ownerToken, http.MethodPut, path, nil, nil); err != nil {
				return fmt.Errorf("sandbox: add %s to the owners of %s: %w", user, org, err)
			}
			return nil
		}
	}
	return fmt.Errorf("sandbox: %s has no Owners team", org)
}

// ArchiveRepo archives owner/repo.
func (f *Forge) ArchiveRepo(ctx context.Context, ownerToken, owner, repo string) error {
	if _, err := f.Do(ctx, ownerToken, http.MethodPatch, repoPath(owner, repo), map[string]any{"archived": true}, nil); err != nil {
		return fmt.Errorf("sandbox: archive %s/%s: %w", owner, repo, err)
	}
	return nil
}

// AddCollaborator gives user a permission ("read", "write" or "admin") on
// owner/repo.
func (f *Forge) AddCollaborator(ctx context.Context, ownerToken, owner, repo, user, permission string) error {
	path := repoPath(owner, repo) + "/collaborators/" + url.PathEscape(user)
	body := map[string]any{"permission": permission}
	if _, err := f.Do(ctx, ownerToken, http.MethodPut, path, body, nil); err != nil {
		return fmt.Errorf("sandbox: add collaborator %s to %s/%s: %w", user, owner, repo, err)
	}
	return nil
}

// CreateBranchWithFile creates branch from main with one commit that adds
// the file at path.
func (f *Forge) CreateBranchWithFile(ctx context.Context, token, owner, repo, branch, path, content string) error {
	body := map[string]any{
		"content":    base64.StdEncoding.EncodeToString([]byte(content)),
		"branch":     "main",
		"new_branch": branch,
		"message":    "add " + path,
	}
	if _, err := f.Do(ctx, token, http.MethodPost, contentsPath(owner, repo, path), body, nil); err != nil {
		return fmt.Errorf("sandbox: create branch %s in %s/%s: %w", branch, owner, repo, err)
	}
	return nil
}

// Change is a user's repository with one PR open into main.
type Change struct {
	Token string // the user's
	PR    int
	Head  string
}

// OpenChange creates user with a public repository repo, a branch of it
// adding file, and that branch's PR into main.
func (f *Forge) OpenChange(ctx context.Context, user, repo, branch, file string) (Change, error) {
	token, err := f.CreateUser(ctx, user)
	if err != nil {
		return Change{}, err
	}
	if err := f.CreateRepo(ctx, token, repo); err != nil {
		return Change{}, err
	}
	if err := f.CreateBranchWithFile(ctx, token, user, repo, branch, file, file+"\n"); err != nil {
		return Change{}, err
	}
	n, head, err := f.CreatePR(ctx, token, user, repo, branch, "main", "Add "+file, "")
	return Change{Token: token, PR: n, Head: head}, err
}

// PushFile commits content to path on an existing branch, creating or
// replacing the file, and returns the new commit's SHA.
//
// Gitea's contents API answers some pushes with a 500 and an empty message:
// it pushed the commit and then failed a second ref update of its own
// ("cannot lock ref"), or it based the commit on the branch's tip in its
// database, which a push that has just landed updates only a moment later,
// and git rejected the push ("PushOutOfDate", not a fast-forward). A 500
// whose commit is the branch's head is taken as landed; any other is tried
// again, three times at most.
func (f *Forge) PushFile(ctx context.Context, token, owner, repo, branch, path, content, message string) (string, error) {
	for try := 1; ; try++ {
		sha, status, err := f.pushFile(ctx, token, owner, repo, branch, path, content, message)
		if err == nil || status != http.StatusInternalServerError {
			return sha, err
		}
		if sha, ok := f.landedAnyway(ctx, token, owner, repo, branch, message); ok {
			return sha, nil
		}
		if try == 3 {
			return "", err
		}
		select {
		case <-ctx.Done():
			return "", err
		case <-time.After(time.Second):
		}
	}
}

// pushFile is one try of PushFile.
func (f *Forge) pushFile(ctx context.Context, token, owner, repo, branch, path, content, message string) (string, int, error) {
	blob, err := f.fileSHA(ctx, token, owner, repo, branch, path)
	if err != nil {
		return "", 0, fmt.Errorf("sandbox: push %s to %s/%s@%s: %w", path, owner, repo, branch, err)
	}
	body := map[string]any{
		"content": base64.StdEncoding.EncodeToString([]byte(content)),
		"branch":  branch,
		"message": message,
	}
	method := http.MethodPost
	if blob != "" {
		method = http.MethodPut
		body["sha"] = blob
	}
	var resp struct {
		Commit struct {
			SHA string `json:"sha"`
		} `json:"commit"`
	}
	status, err := f.Do(ctx, token, method, contentsPath(owner, repo, path), body, &resp)
	if err != nil {
		return "", status, fmt.Errorf("sandbox: push %s to %s/%s@%s: %w", path, owner, repo, branch, err)
	}
	return resp.Commit.SHA, status, nil
}

// landedAnyway reports the branch's head when it is the commit a push that
// answered 500 was making (its message).
func (f *Forge) landedAnyway(ctx context.Context, token, owner, repo, branch, message string) (string, bool) {
	var b struct {
		Commit struct {
			ID      string `json:"id"`
			Message string `json:"message"`
		} `json:"commit"`
	}
	if _, err := f.Do(ctx, token, http.MethodGet, repoPath(owner, repo)+"/branches/"+url.PathEscape(branch), nil, &b); err != nil {
		return "", false
	}
	return b.Commit.ID, strings.TrimSpace(b.Commit.Message) == strings.TrimSpace(message)
}

// fileSHA returns the blob SHA of the file at path on ref, or "" if there is
// no such file.
func (f *Forge) fileSHA(ctx context.Context, token, owner, repo, ref, path string) (string, error) {
	var file struct {
		Type string `json:"type"`
		SHA  string `json:"sha"`
	}
	status, err := f.Do(ctx, token, http.MethodGet, contentsPath(owner, repo, path)+"?ref="+url.QueryEscape(ref), nil, &file)
	if status == http.StatusNotFound {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if file.Type != "file" {
		return "", fmt.Errorf("%s is a %s, not a file", path, file.Type)
	}
	return file.SHA, nil
}

// CreatePR opens a pull request from head into base and returns its number
// and head commit.
func (f *Forge) CreatePR(ctx context.Context, token, owner, repo, head, base, title, body string) (number int, headSHA string, err error) {
	req := map[string]any{"head": head, "base": base, "title": title, "body": body}
	var pr struct {
		Number int `json:"number"`
		Head   struct {
			SHA string `json:"sha"`
		} `json:"head"`
	}
	if _, err := f.Do(ctx, token, http.MethodPost, repoPath(owner, repo)+"/pulls", req, &pr); err != nil {
		return 0, "", fmt.Errorf("sandbox: create PR %s into %s in %s/%s: %w", head, base, owner, repo, err)
	}
	return pr.Number, pr.Head.SHA, nil
}

// PostStatus reports a commit status (state: pending, success, error,
// failure or warning) under the name statusContext.
func (f *Forge) PostStatus(ctx context.Context, token, owner, repo, sha, statusContext, state, targetURL, description string) error {
	body := map[string]any{
		"context":     statusContext,
		"state":       state,
		"target_url":  targetURL,
		"description": description,
	}
	if _, err := f.Do(ctx, token, http.MethodPost, repoPath(owner, repo)+"/statuses/"+url.PathEscape(sha), body, nil); err != nil {
		return fmt.Errorf("sandbox: post status %s=%s on %s/%s@%s: %w", statusContext, state, owner, repo, sha, err)
	}
	return nil
}

// AddLabel attaches the label named label to issue or PR number, creating the
// label in the repository first if it does not exist.
func (f *Forge) AddLabel(ctx context.Context, token, owner, repo string, number int, label string) error {
	id, err := f.labelID(ctx, token, owner, repo, label)
	if err != nil {
		return fmt.Errorf("sandbox: add label %q to %s/%s#%d: %w", label, owner, repo, number, err)
	}
	path := fmt.Sprintf("%s/issues/%d/labels", repoPath(owner, repo), number)
	if _, err := f.Do(ctx, token, http.MethodPost, path, map[string]any{"labels": []int64{id}}, nil); err != nil {
		return fmt.Errorf("sandbox: add label %q to %s/%s#%d: %w", label, owner, repo, number, err)
	}
	return nil
}

// labelID finds the repository label named name, or creates it.
func (f *Forge) labelID(ctx context.Context, token, owner, repo, name string) (int64, error) {
	type label struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	for page := 1; ; page++ {
		var labels []label
		path := fmt.Sprintf("%s/labels?limit=50&page=%d", repoPath(owner, repo), page)
		if _, err := f.Do(ctx, token, http.MethodGet, path, nil, &labels); err != nil {
			return 0, err
		}
		if len(labels) == 0 {
			break
		}
		for _, l := range labels {
			if l.Name == name {
				return l.ID, nil
			}
		}
	}
	var created label
	body := map[string]any{"name": name, "color": labelColour}
	if _, err := f.Do(ctx, token, http.MethodPost, repoPath(owner, repo)+"/labels", body, &created); err != nil {
		return 0, err
	}
	return created.ID, nil
}

func repoPath(owner, repo string) string {
	return "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(repo)
}

// contentsPath escapes each segment of a file path but keeps its slashes.
func contentsPath(owner, repo, file string) string {
	segs := strings.Split(file, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return repoPath(owner, repo) + "/contents/" + strings.Join(segs, "/")
}

// ProtectBranch sets the branch protection rule named after branch, with
// the given settings (the forge's BranchProtection fields, e.g.
// "required_approvals": 2): it creates the rule, or edits it if it exists.
func (f *Forge) ProtectBranch(ctx context.Context, token, owner, repo, branch string, settings map[string]any) error {
	rule := repoPath(owner, repo) + "/branch_protections/" + url.PathEscape(branch)
	status, err := f.Do(ctx, token, http.MethodGet, rule, nil, nil)
	switch {
	case status == http.StatusNotFound:
		body := map[string]any{"rule_name": branch}
		for k, v := range settings {
			body[k] = v
		}
		_, err = f.Do(ctx, token, http.MethodPost, repoPath(owner, repo)+"/branch_protections", body, nil)
	case err == nil:
		_, err = f.Do(ctx, token, http.MethodPatch, rule, settings, nil)
	}
	if err != nil {
		return fmt.Errorf("sandbox: protect %s of %s/%s: %w", branch, owner, repo, err)
	}
	return nil
}

// Review submits a review (event APPROVED, REQUEST_CHANGES or COMMENT) on
// PR n at head, as the token's account, and returns the review's official
// flag as the forge set it.
func (f *Forge) Review(ctx context.Context, token, owner, repo string, n int, head, event, body string) (official bool, err error) {
	var r struct {
		Official bool `json:"official"`
	}
	req := map[string]any{"event": event, "body": body, "commit_id": head}
	path := fmt.Sprintf("%s/pulls/%d/reviews", repoPath(owner, repo), n)
	if _, err := f.Do(ctx, token, http.MethodPost, path, req, &r); err != nil {
		return false, fmt.Errorf("sandbox: review %s/%s#%d: %w", owner, repo, n, err)
	}
	return r.Official, nil
}
