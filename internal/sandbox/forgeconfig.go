package sandbox

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"text/template"
)

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
; The test accounts' passwords are hashed with 1,000 rounds instead of
; Gitea's 50,000: each account's creation and each basic-auth request
; (creating its tokens) hashes one, and at 50,000 rounds that was 8% of the
; shared forge's CPU once every request with a token stopped being hashed
; (giteaPatches).
PASSWORD_HASH_ALGO = pbkdf2$1000$50

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
{{if .CheckWorkers}}
; PR re-tests (is it mergeable?) of the forge shared by a package's tests:
; see sharedCheckWorkers.
[queue.pr_patch_checker]
MAX_WORKERS = {{.CheckWorkers}}
{{end}}
[actions]
ENABLED = false

[packages]
ENABLED = false

[cron.update_checker]
ENABLED = false
{{- if .Git}}

[git]
PATH = {{.Git}}
{{- end}}
`))

// forgeSettings fill appINI. Only Port changes between attempts to start.
type forgeSettings struct {
	Dir, StaticRoot string
	Port            int
	SecretKey       string
	InternalToken   string
	JWTSecret       string
	// CheckWorkers, when not 0, runs the forge's PR re-tests in that
	// many workers instead of Gitea's default (one per 2 CPUs).
	CheckWorkers int
	// Git is the forge's git (ForgeGit); "" leaves it to Gitea, which
	// takes the one on PATH.
	Git string
}

// sharedCheckWorkers is the PR re-test workers of a forge that a package's
// tests share (SharedServers, SharedForge). Every merge and update has the
// forge re-test the open PRs of its base, and with Gitea's default on this
// 2-core machine (one worker) each test's re-tests waited behind every other
// test's: TestBehindRefusalIsLearned beside five long tests of merges
// (2026-12-03) read its next PR "not mergeable" 54 times, for 108 s after a
// merge. Four is Gitea's default on an 8-core host. A forge of its own
// (sandbox.Start: the demo, the benchmarks) keeps Gitea's default.
//
// The queue stays Gitea's on-disk one: its channel queue (TYPE = channel)
// loses a unique item for good in Gitea 1.26. PushItem sends the item, then
// adds it to the set of queued items; a worker that takes it in between
// removes it from the set before it is added, so the set keeps it, and every
// later re-test of that PR is refused as already queued: the PR reads "not
// mergeable" for ever (one of twelve in TestBacklogMergesAboutOneCallPerPR,
// a full CI run of 46958d5).
const sharedCheckWorkers = 4

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
