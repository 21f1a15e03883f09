package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// pushBatch is how many refs one git push carries: the forge handles a
// push's refs in its hooks, and a few hundred keep each push well under its
// timeouts.
const pushBatch = 250

// BulkFile is the file bulk change name adds: bulk/<name>.txt.
func BulkFile(name string) string { return "bulk/" + name + ".txt" }

// Bulk seeds many changes fast: git writes one commit per change in a local
// bare repository, and pushes carry hundreds of them at a time. It acts as
// the repository's owner. The owner's token reaches git through the
// environment (GIT_CONFIG_*: command-scoped like `git -c`, and out of the
// process list) and is never written to a config file.
type Bulk struct {
	sb     *Sandbox
	git    gitRunner
	remote string
	base   string // main's commit, once fetched
}

// Bulk returns a seeder working in dir, which it makes if missing.
func (sb *Sandbox) Bulk(dir string) *Bulk { return sb.BulkIn(dir, sb.Repo) }

// BulkIn is Bulk for another of the owner's repositories (see AddRepo).
func (sb *Sandbox) BulkIn(dir, repo string) *Bulk {
	return &Bulk{sb: sb, git: gitRunner{dir: dir, env: gitAuthEnv(sb.OwnerToken)},
		remote: fmt.Sprintf("%s/%s/%s.git", sb.Forge.URL, sb.Owner, repo)}
}

// PushBranches creates one branch per name, each one commit on main adding
// BulkFile(name).
func (b *Bulk) PushBranches(ctx context.Context, names []string) error {
	if err := b.commit(ctx, names); err != nil {
		return fmt.Errorf("sandbox: push branches: %w", err)
	}
	return b.inBatches(names, func(batch []string) error {
		_, err := b.git.run(ctx, nil, b.pushArgs(batch, "refs/heads/")...)
		if err != nil {
			return fmt.Errorf("sandbox: push branches %s..%s: %w", batch[0], batch[len(batch)-1], err)
		}
		return nil
	})
}

// OpenAGitPRs opens one PR into main per name, each one commit adding
// BulkFile(name), by pushing to refs/for/main/<name> (the forge's AGit
// flow: the PR is made by the push, with no branch, far cheaper than the
// create-PR API). It returns the PR numbers in the order of names.
func (b *Bulk) OpenAGitPRs(ctx context.Context, names []string) ([]int, error) {
	if err := b.commit(ctx, names); err != nil {
		return nil, fmt.Errorf("sandbox: open AGit PRs: %w", err)
	}
	var numbers []int
	err := b.inBatches(names, func(batch []string) error {
		out, err := b.git.run(ctx, nil, b.pushArgs(batch, "refs/for/main/")...)
		if err != nil {
			return fmt.Errorf("sandbox: open AGit PRs %s..%s: %w", batch[0], batch[len(batch)-1], err)
		}
		ns, err := agitNumbers(out, batch)
		numbers = append(numbers, ns...)
		return err
	})
	if err != nil {
		return nil, err
	}
	b.sb.PRs = append(b.sb.PRs, numbers...)
	return numbers, nil
}

func (b *Bulk) inBatches(names []string, push func([]string) error) error {
	for start := 0; start < len(names); start += pushBatch {
		if err := push(names[start:min(start+pushBatch, len(names))]); err != nil {
			return err
		}
	}
	return nil
}

// pushArgs pushes each name's local branch to prefix+name. --porcelain
// reports, for an AGit push, the refs/pull/N/head each one became.
func (b *Bulk) pushArgs(names []string, prefix string) []string {
	args := []string{"push", "--porcelain", b.remote}
	for _, n := range names {
		args = append(args, "refs/heads/"+n+":"+prefix+n)
	}
	return args
}

var agitRefRE = regexp.MustCompile(`(?m)^.\trefs/heads/([^:\s]+):refs/pull/(\d+)/head\t`)

// agitNumbers reads the PR number of each name from a porcelain push.
func agitNumbers(out string, names []string) ([]int, error) {
	got := map[string]int{}
	for _, m := range agitRefRE.FindAllStringSubmatch(out, -1) {
		got[m[1]], _ = strconv.Atoi(m[2])
	}
	numbers := make([]int, len(names))
	for i, n := range names {
		if numbers[i] = got[n]; numbers[i] == 0 {
			return nil, fmt.Errorf("sandbox: open AGit PRs: no PR reported for %s: %s", n, tail([]byte(out), 500))
		}
	}
	return numbers, nil
}

// commit writes one local branch per name, each one commit on main adding
// BulkFile(name), with a single git fast-import.
func (b *Bulk) commit(ctx context.Context, names []string) error {
	branches := make([]Branch, len(names))
	for i, name := range names {
		branches[i] = Branch{Name: name, Message: "add " + BulkFile(name),
			Files: []File{{Path: BulkFile(name), Content: name + "\n"}}}
	}
	return b.commitBranches(ctx, branches)
}

// commitBranches writes each branch locally, one commit on main, with a
// single git fast-import.
func (b *Bulk) commitBranches(ctx context.Context, branches []Branch) error {
	if err := b.fetchMain(ctx); err != nil {
		return err
	}
	var stream bytes.Buffer
	when := time.Now().Unix()
	for _, br := range branches {
		b.writeCommit(&stream, br, when)
	}
	_, err := b.git.run(ctx, &stream, "fast-import", "--quiet", "--force")
	return err
}

// fetchMain makes the work dir a bare repository holding the remote's main
// branch, once.
func (b *Bulk) fetchMain(ctx context.Context) error {
	if b.base != "" {
		return nil
	}
	if err := os.MkdirAll(b.git.dir, 0o755); err != nil {
		return err
	}
	if _, err := b.git.run(ctx, nil, "init", "-q", "--bare"); err != nil {
		return err
	}
	if _, err := b.git.run(ctx, nil, "fetch", "-q", b.remote, "+refs/heads/main:refs/heads/main"); err != nil {
		return err
	}
	base, err := b.git.run(ctx, nil, "rev-parse", "refs/heads/main")
	b.base = base
	return err
}

// writeCommit appends to a fast-import stream a commit on branch br.Name,
// child of main, holding br.Files, authored and committed by the owner as
// the forge's contents API would.
func (b *Bulk) writeCommit(w *bytes.Buffer, br Branch, when int64) {
	msg := br.Message + "\n"
	fmt.Fprintf(w, "commit refs/heads/%s\n", br.Name)
	fmt.Fprintf(w, "author %s <%s@example.com> %d +0000\n", b.sb.Owner, b.sb.Owner, when)
	fmt.Fprintf(w, "committer %s <%s@example.com> %d +0000\n", b.sb.Owner, b.sb.Owner, when)
	fmt.Fprintf(w, "data %d\n%s", len(msg), msg)
	fmt.Fprintf(w, "from %s\n", b.base)
	for _, f := range br.Files {
		mode := "100644"
		if f.Exec {
			mode = "100755"
		}
		fmt.Fprintf(w, "M %s inline %s\n", mode, f.Path)
		fmt.Fprintf(w, "data %d\n%s\n", len(f.Content), f.Content)
	}
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

// run returns git's standard output; a failure carries its error output.
func (g gitRunner) run(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = g.dir
	cmd.Env = append(os.Environ(), g.env...)
	cmd.Stdin = stdin
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, tail(errOut.Bytes(), 2000))
	}
	return strings.TrimSpace(out.String()), nil
}

// LabelID returns the id of the repository label name, creating it if needed.
func (sb *Sandbox) LabelID(ctx context.Context, name string) (int64, error) {
	id, err := sb.Forge.labelID(ctx, sb.OwnerToken, sb.Owner, sb.Repo, name)
	if err != nil {
		return 0, fmt.Errorf("sandbox: label %q: %w", name, err)
	}
	return id, nil
}

// CreatePRs opens, as the owner and through the API, one PR into main from
// each branch, parallel at a time, each with the given labels, and returns
// their numbers in the order of branches. It stops at the first failure.
func (sb *Sandbox) CreatePRs(ctx context.Context, branches []string, labels []int64, parallel int) ([]int, error) {
	numbers := make([]int, len(branches))
	err := inParallel(ctx, len(branches), parallel, func(ctx context.Context, i int) error {
		var err error
		numbers[i], err = sb.createLabelledPR(ctx, branches[i], labels)
		return err
	})
	if err != nil {
		return nil, err
	}
	sb.PRs = append(sb.PRs, numbers...)
	return numbers, nil
}

// LabelPRs adds the label to each PR, parallel at a time.
func (sb *Sandbox) LabelPRs(ctx context.Context, numbers []int, label int64, parallel int) error {
	return inParallel(ctx, len(numbers), parallel, func(ctx context.Context, i int) error {
		path := fmt.Sprintf("%s/issues/%d/labels", repoPath(sb.Owner, sb.Repo), numbers[i])
		if _, err := sb.Forge.Do(ctx, sb.OwnerToken, http.MethodPost, path, map[string]any{"labels": []int64{label}}, nil); err != nil {
			return fmt.Errorf("sandbox: label PR #%d: %w", numbers[i], err)
		}
		return nil
	})
}

// inParallel calls do for 0..n-1, parallel at a time, and returns the first
// error, after which it starts no more calls.
func inParallel(ctx context.Context, n, parallel int, do func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	feed(ctx, next, n)
	wg.Wait()
	return context.Cause(ctx)
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

// ApprovePRs makes each PR ready to merge, parallel at a time: the
// stand-in CI reports its head green, and the reviewer (a write
// collaborator, so the forge marks the review official) approves it.
func (sb *Sandbox) ApprovePRs(ctx context.Context, numbers []int, parallel int) error {
	return inParallel(ctx, len(numbers), parallel, func(ctx context.Context, i int) error {
		return sb.ready(ctx, numbers[i], true)
	})
}

// ReportGreen has the stand-in CI report each PR's head green, parallel at
// a time.
func (sb *Sandbox) ReportGreen(ctx context.Context, numbers []int, parallel int) error {
	return inParallel(ctx, len(numbers), parallel, func(ctx context.Context, i int) error {
		return sb.ready(ctx, numbers[i], false)
	})
}

func (sb *Sandbox) ready(ctx context.Context, n int, approve bool) error {
	var pr struct {
		Head struct {
			SHA string `json:"sha"`
		} `json:"head"`
	}
	path := fmt.Sprintf("%s/pulls/%d", repoPath(sb.Owner, sb.Repo), n)
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, http.MethodGet, path, nil, &pr); err != nil {
		return fmt.Errorf("sandbox: read PR #%d: %w", n, err)
	}
	if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, pr.Head.SHA, CIContext, "success", "", "passed"); err != nil {
		return err
	}
	if !approve {
		return nil
	}
	_, err := sb.Forge.Review(ctx, sb.ReviewerToken, sb.Owner, sb.Repo, n, pr.Head.SHA, "APPROVED", "Approved for the bench.")
	return err
}

// A File is one file of a commit PushFiles makes.
type File struct {
	Path, Content string
	Exec          bool // mode 100755
}

// PushFiles pushes branch, one commit on main holding files, and returns
// the commit's id. Files the API cannot write (an executable, a dotfile at
// the top) go this way.
func (b *Bulk) PushFiles(ctx context.Context, branch string, files []File) (string, error) {
	heads, err := b.PushEach(ctx, []Branch{{Name: branch, Message: "add " + branch, Files: files}})
	if err != nil {
		return "", fmt.Errorf("sandbox: push files: %w", err)
	}
	return heads[0], nil
}

// A Branch is one branch PushEach makes: one commit on main holding Files.
type Branch struct {
	Name, Message string
	Files         []File
}

// PushEach makes each branch, one commit on main, with one git push for
// them all (pushBatch at most each), and returns their commits in order.
// The forge runs its pre- and post-receive hooks once a push, each a start
// of its binary (some 0.3 s of CPU), where a contents API call a branch
// ran them once a branch.
func (b *Bulk) PushEach(ctx context.Context, branches []Branch) ([]string, error) {
	if err := b.commitBranches(ctx, branches); err != nil {
		return nil, fmt.Errorf("sandbox: push branches: %w", err)
	}
	names := make([]string, len(branches))
	for i, br := range branches {
		names[i] = br.Name
	}
	err := b.inBatches(names, func(batch []string) error {
		args := []string{"push", "-q", b.remote}
		for _, n := range batch {
			args = append(args, "+refs/heads/"+n+":refs/heads/"+n)
		}
		if _, err := b.git.run(ctx, nil, args...); err != nil {
			return fmt.Errorf("sandbox: push branches %s..%s: %w", batch[0], batch[len(batch)-1], err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	refs := []string{"rev-parse"}
	for _, n := range names {
		refs = append(refs, "refs/heads/"+n)
	}
	out, err := b.git.run(ctx, nil, refs...)
	if err != nil {
		return nil, fmt.Errorf("sandbox: push branches: %w", err)
	}
	heads := strings.Fields(out)
	if len(heads) != len(names) {
		return nil, fmt.Errorf("sandbox: push branches: %d commits for %d branches", len(heads), len(names))
	}
	return heads, nil
}

// ForcePushEvilMerge replaces branch's head, a merge, with a commit of the
// same parents whose tree is its second parent's (the base tip): the
// branch's own change is dropped. Every file of it equals one parent's, so
// the forge's check for a changed PR (a combined diff of the new head
// against the old head and the merge base) finds nothing, and the reviews
// on the branch stay counted, not stale. An author who drops part of a
// reviewed change (a guard, a check) makes such a head. It returns the
// commit's id.
func (b *Bulk) ForcePushEvilMerge(ctx context.Context, branch string) (string, error) {
	if err := b.fetchMain(ctx); err != nil {
		return "", fmt.Errorf("sandbox: evil merge: %w", err)
	}
	ref := "refs/heads/" + branch
	if _, err := b.git.run(ctx, nil, "fetch", "-q", b.remote, "+"+ref+":"+ref); err != nil {
		return "", fmt.Errorf("sandbox: evil merge: %w", err)
	}
	parents, err := b.git.run(ctx, nil, "rev-list", "--parents", "-n1", ref)
	if err != nil {
		return "", fmt.Errorf("sandbox: evil merge: %w", err)
	}
	ids := strings.Fields(parents)[1:]
	if len(ids) != 2 {
		return "", fmt.Errorf("sandbox: evil merge: %s's head has parents %v, not two", branch, ids)
	}
	g := gitRunner{dir: b.git.dir, env: append(b.git.env, "GIT_AUTHOR_NAME=owner", "GIT_AUTHOR_EMAIL=owner@example.com",
		"GIT_COMMITTER_NAME=owner", "GIT_COMMITTER_EMAIL=owner@example.com")}
	commit, err := g.run(ctx, nil, "commit-tree", ids[1]+"^{tree}", "-p", ids[0], "-p", ids[1], "-m", "Merge branch 'main' into "+branch)
	if err != nil {
		return "", fmt.Errorf("sandbox: evil merge: %w", err)
	}
	if _, err := b.git.run(ctx, nil, "push", "-q", "-f", b.remote, commit+":"+ref); err != nil {
		return "", fmt.Errorf("sandbox: evil merge: %w", err)
	}
	return commit, nil
}
