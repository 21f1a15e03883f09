package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// pushBatch is how many branches one git push carries: the forge runs its
// hooks per push, and a few hundred refs keep each push well under its
// timeouts.
const pushBatch = 250

// BulkFile is the file the bulk branch name adds: bulk/<name>.txt.
func BulkFile(name string) string { return "bulk/" + name + ".txt" }

// PushBranches creates one branch per name in the sandbox repository, each
// one commit on main adding BulkFile(name), and pushes them as the owner.
// It works in dir (made if missing) with git: one fast-import writes every
// commit, and pushes of pushBatch refs send them. The owner's token goes to
// git through the environment (GIT_CONFIG_*: command-scoped, like git -c,
// but out of the process list) and is never written to a config file.
func (sb *Sandbox) PushBranches(ctx context.Context, dir string, names []string) error {
	g := gitRunner{dir: dir, env: gitAuthEnv(sb.OwnerToken)}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sandbox: push branches: %w", err)
	}
	remote := fmt.Sprintf("%s/%s/%s.git", sb.Forge.URL, sb.Owner, sb.Repo)
	if err := g.fetchMain(ctx, remote); err != nil {
		return fmt.Errorf("sandbox: push branches: %w", err)
	}
	if err := g.importBranches(ctx, names); err != nil {
		return fmt.Errorf("sandbox: push branches: %w", err)
	}
	for start := 0; start < len(names); start += pushBatch {
		batch := names[start:min(start+pushBatch, len(names))]
		if err := g.push(ctx, remote, batch); err != nil {
			return fmt.Errorf("sandbox: push branches %s..%s: %w", batch[0], batch[len(batch)-1], err)
		}
	}
	return nil
}

// gitAuthEnv passes an Authorization header for every request git makes,
// as `git -c http.extraHeader=...` would, without putting it in argv.
func gitAuthEnv(token string) []string {
	return []string{
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=http.extraHeader",
		"GIT_CONFIG_VALUE_0=Authorization: token " + token,
		"GIT_TERMINAL_PROMPT=0",
	}
}

// gitRunner runs git in one directory with extra environment.
type gitRunner struct {
	dir string
	env []string
}

func (g gitRunner) run(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = g.dir
	cmd.Env = append(os.Environ(), g.env...)
	cmd.Stdin = stdin
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, tail(out.Bytes(), 2000))
	}
	return strings.TrimSpace(out.String()), nil
}

// fetchMain makes dir a repository holding the remote's main branch.
func (g gitRunner) fetchMain(ctx context.Context, remote string) error {
	if _, err := g.run(ctx, nil, "init", "-q", "--bare"); err != nil {
		return err
	}
	_, err := g.run(ctx, nil, "fetch", "-q", remote, "+refs/heads/main:refs/heads/main")
	return err
}

// importBranches writes one commit per branch with a single git fast-import.
func (g gitRunner) importBranches(ctx context.Context, names []string) error {
	base, err := g.run(ctx, nil, "rev-parse", "refs/heads/main")
	if err != nil {
		return err
	}
	var stream bytes.Buffer
	when := time.Now().Unix()
	for _, name := range names {
		writeBranchCommit(&stream, name, base, when)
	}
	_, err = g.run(ctx, &stream, "fast-import", "--quiet")
	return err
}

// writeBranchCommit appends to a fast-import stream a commit on branch name,
// child of base, that adds BulkFile(name).
func writeBranchCommit(w *bytes.Buffer, name, base string, when int64) {
	msg := "add " + BulkFile(name) + "\n"
	content := name + "\n"
	fmt.Fprintf(w, "commit refs/heads/%s\n", name)
	fmt.Fprintf(w, "committer owner <owner@example.com> %d +0000\n", when)
	fmt.Fprintf(w, "data %d\n%s", len(msg), msg)
	fmt.Fprintf(w, "from %s\n", base)
	fmt.Fprintf(w, "M 100644 inline %s\n", BulkFile(name))
	fmt.Fprintf(w, "data %d\n%s\n", len(content), content)
}

func (g gitRunner) push(ctx context.Context, remote string, names []string) error {
	args := []string{"push", "-q", remote}
	for _, n := range names {
		args = append(args, "refs/heads/"+n+":refs/heads/"+n)
	}
	_, err := g.run(ctx, nil, args...)
	return err
}

// LabelID returns the id of the repository label name, creating it if needed.
func (sb *Sandbox) LabelID(ctx context.Context, name string) (int64, error) {
	id, err := sb.Forge.labelID(ctx, sb.OwnerToken, sb.Owner, sb.Repo, name)
	if err != nil {
		return 0, fmt.Errorf("sandbox: label %q: %w", name, err)
	}
	return id, nil
}

// CreatePRs opens, as the owner, one PR into main from each branch, parallel
// at a time, each with the given labels, and returns their numbers in the
// order of branches. It stops at the first failure.
func (sb *Sandbox) CreatePRs(ctx context.Context, branches []string, labels []int64, parallel int) ([]int, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	numbers := make([]int, len(branches))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				n, err := sb.createLabelledPR(ctx, branches[i], labels)
				if err != nil {
					cancel(err)
					return
				}
				numbers[i] = n
			}
		}()
	}
	feed(ctx, next, len(branches))
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	sb.PRs = append(sb.PRs, numbers...)
	return numbers, nil
}

// feed sends 0..n-1 on next until ctx ends, then closes it.
func feed(ctx context.Context, next chan<- int, n int) {
	defer close(next)
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			return
		}
	}
}

// createLabelledPR opens one PR with labels. A busy SQLite database can
// answer 500; such a create is tried again, up to three times.
func (sb *Sandbox) createLabelledPR(ctx context.Context, branch string, labels []int64) (int, error) {
	req := map[string]any{"head": branch, "base": "main", "title": "Bulk " + branch,
		"body": "Adds " + BulkFile(branch) + ".", "labels": labels}
	var pr struct {
		Number int `json:"number"`
	}
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		var status int
		status, err = sb.Forge.Do(ctx, sb.OwnerToken, http.MethodPost, repoPath(sb.Owner, sb.Repo)+"/pulls", req, &pr)
		if err == nil || status < 500 {
			break
		}
	}
	if err != nil {
		return 0, fmt.Errorf("sandbox: create PR from %s: %w", branch, err)
	}
	return pr.Number, nil
}
