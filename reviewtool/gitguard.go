package reviewtool

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The agent server's permissions match a command's text; git sees its
// arguments after the shell has expanded them. `git diff /dev/null FILE`
// names no option the permissions deny, yet git diffs any two paths without
// --no-index when one is outside the repository, so it printed the token
// file; and quotes, variables ($POOL_REVIEW_TOKEN_FILE) and `..` reach
// the same. So the agent server's PATH leads `git` here first (a link to
// pool-review named git): GitGuard checks the arguments git will get, and
// runs the real git only if they stay in the work tree.

// guarded are the git commands the shipped agents may run. Any other (the
// agent server's own git calls) goes to git as it is: the permissions do
// not let the agent run it.
var guarded = map[string]bool{"diff": true, "log": true, "show": true, "status": true, "add": true, "commit": true}

// deniedOptions read or write a file named in an argument or standard
// input, or run a command. An abbreviation git would take for one is
// refused too.
var deniedOptions = []string{"--no-index", "--output", "--ext-diff", "--textconv", "--contents", "--stdin",
	"--pathspec-from-file", "--file", "--template", "--no-verify", "--orderfile", "--exec", "--upload-pack"}

// GitGuard runs the real git with args if CheckGitArgs allows them, as the
// process itself (exec). Otherwise it says why on stderr and returns 2; 1
// if git could not be run.
func GitGuard(args []string, getenv func(string) string, stderr io.Writer) int {
	if err := CheckGitArgs(args); err != nil {
		fmt.Fprintf(stderr, "pool-review: git %s refused: %v\n", strings.Join(args, " "), err)
		return exitUsage
	}
	git, err := realGit(getenv("PATH"))
	if err != nil {
		fmt.Fprintf(stderr, "pool-review: %v\n", err)
		return exitUsage
	}
	err = syscall.Exec(git, append([]string{"git"}, args...), os.Environ())
	fmt.Fprintf(stderr, "pool-review: run %s: %v\n", git, err)
	return exitFail
}

// CheckGitArgs refuses, for the guarded commands, a path outside the work
// tree (absolute, or through ..), and the options in deniedOptions.
func CheckGitArgs(args []string) error {
	if len(args) == 0 || !guarded[args[0]] {
		return nil
	}
	paths := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case paths || !strings.HasPrefix(a, "-"):
			if err := checkGitPath(a); err != nil {
				return err
			}
		case a == "--":
			paths = true
		case args[0] == "commit" && (a == "-m" || a == "--message"):
			i++ // the message is text, not a path
		case strings.HasPrefix(a, "--"):
			if err := checkLongOption(a); err != nil {
				return err
			}
		default:
			if err := checkShortOptions(a); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkGitPath(a string) error {
	if filepath.IsAbs(a) || strings.HasPrefix(a, "~") {
		return fmt.Errorf("%s: not a path in the work tree", a)
	}
	for _, seg := range strings.Split(a, "/") {
		if seg == ".." || strings.HasSuffix(seg, ":..") {
			return fmt.Errorf("%s: .. leads out of the work tree", a)
		}
	}
	return nil
}

// checkShortOptions refuses -O (an order file) and -F (a message file, or
// for log a plain-text search) among short options run together, up to
// the first option that takes the rest as its value (-S, -G, -U, -n...).
func checkShortOptions(a string) error {
	for _, c := range a[1:] {
		switch {
		case c == 'O' || c == 'F':
			return fmt.Errorf("%s: -O and -F read a file", a)
		case strings.ContainsRune("SGUMCBlnL", c):
			return nil
		}
	}
	return nil
}

func checkLongOption(a string) error {
	name, _, _ := strings.Cut(a, "=")
	for _, d := range deniedOptions {
		if strings.HasPrefix(d, name) || strings.HasPrefix(name, d) {
			return fmt.Errorf("%s: %s is not allowed", a, d)
		}
	}
	return nil
}

// realGit is the first git on path that is not this program.
func realGit(path string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find git: %w", err)
	}
	me, err := os.Stat(self)
	if err != nil {
		return "", fmt.Errorf("find git: %w", err)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // a relative PATH entry would be the work tree's
		}
		cand := filepath.Join(dir, "git")
		fi, err := os.Stat(cand)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 || os.SameFile(fi, me) {
			continue
		}
		return cand, nil
	}
	return "", errors.New("find git: no git on PATH but this guard")
}
