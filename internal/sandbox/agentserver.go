package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// agentStartTimeout: about 2 s on an idle machine; a restart in a test
	// on a loaded one-core machine took far longer than that.
	agentStartTimeout = 3 * time.Minute
	agentStopGrace    = 5 * time.Second
	agentUser         = "opencode" // the basic-auth user the server expects
)

// AgentOptions shape a test agent server.
type AgentOptions struct {
	ModelURL  string            // the scripted model's base URL, ending in /v1
	AgentName string            // the agent the pool prompts, e.g. ca-pr-self-reviewer
	Env       map[string]string // extra environment for the server and its bash commands
	Password  string            // basic-auth password; "" leaves the server open
	// Permission is the config's "permission" value; nil allows every tool,
	// so a headless session never waits on a permission ask.
	Permission any
	// Shipped loads the reviewer as the project ships it (deploy/opencode:
	// its opencode.json and agent definitions, with the scripted model in
	// place of a real one) instead of a stand-in agent named AgentName.
	// Permission is then ignored: the definitions say what is allowed.
	Shipped bool
	Log     io.Writer // progress lines; nil discards them
	// Port pins the listening port; 0 takes a free one (startListening).
	Port int
	// MCP is the command vector of the reviewer's tool server
	// (ReviewerSetup.MCP), which the config names as MCPServer; nil: none.
	MCP []string
	// RunAs runs the server as this user (SeparateUser) instead of this
	// process's: dir is given to it, and the binary copied where it may
	// run it. nil: this process's user.
	RunAs *OSUser
}

// AgentServer is a running `opencode serve`.
type AgentServer struct {
	URL string
	Dir string

	opts AgentOptions // what it was started with, for Restart

	cmd      *exec.Cmd
	exited   chan struct{} // closed once the process has been reaped
	stopOnce sync.Once
	stopErr  error
}

// StartAgentServer writes the server's global opencode.json under dir,
// points HOME and the XDG directories into dir, starts `opencode serve` there
// on a free loopback port and waits until it answers and knows
// opts.AgentName. The server logs to dir/opencode.log.
//
// The config is global, not the project config of the server's working
// directory, because the pool runs each session in a work tree of its own:
// the server then loads config for that directory, never for its own. The
// server runs with OPENCODE_DISABLE_PROJECT_CONFIG=1, so a PR's
// opencode.json, .opencode/ (agents, plugins) or AGENTS.md cannot configure
// the reviewer that reviews it.
func StartAgentServer(ctx context.Context, dir string, opts AgentOptions) (*AgentServer, error) {
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	start := time.Now()
	bin, err := OpencodeBinary(ctx, log)
	if err != nil {
		return nil, err
	}
	if err := prepareAgentDir(dir, opts); err != nil {
		return nil, fmt.Errorf("sandbox: agent server: %w", err)
	}
	if opts.RunAs != nil {
		if bin, err = prepareForUser(*opts.RunAs, bin, dir); err != nil {
			return nil, fmt.Errorf("sandbox: agent server as %s: %w", opts.RunAs.Name, err)
		}
	}
	a, err := startListening(ctx, bin, dir, opts)
	if a != nil {
		a.opts = opts
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: agent server: %w", err)
	}
	if err := a.waitReady(ctx, opts); err != nil {
		_ = a.Stop()
		return nil, fmt.Errorf("sandbox: agent server: %w\n--- tail of %s ---\n%s", err, a.logPath(), a.LogTail())
	}
	fmt.Fprintf(log, "sandbox: agent server ready at %s in %s (data in %s)\n",
		a.URL, time.Since(start).Round(10*time.Millisecond), dir)
	return a, nil
}

// agentEnv is the server's environment: ours without any OPENCODE_* or XDG_*
// setting, a private home, no update checks or downloads, then opts.Env.
func agentEnv(dir string, opts AgentOptions) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENCODE_") && !strings.HasPrefix(kv, "XDG_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	home := agentHome(dir)
	env = append(env,
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_MODELS_PATH="+agentModelsFile(dir),
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_CLAUDE_CODE=1",
		"OPENCODE_DISABLE_PROJECT_CONFIG=1",
		// As the README deploys it: no file watcher per work tree, and no
		// built-in plugins (provider sign-ins the scripted model does not
		// use), which alone cut the server's CPU per session by about half.
		"OPENCODE_EXPERIMENTAL_DISABLE_FILEWATCHER=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
	)
	if opts.Password != "" {
		env = append(env, "OPENCODE_SERVER_PASSWORD="+opts.Password)
	}
	if opts.RunAs != nil {
		// The work trees are the pool's files, shared by group: git would
		// refuse them as another user's (docs/operations.md, "Deploying the agent
		// server as a user of its own").
		env = append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*")
	}
	for k, v := range opts.Env {
		env = append(env, k+"="+v)
	}
	return env
}

// listeningRE matches the line the server prints once it listens.
var listeningRE = regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)

// errExitedEarly is a server that exited before it listened: on a port
// taken meanwhile, among other causes.
var errExitedEarly = errors.New("opencode serve exited before it listened")

// startListening starts the server on opts.Port, or without one on a free
// port the kernel names, and on another if the server exits before it
// listens (another process took the port in between). Not --port 0:
// opencode then takes its default port, 4096, whenever it is free, so the
// servers of tests running side by side took turns on it, and a server
// restarted on its port (Restart) found it taken by another's.
func startListening(ctx context.Context, bin, dir string, opts AgentOptions) (*AgentServer, error) {
	if opts.Port != 0 {
		return startOpencode(ctx, bin, dir, opts)
	}
	var err error
	for range 3 {
		if opts.Port, err = freePort(); err != nil {
			return nil, err
		}
		var a *AgentServer
		if a, err = startOpencode(ctx, bin, dir, opts); !errors.Is(err, errExitedEarly) {
			return a, err
		}
	}
	return nil, err
}

// startOpencode starts the server on opts.Port and learns its URL from its
// output. The process is not bound to ctx: the caller owns it through Stop.
// It is killed if the test binary dies first.
func startOpencode(ctx context.Context, bin, dir string, opts AgentOptions) (*AgentServer, error) {
	a := &AgentServer{Dir: dir, exited: make(chan struct{})}
	logFile, err := os.Create(a.logPath())
	if err != nil {
		return nil, err
	}
	// Our own pipe rather than StdoutPipe: Wait then need not wait for the
	// output to drain, which a stray grandchild could hold open.
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	a.cmd = exec.Command(bin, "serve", "--hostname", "127.0.0.1", "--port", strconv.Itoa(opts.Port), "--print-logs", "--log-level", "INFO")
	a.cmd.Dir = dir
	a.cmd.Env = agentEnv(dir, opts)
	a.cmd.Stdout = stdoutW
	a.cmd.Stderr = logFile
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if opts.RunAs != nil {
		asUser(a.cmd, *opts.RunAs)
	}
	err = a.cmd.Start()
	stdoutW.Close() // the child has its own copy
	if err != nil {
		stdoutR.Close()
		logFile.Close()
		return nil, fmt.Errorf("opencode serve: %w", err)
	}
	urls := make(chan string, 1)
	go func() {
		defer logFile.Close()
		defer stdoutR.Close()
		copyWatching(logFile, stdoutR, urls)
	}()
	go func() {
		_ = a.cmd.Wait()
		close(a.exited)
	}()
	if err := a.awaitURL(ctx, urls); err != nil {
		_ = a.Stop()
		return nil, fmt.Errorf("%w\n--- tail of %s ---\n%s", err, a.logPath(), a.LogTail())
	}
	return a, nil
}

// copyWatching copies the server's output lines to the log and sends the URL
// it announces on urls.
func copyWatching(log io.Writer, out io.Reader, urls chan<- string) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(log, line)
		if m := listeningRE.FindStringSubmatch(line); m != nil {
			select {
			case urls <- m[1]:
			default:
			}
		}
	}
	_, _ = io.Copy(log, out) // a line too long for the scanner: keep draining
}

func (a *AgentServer) awaitURL(ctx context.Context, urls <-chan string) error {
	timer := time.NewTimer(agentStartTimeout)
	defer timer.Stop()
	select {
	case a.URL = <-urls:
		return nil
	case <-a.exited:
		return fmt.Errorf("%w: %v", errExitedEarly, a.cmd.ProcessState)
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return errors.New("opencode serve did not say where it listens")
	}
}

// waitReady polls GET /session/status (its first answer comes once the
// server has loaded the project and its config), then checks the agent is
// configured.
func (a *AgentServer) waitReady(ctx context.Context, opts AgentOptions) error {
	ctx, cancel := context.WithTimeout(ctx, agentStartTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := a.get(ctx, opts.Password, "/session/status", nil)
		if err == nil {
			return a.checkAgent(ctx, opts)
		}
		select {
		case <-a.exited:
			return fmt.Errorf("opencode serve exited: %v", a.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("no answer on %s/session/status: %w (last: %v)", a.URL, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// checkAgent fails when the server does not list opts.AgentName: a prompt
// for an unknown agent is accepted (204) and then silently never runs.
func (a *AgentServer) checkAgent(ctx context.Context, opts AgentOptions) error {
	var agents []struct{ Name string }
	if err := a.get(ctx, opts.Password, "/agent", &agents); err != nil {
		return err
	}
	for _, ag := range agents {
		if ag.Name == opts.AgentName {
			return nil
		}
	}
	return fmt.Errorf("the server does not list agent %q: is %s valid?", opts.AgentName, agentConfigFile(a.Dir))
}

// get fetches path with a short deadline of its own: during startup the
// server can accept a connection and not answer it.
func (a *AgentServer) get(ctx context.Context, password, path string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+path, nil)
	if err != nil {
		return err
	}
	if password != "" {
		req.SetBasicAuth(agentUser, password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, tail(body, 500))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(body, out)
}

func (a *AgentServer) logPath() string { return filepath.Join(a.Dir, "opencode.log") }

// LogTail returns the last few kilobytes of the server's log, for test
// failure messages.
func (a *AgentServer) LogTail() string { return fileTail(a.logPath()) }

// Stop ends the server it started, by pid: SIGTERM, then SIGKILL if it has
// not exited after a grace period. It is safe to call more than once.
func (a *AgentServer) Stop() error {
	a.stopOnce.Do(func() { a.stopErr = a.stop() })
	return a.stopErr
}

func (a *AgentServer) stop() error {
	return stopProcess(a.cmd.Process, a.exited, agentStopGrace, "agent server")
}

// Another starts one more agent server as a was started (its model, its
// reviewer, its user), with its data in dir and a port of its own.
func (a *AgentServer) Another(ctx context.Context, dir string) (*AgentServer, error) {
	return a.AnotherOn(ctx, dir, a.opts.ModelURL)
}

// AnotherOn is Another with the model at modelURL (a Model's URL) behind
// the new server: the prompts it sends are that model's alone, so a test
// sees which server ran which session.
func (a *AgentServer) AnotherOn(ctx context.Context, dir, modelURL string) (*AgentServer, error) {
	opts := a.opts
	opts.Port = 0
	opts.ModelURL = modelURL
	return StartAgentServer(ctx, dir, opts)
}

// Restart stops the server and starts a new one on the same port and data
// directory, as an operator restarting the agent server would. Sessions the
// old one persisted survive; running work does not.
func (a *AgentServer) Restart(ctx context.Context) (*AgentServer, error) {
	if err := a.Stop(); err != nil {
		return nil, err
	}
	u, err := url.Parse(a.URL)
	if err != nil {
		return nil, fmt.Errorf("sandbox: restart agent server: %w", err)
	}
	opts := a.opts
	if opts.Port, err = strconv.Atoi(u.Port()); err != nil {
		return nil, fmt.Errorf("sandbox: restart agent server: port of %s: %w", a.URL, err)
	}
	return StartAgentServer(ctx, a.Dir, opts)
}
