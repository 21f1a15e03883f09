package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"pool/internal/sandbox"
)

// Log messages the bench waits for; every other line only goes to the file.
const (
	msgStarting = "pool starting"
	msgStarted  = "session started"
	msgFinished = "session finished"
	msgNoResult = "session gave no usable result; the forge decides"
	msgWoken    = "woken by the forge" // at debug level
)

var watched = map[string]bool{msgStarting: true, msgStarted: true, msgFinished: true, msgNoResult: true, msgWoken: true}

// logLine is one parsed slog text line of the pool.
type logLine struct {
	time  time.Time
	msg   string
	attrs map[string]string
}

// parseLogLine reads `key=value key="quoted value" ...` as slog's text
// handler writes it. ok is false for a line without a parsable time.
func parseLogLine(line string) (logLine, bool) {
	l := logLine{attrs: map[string]string{}}
	for s := strings.TrimSpace(line); s != ""; s = strings.TrimLeft(s, " ") {
		key, rest, found := strings.Cut(s, "=")
		if !found {
			break
		}
		val, after := splitValue(rest)
		l.attrs[key] = val
		s = after
	}
	t, err := time.Parse(time.RFC3339, l.attrs["time"])
	if err != nil {
		return l, false
	}
	l.time, l.msg = t, l.attrs["msg"]
	return l, true
}

// splitValue takes one value off the front of s: a Go-quoted string, or
// everything up to the next space.
func splitValue(s string) (val, rest string) {
	if strings.HasPrefix(s, `"`) {
		if q, err := strconv.QuotedPrefix(s); err == nil {
			v, _ := strconv.Unquote(q)
			return v, s[len(q):]
		}
	}
	val, rest, _ = strings.Cut(s, " ")
	return val, rest
}

// poolProc is the pool binary running against the sandbox, with its stderr
// copied to a file and the watched lines parsed onto lines.
type poolProc struct {
	cmd    *exec.Cmd
	lines  chan logLine // closed when stderr ends
	stdout bytes.Buffer
	exited chan struct{} // closed once the process has been waited for
	err    error         // Wait's answer, set before exited closes
}

// poolEnv is the environment of a pool process in the sandbox: its own
// HOME, TMPDIR and state dir under dir. extra should set POOL_LOG_LEVEL.
func poolEnv(sb *sandbox.Sandbox, dir string, extra ...string) ([]string, error) {
	tokenFile, err := sb.WriteTokenFile()
	if err != nil {
		return nil, fmt.Errorf("write the pool's token file: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make %s: %w", dir, err)
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir,
		"POOL_FORGEJO_URL=" + sb.Forge.URL, "POOL_FORGEJO_TOKEN_FILE=" + tokenFile,
		"POOL_REPO=" + sb.Owner + "/" + sb.Repo, "POOL_AGENT_URL=" + sb.Agent.URL,
		"POOL_STATE_DIR=" + filepath.Join(dir, "state"),
	}
	return append(env, extra...), nil
}

// startPool runs bin with args and env; its stderr goes to logPath.
func startPool(bin string, env []string, logPath string, args ...string) (*poolProc, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start pool: %w", err)
	}
	p := &poolProc{lines: make(chan logLine, 1024), exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	p.cmd.Stdout = &p.stdout
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start pool: %w", err)
	}
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start pool: %w", err)
	}
	readDone := make(chan struct{})
	go func() { defer close(readDone); p.read(stderr, logFile) }()
	go func() {
		<-readDone // Wait closes the pipe: read it all first
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// read copies stderr to the log file and passes the watched lines on.
func (p *poolProc) read(stderr io.Reader, logFile *os.File) {
	defer close(p.lines)
	defer logFile.Close()
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		fmt.Fprintln(logFile, sc.Text())
		if l, ok := parseLogLine(sc.Text()); ok && watched[l.msg] {
			p.lines <- l
		}
	}
}

// waitFor returns the next watched line that match accepts, skipping
// others, until timeout.
func (p *poolProc) waitFor(ctx context.Context, timeout time.Duration, what string, match func(logLine) bool) (logLine, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return logLine{}, fmt.Errorf("waiting for %s: the pool exited", what)
			}
			if match(l) {
				return l, nil
			}
		case <-t.C:
			return logLine{}, fmt.Errorf("waiting for %s: no such log line after %s", what, timeout)
		case <-ctx.Done():
			return logLine{}, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// stop sends SIGTERM and waits for the exit, killing after grace.
func (p *poolProc) stop(grace time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	return p.wait(grace)
}

// wait waits for the process to exit by itself, killing it after timeout.
// No line is waited for after this: the rest are discarded.
func (p *poolProc) wait(timeout time.Duration) error {
	go drain(p.lines)
	select {
	case <-p.exited:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("pool did not exit within %s; killed", timeout)
	}
	if p.err != nil {
		return fmt.Errorf("pool exited: %w", p.err)
	}
	return nil
}

// drain discards what is left on ch.
func drain(ch <-chan logLine) {
	for range ch {
	}
}

// isMsg matches a watched line with message msg about PR n (0: any PR).
func isMsg(msg string, n int) func(logLine) bool {
	return func(l logLine) bool {
		return l.msg == msg && (n == 0 || l.attrs["pr"] == strconv.Itoa(n))
	}
}

// isSessionEnd matches the line that says PR n's session was collected.
func isSessionEnd(n int) func(logLine) bool {
	return func(l logLine) bool {
		return (l.msg == msgFinished || l.msg == msgNoResult) && l.attrs["pr"] == strconv.Itoa(n)
	}
}
