// Command pool-review is the reviewer agent's narrow way to the forge: read a
// PR, submit a review with a verdict on its head commit, comment on a line,
// post a signed comment (a fixer commits; the pool pushes). The agent's bash permission
// allows this command and no other way out (see deploy/opencode and the
// README, "Setting up the reviewer").
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
	code := reviewtool.Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
