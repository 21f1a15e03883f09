// Package sandbox starts real test servers (forge, agent server, scripted model)
// for tests and the local demo.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	adminUser = "pooladmin"
	// startTimeout bounds a start that makes no progress: about 3 s on an
	// idle machine, several times that on a loaded one-core one.
	startTimeout = 3 * time.Minute
	stopGrace    = 10 * time.Second
	// forgeCallTimeout bounds one call of the tests to the forge. Opening a
	// PR makes the forge run git (a test merge) before it answers: well
	// under a second on an idle machine, but past 30 s on a loaded one with
	// other tests' forges beside it, which failed a test that was making
	// progress. A forge that does not answer for this long has stopped.
	forgeCallTimeout = 5 * time.Minute
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

	// hookBin and hookConfig: forgehook and its config, "" if the hooks
	// stay gitea's (forgehooks.go)
	hookBin, hookConfig string

	stopOnce sync.Once
	stopErr  error
}

// StartForge starts a Gitea server with a fresh SQLite database in dir (which
// should be empty or missing), which holds everything the server writes; its
// output goes to dir/gitea.log. It creates an admin user and token. The
// server outlives ctx: call Stop. The first call on a machine builds gitea
// (see GiteaBinary), which can take longer than go test's default timeout.
func StartForge(ctx context.Context, dir string, log io.Writer) (*Forge, error) {
	return startForge(ctx, dir, log, 0)
}

// startForge is StartForge with checkWorkers PR re-test workers
// (forgeSettings.CheckWorkers).
func startForge(ctx context.Context, dir string, log io.Writer, checkWorkers int) (*Forge, error) {
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
	g.settings.CheckWorkers = checkWorkers
	if g.settings.Git, err = ForgeGit(ctx, log); err != nil {
		fmt.Fprintf(log, "sandbox: the forge runs the machine's git, and tests each PR in a temporary repository: %v\n", err)
	}
	password := adminUser + "-password"
	if err := g.prepare(ctx, password); err != nil {
		return nil, fmt.Errorf("sandbox: start forge: %w", err)
	}
	f, err := g.serve(ctx)
	if err != nil {
		return nil, fmt.Errorf("sandbox: start forge: %w", err)
	}
	if err := f.useForgeHook(ctx, g.settings.InternalToken); err != nil {
		fmt.Fprintf(log, "sandbox: the forge's hooks stay gitea's: %v\n", err)
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
		client:    &http.Client{Timeout: forgeCallTimeout},
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

// Pid is the server's process id (for a benchmark that pins it to CPUs).
func (f *Forge) Pid() int { return f.cmd.Process.Pid }
