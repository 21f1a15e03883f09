// Command forgehook runs the test forge's pre- and post-receive hooks in
// place of `gitea hook`: each push to the test forge ran those two as starts
// of the 150 MB gitea binary, about 0.3 s of CPU each before doing anything,
// the forge's largest cost in the end-to-end tests after its server. It
// does what gitea's hook command does for them (Gitea 1.26, cmd/hook.go):
// read the pushed refs and hand them, with the pusher the forge put in the
// environment, to the forge's internal hook API, which decides; a refusal
// exits 1 with the forge's message, as gitea's does. The sandbox writes the
// hook scripts that run it (internal/sandbox, trimHooks).
//
// Usage: forgehook -config FILE pre-receive|post-receive, where FILE holds
// {"url": the forge's local root URL, "token": its internal token}.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// batch is how many refs one call to the hook API carries, as gitea's.
const batch = 30

// callTimeout bounds one call to the hook API; a post-receive hook may
// take long (it fires the forge's push handling), as gitea's does.
const callTimeout = 10 * time.Minute

// options is the body of a call to the forge's hook API (private.HookOptions).
type options struct {
	OldCommitIDs                    []string
	NewCommitIDs                    []string
	RefFullNames                    []string
	UserID                          int64
	UserName                        string `json:",omitempty"`
	GitObjectDirectory              string
	GitAlternativeObjectDirectories string
	GitQuarantinePath               string
	GitPushOptions                  map[string]string
	PullRequestID                   int64
	PushTrigger                     string `json:",omitempty"`
	DeployKeyID                     int64
	IsWiki                          bool
	ActionsTaskID                   int64
}

// postReceiveAnswer is the part of the forge's answer to post-receive that
// matters here.
type postReceiveAnswer struct {
	RepoWasEmpty bool
}

// refusal is a hook API answer that is not 2xx.
type refusal struct {
	Err     string `json:"err"`
	UserMsg string `json:"user_msg"`
}

type hook struct {
	api, token string
	client     *http.Client
}

func main() {
	config := flag.String("config", "", `file holding {"url": the forge's local root URL, "token": its internal token}`)
	flag.Parse()
	if flag.NArg() != 1 || *config == "" {
		fmt.Fprintln(os.Stderr, "usage: forgehook -config FILE pre-receive|post-receive")
		os.Exit(2)
	}
	h, err := load(*config)
	if err != nil {
		refuse("", err.Error())
	}
	switch name := flag.Arg(0); name {
	case "pre-receive":
		h.preReceive(os.Stdin)
	case "post-receive":
		h.postReceive(os.Stdin)
	default:
		fmt.Fprintf(os.Stderr, "forgehook: no hook %q\n", name)
		os.Exit(2)
	}
}

// Config is what the hook needs to know of the forge.
type Config struct {
	URL   string `json:"url"`   // the forge's local root URL
	Token string `json:"token"` // its INTERNAL_TOKEN
}

func load(path string) (hook, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return hook{}, fmt.Errorf("forgehook: read the config: %w", err)
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil || c.URL == "" || c.Token == "" {
		return hook{}, fmt.Errorf("forgehook: config %s: want a url and a token (%v)", path, err)
	}
	return hook{api: strings.TrimSuffix(c.URL, "/") + "/api/internal/hook/", token: c.Token, client: &http.Client{}}, nil
}

// pushOpts reads the push options git put in the environment.
func pushOpts() map[string]string {
	opts := map[string]string{}
	n, _ := strconv.Atoi(os.Getenv("GIT_PUSH_OPTION_COUNT"))
	for i := range n {
		if k, v, ok := strings.Cut(os.Getenv(fmt.Sprintf("GIT_PUSH_OPTION_%d", i)), "="); ok {
			opts[k] = v
		}
	}
	return opts
}

func envInt(name string) int64 {
	n, _ := strconv.ParseInt(os.Getenv(name), 10, 64)
	return n
}

func envBool(name string) bool {
	b, _ := strconv.ParseBool(os.Getenv(name))
	return b
}

// baseOptions is what the environment says about the push.
func baseOptions() options {
	return options{
		UserID:                          envInt("GITEA_PUSHER_ID"),
		GitObjectDirectory:              os.Getenv("GIT_OBJECT_DIRECTORY"),
		GitAlternativeObjectDirectories: os.Getenv("GIT_ALTERNATE_OBJECT_DIRECTORIES"),
		GitQuarantinePath:               os.Getenv("GIT_QUARANTINE_PATH"),
		GitPushOptions:                  pushOpts(),
		PullRequestID:                   envInt("GITEA_PR_ID"),
		DeployKeyID:                     envInt("GITEA_DEPLOY_KEY_ID"),
		ActionsTaskID:                   envInt("GITEA_ACTIONS_TASK_ID"),
		IsWiki:                          envBool("GITEA_REPO_IS_WIKI"),
	}
}

// internal reports a push the forge makes to a PR's refs/pull/N/head,
// which the hooks let through unexamined, as gitea's do.
func internal() bool { return envBool("GITEA_INTERNAL_PUSH") }

// fromForge reports whether the forge set up the push (gitea refuses a
// push without its environment, OnlyAllowPushIfGiteaEnvironmentSet).
func fromForge() bool { return os.Getenv("SSH_ORIGINAL_COMMAND") != "" }

// refs reads the hook's stdin: "old new ref" a line; other lines are
// skipped, as gitea skips them. A wiki's refs are not sent, as gitea's.
func refs(in io.Reader) (old, new, names []string, err error) {
	s := bufio.NewScanner(in)
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) != 3 {
			continue
		}
		old, new, names = append(old, f[0]), append(new, f[1]), append(names, f[2])
	}
	if envBool("GITEA_REPO_IS_WIKI") {
		return nil, nil, nil, s.Err()
	}
	return old, new, names, s.Err()
}

func (h hook) preReceive(in io.Reader) {
	if internal() {
		return
	}
	if !fromForge() {
		refuse("Rejecting changes as Gitea environment not set.", "")
	}
	old, new, names, err := refs(in)
	if err != nil {
		refuse("Hook failed: stdin read error", err.Error())
	}
	for i := 0; i < len(names); i += batch {
		j := min(i+batch, len(names))
		o := baseOptions()
		o.OldCommitIDs, o.NewCommitIDs, o.RefFullNames = old[i:j], new[i:j], names[i:j]
		if err := h.call("pre-receive", o, nil); err != nil {
			refuseErr(err)
		}
	}
}

func (h hook) postReceive(in io.Reader) {
	// gitea runs this before anything else, for every push
	if out, err := exec.Command("git", "update-server-info").CombinedOutput(); err != nil {
		refuse("", fmt.Sprintf("git update-server-info: %v: %s", err, out))
	}
	if internal() {
		return // gitea's does nothing more for it
	}
	if !fromForge() {
		refuse("Rejecting changes as Gitea environment not set.", "")
	}
	old, new, names, err := refs(in)
	if err != nil {
		refuse("Hook failed: stdin read error", err.Error())
	}
	wasEmpty := false
	for i := 0; i < len(names); i += batch {
		j := min(i+batch, len(names))
		o := baseOptions()
		o.UserName, o.PushTrigger = os.Getenv("GITEA_PUSHER_NAME"), os.Getenv("GITEA_PUSH_TRIGGER")
		o.OldCommitIDs, o.NewCommitIDs, o.RefFullNames = old[i:j], new[i:j], names[i:j]
		var answer postReceiveAnswer
		if err := h.call("post-receive", o, &answer); err != nil {
			refuseErr(err)
		}
		wasEmpty = wasEmpty || answer.RepoWasEmpty
	}
	// gitea's: an empty repository whose first push leads with master gets
	// master as its default branch
	if wasEmpty && len(names) > 0 && names[0] == "refs/heads/master" && strings.Trim(new[0], "0") != "" {
		if err := h.call("set-default-branch", nil, nil, "master"); err != nil {
			refuseErr(err)
		}
	}
}

// hookError is a refusal or a failed call, with the message for the pusher.
type hookError struct{ userMsg, detail string }

func (e *hookError) Error() string { return e.userMsg + ": " + e.detail }

// call posts body to the hook API's route for the pushed repository.
func (h hook) call(route string, body any, answer any, extra ...string) error {
	path := route + "/" + url.PathEscape(os.Getenv("GITEA_REPO_USER_NAME")) + "/" + url.PathEscape(os.Getenv("GITEA_REPO_NAME"))
	for _, e := range extra {
		path += "/" + url.PathEscape(e)
	}
	var payload io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return &hookError{"Internal Server Error", err.Error()}
		}
		payload = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.api+path, payload)
	if err != nil {
		return &hookError{"Internal Server Connection Error", err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Real-IP", "127.0.0.1")
	req.Header.Set("X-Gitea-Internal-Auth", "Bearer "+h.token)
	resp, err := h.client.Do(req)
	if err != nil {
		return &hookError{"Internal Server Connection Error", err.Error()}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return &hookError{"Internal Server Response Reading Failed", err.Error()}
	}
	if resp.StatusCode/100 != 2 {
		var r refusal
		if err := json.Unmarshal(b, &r); err != nil {
			return &hookError{"Internal Server Error Decoding Failed", fmt.Sprintf("%s %s: %d", route, err, resp.StatusCode)}
		}
		if r.UserMsg == "" {
			r.UserMsg = "Internal Server Error (no message for end users)"
		}
		return &hookError{r.UserMsg, fmt.Sprintf("%s: %d %s", route, resp.StatusCode, r.Err)}
	}
	if answer != nil {
		if err := json.Unmarshal(b, answer); err != nil {
			return &hookError{"Internal Server Error Decoding Failed", err.Error()}
		}
	}
	return nil
}

func refuseErr(err error) {
	var he *hookError
	if errors.As(err, &he) {
		refuse(he.userMsg, he.detail)
	}
	refuse("", err.Error())
}

// refuse fails the hook, and with it the push, the way gitea's hook does:
// the message for the pusher between two "error:" lines on stderr.
func refuse(userMsg, detail string) {
	if userMsg == "" {
		userMsg = "Internal Server Error (no specific error)"
	}
	fmt.Fprintln(os.Stdout, "")
	fmt.Fprintln(os.Stderr, "error:")
	fmt.Fprintln(os.Stderr, "error:", userMsg)
	fmt.Fprintln(os.Stderr, "error:")
	if detail != "" {
		fmt.Fprintln(os.Stderr, "forgehook:", detail)
	}
	os.Exit(1)
}
