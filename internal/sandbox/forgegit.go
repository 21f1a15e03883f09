package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"time"
)

// The test forge's git. Gitea 1.26 tests whether a PR merges into its base
// with `git merge-tree --write-tree --merge-base` when its git is 2.40 or
// newer (modules/git/git.go, SupportGitMergeTree), and otherwise in a
// temporary repository: init, two remotes, two fetches, read-tree,
// update-index, write-tree and more, about 15 git processes for each test
// of each open PR, after every push to a PR and every merge into its base.
// Debian 12's git is 2.39. In TestBacklogMergesAboutOneCallPerPR alone
// (2026-12-03, one core), the forge started 4,193 git processes with it
// (142 temporary repositories) and 2,699 with 2.47 (135 merge-trees, no
// temporary repository); the test's processes took 100-102 CPU-seconds
// (three runs) and 66 (one run), measured by a cpuacct cgroup around it.
//
// So where the machine's git is older than minForgeGit, the sandbox builds
// forgeGitVersion from Debian's source (trixie's), once, into the cache
// (ForgeGit); only the forge runs it (app.ini's [git] PATH), the tests and
// the pool keep the machine's.
const (
	forgeGitVersion = "2.47.3"
	forgeGitURL     = "http://deb.debian.org/debian/pool/main/g/git/git_" + forgeGitVersion + ".orig.tar.xz"
	forgeGitSHA256  = "9c2eb1250781b3e5bfef098572d07fdf132d67e6c065e4307332ade9819a1501"
)

// minForgeGit is the oldest git whose merge-tree Gitea 1.26 uses.
var minForgeGit = [2]int{2, 40}

// forgeGitMake is what the forge's git is built without: no HTTP transport,
// translations, Tcl, Perl or Python parts, none of which the forge runs (it
// fetches between its own repositories by path).
var forgeGitMake = []string{"NO_CURL=1", "NO_GETTEXT=1", "NO_TCLTK=1", "NO_PERL=1", "NO_PYTHON=1",
	"NO_EXPAT=1", "NO_OPENSSL=1", "NO_INSTALL_HARDLINKS=1", "INSTALL_SYMLINKS=1"}

// ForgeGit returns the git the test forge should run: "" when the
// machine's git is new enough (the forge finds it on PATH), else the path
// of forgeGitVersion under <CacheDir>/git, built on first use (a few
// minutes on two cores; concurrent callers wait for one build). It needs
// make, a C compiler, zlib's headers and Debian's package archive.
func ForgeGit(ctx context.Context, log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	if ok, have := machineGitNewEnough(ctx); ok {
		return "", nil
	} else if have == "" {
		return "", errors.New("sandbox: forge git: the machine has no git")
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "git")
	prefix := filepath.Join(dir, "git-"+forgeGitVersion)
	bin := filepath.Join(prefix, "bin", "git")
	if forgeGitBuilt(prefix) {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("sandbox: forge git: %w", err)
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, "build.lock"), log)
	if err != nil {
		return "", fmt.Errorf("sandbox: forge git: lock: %w", err)
	}
	defer unlock()
	if forgeGitBuilt(prefix) {
		return bin, nil
	}
	if err := buildForgeGit(ctx, dir, prefix, log); err != nil {
		return "", fmt.Errorf("sandbox: build git %s for the forge: %w", forgeGitVersion, err)
	}
	return bin, nil
}

// forgeGitBuilt: a build left its marker, written after the install.
func forgeGitBuilt(prefix string) bool {
	_, err := os.Stat(filepath.Join(prefix, ".built"))
	return err == nil
}

var gitVersionRE = regexp.MustCompile(`git version (\d+)\.(\d+)`)

// machineGitNewEnough reports whether the git on PATH is minForgeGit or
// newer, and what it printed of its version ("" if it did not run).
func machineGitNewEnough(ctx context.Context) (bool, string) {
	out, err := exec.CommandContext(ctx, "git", "--version").Output()
	if err != nil {
		return false, ""
	}
	return gitNewEnough(string(out)), string(out)
}

// gitNewEnough reads `git --version` output: is it minForgeGit or newer?
func gitNewEnough(version string) bool {
	m := gitVersionRE.FindStringSubmatch(version)
	if m == nil {
		return false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return major > minForgeGit[0] || major == minForgeGit[0] && minor >= minForgeGit[1]
}

// buildForgeGit downloads the pinned source, checks its digest, builds it
// in a temporary tree and installs it under prefix, the marker last. A
// build killed midway leaves no marker: the next one starts over.
func buildForgeGit(ctx context.Context, dir, prefix string, log io.Writer) error {
	start := time.Now()
	fmt.Fprintf(log, "sandbox: building git %s for the test forge into %s (minutes, once: the machine's git is older than %d.%d)\n",
		forgeGitVersion, prefix, minForgeGit[0], minForgeGit[1])
	if err := os.RemoveAll(prefix); err != nil {
		return err
	}
	src, err := os.MkdirTemp(dir, "src-tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	tarball := filepath.Join(src, "git.tar.xz")
	if err := downloadChecked(ctx, forgeGitURL, forgeGitSHA256, tarball); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "tar", "-xJf", tarball, "-C", src).CombinedOutput(); err != nil {
		return fmt.Errorf("unpack %s: %w: %s", forgeGitURL, err, tail(out, 2000))
	}
	logPath := filepath.Join(dir, "build.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	args := append([]string{"-j" + strconv.Itoa(runtime.NumCPU()), "prefix=" + prefix}, forgeGitMake...)
	cmd := exec.CommandContext(ctx, "make", append(args, "install")...)
	cmd.Dir = filepath.Join(src, "git-"+forgeGitVersion)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Run(); err != nil {
		out, _ := os.ReadFile(logPath)
		return fmt.Errorf("make install (log %s): %w: %s", logPath, err, tail(out, 2000))
	}
	if err := os.WriteFile(filepath.Join(prefix, ".built"), nil, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(log, "sandbox: git %s for the test forge built in %s\n", forgeGitVersion, time.Since(start).Round(time.Second))
	return nil
}

// downloadChecked fetches url into path and checks its SHA-256.
func downloadChecked(ctx context.Context, url, sum, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("download %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("download %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, h), resp.Body); err != nil {
		_ = f.Close()
		return fmt.Errorf("download %s: %w", url, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum {
		return fmt.Errorf("download %s: sha256 %s, want %s", url, got, sum)
	}
	return nil
}
