package sandbox

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// stopProcess ends a server this package started: SIGTERM (and SIGCONT, so a
// paused server can act on it), then SIGKILL if it has not exited within
// grace. exited is closed once the process has been reaped.
func stopProcess(p *os.Process, exited <-chan struct{}, grace time.Duration, what string) error {
	if err := p.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sandbox: stop %s: %w", what, err)
	}
	_ = p.Signal(syscall.SIGCONT)
	select {
	case <-exited:
		return nil
	case <-time.After(grace):
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sandbox: stop %s: kill: %w", what, err)
	}
	<-exited
	return nil
}

// fileTail is the last few kilobytes of a server's log, for failure messages.
func fileTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return tail(b, 4000)
}
