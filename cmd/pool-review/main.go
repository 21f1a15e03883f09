// Command pool-review is the reviewer agent's narrow way to the forge and
// its work tree. As the reviewer's tool server, which the agent server
// starts in each work tree with a fixed argument vector (deploy/opencode,
// docs/reviewer.md "Setting up the reviewer"):
//
//	pool-review mcp --forge URL --token-file PATH [--git PATH]
//
// it offers the tools pr, diff, files, read, search and verdict, which take
// named arguments, no command line (reviewtool.Serve). As a command:
//
//	pool-review pr OWNER/REPO#N
//	pool-review review OWNER/REPO#N --commit SHA --verdict approve --body TEXT
//	pool-review line OWNER/REPO#N --commit SHA --path P --line N --body TEXT
//	pool-review comment OWNER/REPO#N --body TEXT
//
// Called as fixer-sh (the shell of the agent server that runs fixers), it
// runs each command in a sandbox (reviewtool.Shell). Called as git (a link
// named git, first on the agent server's PATH), it is a guard: it runs
// the real git only with arguments that stay in the work tree
// (reviewtool.GitGuard).
//
// Exit codes: 0 done; 1 the forge or git refused or could not be reached;
// 2 bad arguments or environment.
package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"pool/reviewtool"
)

func main() {
	switch filepath.Base(os.Args[0]) {
	case "git":
		os.Exit(reviewtool.GitGuard(os.Args[1:], os.Getenv, os.Stderr))
	case reviewtool.ShellName:
		os.Exit(reviewtool.Shell(os.Args[1:], os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var code int
	if len(os.Args) > 1 && os.Args[1] == "mcp" {
		code = reviewtool.Serve(ctx, os.Args[2:], os.Stdin, os.Stdout, os.Stderr)
	} else {
		code = reviewtool.Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	}
	stop()
	os.Exit(code)
}
