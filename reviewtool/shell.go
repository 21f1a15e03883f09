package reviewtool

import (
	"fmt"
	"io"
	"os"
	"syscall"

	"pool/internal/bwrap"
)

// ShellName is the name pool-review answers to as a fixer's shell: the
// agent server that runs fixers names it in its config ("shell"), and
// every command its bash tool runs goes through it.
const ShellName = "fixer-sh"

// Shell runs `fixer-sh -c COMMAND` in the sandbox (package bwrap): in the
// work tree of the working directory, the only place it may write, with no
// network, a fixed environment and none of the machine's files but its
// programs and libraries and the clone's objects the tree borrows. In a
// tree the pool marked a reviewer's (bwrap.ReviewerMark) it runs the
// command as it is, with /bin/sh: a reviewer runs no code of the PR's and
// needs pool-review to reach the forge. Outside a work tree of the pool's
// it runs nothing. It returns only on failure.
func Shell(args []string, stderr io.Writer) int {
	if len(args) != 2 || args[0] != "-c" {
		fmt.Fprintf(stderr, "%s: usage: %s -c COMMAND\n", ShellName, ShellName)
		return exitUsage
	}
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", ShellName, err)
		return exitUsage
	}
	tree, objects, err := bwrap.WorkTree(wd)
	if err != nil {
		fmt.Fprintf(stderr, "%s: refused: %v\n", ShellName, err)
		return exitUsage
	}
	if _, err := os.Stat(bwrap.ReviewerMark(tree)); err == nil {
		err = syscall.Exec("/bin/sh", []string{"sh", "-c", args[1]}, os.Environ())
		fmt.Fprintf(stderr, "%s: run /bin/sh: %v\n", ShellName, err)
		return exitFail
	}
	var env []string
	for _, k := range bwrap.Identity {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	argv := append([]string{"bwrap"}, bwrap.Args(tree, wd, []string{objects}, env, []string{"/bin/sh", "-c", args[1]})...)
	err = syscall.Exec(bwrap.Path, argv, []string{"PATH=/usr/bin:/bin"})
	fmt.Fprintf(stderr, "%s: run %s: %v\n", ShellName, bwrap.Path, err)
	return exitFail
}
