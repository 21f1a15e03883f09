package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// GiteaVersion is the version of the test forge. v1.27 does not build from the
// module proxy reachable here (see FACTS.md, "Running the test forge").
const GiteaVersion = "1.26.0"

const giteaModule = "code.gitea.io/gitea"

// CacheDir returns the directory where sandbox keeps expensive artefacts
// across test runs: $POOL_CACHE_DIR, else $XDG_CACHE_HOME/pool, else
// $HOME/.cache/pool. It is created if missing.
func CacheDir() (string, error) {
	dir := os.Getenv("POOL_CACHE_DIR")
	if dir == "" {
		dir = cacheDirFromXDG()
	}
	if dir == "" {
		return "", errors.New("sandbox: cache dir: none of POOL_CACHE_DIR, XDG_CACHE_HOME, HOME is set")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("sandbox: cache dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("sandbox: cache dir: %w", err)
	}
	return dir, nil
}

func cacheDirFromXDG() string {
	if xdg := os.Getenv("XDG_CACHE_HOME"); xdg != "" {
		return filepath.Join(xdg, "pool")
	}
	if home := os.Getenv("HOME"); home != "" {
		return filepath.Join(home, ".cache", "pool")
	}
	return ""
}

// GiteaBinary returns the path of a gitea binary of GiteaVersion and the
// source directory the server must use as STATIC_ROOT_PATH (the binary is
// built without the bindata tag, so it reads locales and templates from
// there). Both live under <CacheDir>/gitea; when either is missing they are
// built, which takes several minutes on two cores. Concurrent callers, in this
// process or others, wait for a single build.
func GiteaBinary(ctx context.Context, log io.Writer) (bin string, staticRoot string, err error) {
	if log == nil {
		log = io.Discard
	}
	cache, err := CacheDir()
	if err != nil {
		return "", "", err
	}
	dir := filepath.Join(cache, "gitea")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("sandbox: gitea binary: %w", err)
	}
	bin = filepath.Join(dir, "gitea-"+GiteaVersion+"-"+giteaBuild)
	staticRoot = filepath.Join(dir, "src-"+GiteaVersion)
	if giteaCached(bin, staticRoot) {
		return bin, staticRoot, nil
	}

	unlock, err := lockFile(ctx, filepath.Join(dir, "build.lock"), log)
	if err != nil {
		return "", "", fmt.Errorf("sandbox: gitea binary: lock: %w", err)
	}
	defer unlock()
	if giteaCached(bin, staticRoot) { // another builder finished while we waited
		return bin, staticRoot, nil
	}
	removeStaleBuilds(dir)
	if err := buildGitea(ctx, dir, bin, staticRoot, log); err != nil {
		return "", "", fmt.Errorf("sandbox: build gitea %s: %w", GiteaVersion, err)
	}
	return bin, staticRoot, nil
}

// giteaCached reports whether a previous build left both the binary and the
// source tree it reads its locales from.
func giteaCached(bin, staticRoot string) bool {
	fi, err := os.Stat(bin)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o100 == 0 {
		return false
	}
	fi, err = os.Stat(filepath.Join(staticRoot, "options", "locale"))
	return err == nil && fi.IsDir()
}

// removeStaleBuilds deletes the temporary trees of builds that were killed
// midway, and the binaries of earlier builds of other tags or patches (each
// about 150 MB). Only call it while holding the build lock.
func removeStaleBuilds(dir string) {
	olds, _ := filepath.Glob(filepath.Join(dir, "gitea-"+GiteaVersion+"*"))
	for _, old := range olds {
		if filepath.Base(old) != "gitea-"+GiteaVersion+"-"+giteaBuild {
			_ = os.Remove(old)
		}
	}
	stale, _ := filepath.Glob(filepath.Join(dir, "src-tmp-*"))
	for _, d := range stale {
		_ = os.RemoveAll(d)
	}
}

// lockFile takes an exclusive flock on path, polling so that ctx can end the
// wait. The returned function releases it.
func lockFile(ctx context.Context, path string, log io.Writer) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	logged := false
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(fd, syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, err
		}
		if !logged {
			fmt.Fprintf(log, "sandbox: waiting for another build (lock %s)\n", path)
			logged = true
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// buildGitea downloads the gitea module, copies it to a writable directory
// (the module cache is read-only), builds it there and moves the results into
// place, the binary last: its presence means the build is complete.
func buildGitea(ctx context.Context, dir, bin, staticRoot string, log io.Writer) error {
	start := time.Now()
	fmt.Fprintf(log, "sandbox: building gitea %s into %s (takes minutes the first time)\n", GiteaVersion, dir)
	modDir, err := downloadGiteaModule(ctx, dir)
	if err != nil {
		return err
	}
	src, err := os.MkdirTemp(dir, "src-tmp-")
	if err != nil {
		return err
	}
	if err := os.Chmod(src, 0o755); err != nil { // MkdirTemp makes it 0700
		return err
	}
	defer os.RemoveAll(src) // a no-op once renamed into place
	fmt.Fprintf(log, "sandbox: copying %s to %s\n", modDir, src)
	if err := os.CopyFS(src, os.DirFS(modDir)); err != nil {
		return fmt.Errorf("copy module source: %w", err)
	}
	if err := patchGitea(src); err != nil {
		return err
	}
	tmpBin := filepath.Join(src, "gitea.out")
	fmt.Fprintf(log, "sandbox: go build (output in %s)\n", filepath.Join(dir, "build.log"))
	if err := goBuildGitea(ctx, src, tmpBin, filepath.Join(dir, "build.log")); err != nil {
		return err
	}
	return installGitea(src, tmpBin, bin, staticRoot, log, time.Since(start))
}

func downloadGiteaModule(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", giteaModule+"@v"+GiteaVersion)
	cmd.Dir = dir // outside any module, so no go.mod is touched
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var mod struct {
		Dir   string
		Error string
	}
	if jerr := json.Unmarshal(out, &mod); jerr != nil && err == nil {
		err = jerr
	}
	if err != nil || mod.Error != "" || mod.Dir == "" {
		return "", fmt.Errorf("go mod download: %v %s: %s", err, mod.Error, tail(stderr.Bytes(), 2000))
	}
	return mod.Dir, nil
}

// giteaBuild names the build's tags and patches (giteaPatches) in the
// binary's name, so that a cache holding another build builds again.
const giteaBuild = "gogit-tokencache"

// giteaTags are the build tags: the sqlite driver, and gogit, one of
// Gitea's own build variants, which reads the repositories' objects with
// go-git inside the server instead of starting git processes. The API and
// its answers are the same; what changes is the forge's CPU. Without it
// Gitea starts `git cat-file --batch-command` and `git hash-object --stdin`
// (to learn the object format) each time a request opens a repository: in
// TestSixPRsTwoWorkers alone (2026-12-04) the forge started 1,206 git
// processes, 603 of them those two, and with it 584. Starting a process
// costs 3-4 ms of CPU on this kind of VM, a short git command 9-10 ms. The
// whole test command's CPU in CI runs: 33.3 minutes before, 29.6 and 30.0
// after (docs/testing.md, "The test forge's build").
const giteaTags = "sqlite sqlite_unlock_notify gogit"

// goBuildGitea builds with cgo (the sqlite driver needs it), giteaTags and
// the version ldflag (without it the server reports "development", which
// SDK clients refuse).
func goBuildGitea(ctx context.Context, src, out, logPath string) error {
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, "go", "build",
		"-tags", giteaTags,
		"-ldflags", "-X main.Version="+GiteaVersion,
		"-o", out, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "GOWORK=off")
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Run(); err != nil {
		buildLog, _ := os.ReadFile(logPath)
		return fmt.Errorf("go build: %w: %s", err, tail(buildLog, 2000))
	}
	return nil
}

// installGitea renames the built source tree and binary into place. The old
// source tree, if any, belongs to an incomplete earlier build (the binary is
// missing, else we would not be building) and is replaced.
func installGitea(src, tmpBin, bin, staticRoot string, log io.Writer, took time.Duration) error {
	if err := os.RemoveAll(staticRoot); err != nil {
		return err
	}
	if err := os.Rename(src, staticRoot); err != nil {
		return err
	}
	builtBin := filepath.Join(staticRoot, filepath.Base(tmpBin))
	if err := os.Rename(builtBin, bin); err != nil {
		return err
	}
	fmt.Fprintf(log, "sandbox: gitea %s built in %s: %s\n", GiteaVersion, took.Round(time.Second), bin)
	return nil
}

// tail returns at most the last n bytes of b, as a string.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(bytes.TrimSpace(b))
}
