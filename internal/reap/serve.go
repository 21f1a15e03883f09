package reap

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"time"
)

// Where the agent server runs as a user of its own, the pool may neither
// read that user's processes' working directories nor signal them: a
// helper running as that user does it for the pool. The pool connects to
// a socket only it may use (systemd starts the helper, `pool reap`, for
// each connection, as the agent's user), writes the work tree's path and
// a newline, and reads back one line per process ended, then "ok" or
// "error: ...". The helper acts only on a directory under the root it was
// given, and can signal only its own user's processes.

// maxRequest bounds the path the helper reads; maxReply what the pool reads.
const (
	maxRequest = 4 << 10
	maxReply   = 64 << 10
)

// Serve answers one request on r and w: it ends what a session left in
// the tree named (Tree), if that is a directory under root with no link on
// the way.
func Serve(ctx context.Context, r io.Reader, w io.Writer, root string, grace time.Duration) error {
	line, err := bufio.NewReader(io.LimitReader(r, maxRequest)).ReadString('\n')
	if err != nil {
		return reply(w, fmt.Errorf("read the tree: %w", err))
	}
	dir, err := under(strings.TrimSuffix(line, "\n"), root)
	if err != nil {
		return reply(w, err)
	}
	res, err := Tree(ctx, dir, grace, -1)
	for _, p := range res.Ended {
		fmt.Fprintf(w, "ended %s\n", p)
	}
	for _, p := range res.Killed {
		fmt.Fprintf(w, "killed %s\n", p)
	}
	return reply(w, err)
}

func reply(w io.Writer, err error) error {
	if err != nil {
		_, werr := fmt.Fprintf(w, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return errors.Join(err, werr)
	}
	_, err = fmt.Fprintln(w, "ok")
	return err
}

// under returns dir if it is an absolute, clean path strictly under root
// that resolves to itself (no link on the way).
func under(dir, root string) (string, error) {
	root = filepath.Clean(root)
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || !strings.HasPrefix(dir, root+"/") {
		return "", fmt.Errorf("%q is not a clean path under %s", dir, root)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("%q: %w", dir, err)
	}
	if real != dir {
		return "", fmt.Errorf("%q leads elsewhere (%s)", dir, real)
	}
	return dir, nil
}

// Ask has the helper listening on socket end what a session left in dir,
// and returns its lines (ended and killed processes) once it said "ok".
func Ask(ctx context.Context, socket, dir string, timeout time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, fmt.Errorf("reap: ask %s: %w", socket, err)
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if _, err := fmt.Fprintf(conn, "%s\n", dir); err != nil {
		return nil, fmt.Errorf("reap: ask %s: %w", socket, err)
	}
	var lines []string
	sc := bufio.NewScanner(io.LimitReader(conn, maxReply))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "ok":
			return lines, nil
		case strings.HasPrefix(line, "error: "):
			return lines, fmt.Errorf("reap: %s answered: %s", socket, strings.TrimPrefix(line, "error: "))
		}
		lines = append(lines, line)
	}
	return lines, fmt.Errorf("reap: %s gave no answer: %v", socket, sc.Err())
}
