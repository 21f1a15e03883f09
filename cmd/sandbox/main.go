// Command sandbox runs the pool end to end on this machine: a real test forge
// (Gitea, built once and cached), a real OpenCode agent server whose model is
// scripted, a seeded repository with open PRs, and the pool merging them.
//
//	go run ./cmd/sandbox              the demo: 6 PRs, 2 workers, report printed
//	go run ./cmd/sandbox -prepare     only build or install the servers (CI uses this)
//	go run ./cmd/sandbox -serve       seed and keep the servers up, printing how to point pool at them
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"pool/configs"
	"pool/internal/sandbox"
	"pool/serve"
)

func main() {
	prepare := flag.Bool("prepare", false, "only build or install the test servers")
	serve := flag.Bool("serve", false, "seed, then keep the servers running until interrupted")
	prs := flag.Int("prs", 6, "open PRs to seed")
	workers := flag.Int("workers", 2, "pool workers")
	verbose := flag.Bool("v", false, "show server build output and debug logs")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *prepare, *serve, *prs, *workers, *verbose); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox: %v\n", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, prepare, serve bool, prs, workers int, verbose bool) error {
	progress := io.Writer(os.Stderr)
	if prepare {
		return prepareServers(ctx, progress)
	}
	if err := prepareServers(ctx, progress); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "pool-sandbox-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(os.Stderr, "sandbox: starting the forge and the agent server in %s\n", dir)
	sb, err := sandbox.Start(ctx, sandbox.Options{Dir: dir, PRs: prs, Log: progress, Script: sandbox.Reviewer(sandbox.ReadAndApprove)})
	if err != nil {
		return err
	}
	defer sb.Stop()
	fmt.Fprintf(os.Stderr, "sandbox: forge %s (repo %s/%s, %d open PRs), agent server %s (the shipped reviewer from deploy/opencode, reaching the forge with %s)\n",
		sb.Forge.URL, sb.Owner, sb.Repo, len(sb.PRs), sb.Agent.URL, sb.Reviewer.Bin)
	if serve {
		return serveUntilInterrupted(ctx, sb)
	}
	return runPool(ctx, sb, workers, verbose)
}

func prepareServers(ctx context.Context, log io.Writer) error {
	if _, _, err := sandbox.GiteaBinary(ctx, log); err != nil {
		return err
	}
	if _, err := sandbox.ForgeGit(ctx, log); err != nil {
		return err
	}
	_, err := sandbox.OpencodeBinary(ctx, log)
	return err
}

func runPool(ctx context.Context, sb *sandbox.Sandbox, workers int, verbose bool) error {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	cfg := configs.Default()
	cfg.ForgejoURL, cfg.Token, cfg.Owner, cfg.Name = sb.Forge.URL, sb.PoolToken, sb.Owner, sb.Repo
	cfg.AgentURL, cfg.Workers = sb.Agent.URL, workers
	cfg.PollInterval, cfg.StatusInterval = 2*time.Second, 500*time.Millisecond
	cfg.IdleExit, cfg.SessionTimeout = 3, 10*time.Minute
	cfg.ChecksGrace = 0 // the sandbox runs no CI: nothing to wait for
	cfg.StateDir = filepath.Join(sb.Dir, "state")
	if err := cfg.Validate(); err != nil {
		return err
	}
	report, err := serve.Run(ctx, cfg, log)
	fmt.Println()
	if werr := serve.WriteReport(os.Stdout, report); werr != nil {
		return werr
	}
	return err
}

func serveUntilInterrupted(ctx context.Context, sb *sandbox.Sandbox) error {
	tokenFile, err := sb.WriteTokenFile()
	if err != nil {
		return err
	}
	fmt.Printf("\nRun the pool against this sandbox in another shell:\n\n"+
		"  go run ./cmd/pool --forgejo-url %s --forgejo-token-file %s --repo %s/%s --agent-url %s --workers 2 --poll-interval 2s --status-interval 500ms --idle-exit 3\n\n"+
		"Press Ctrl-C to stop the servers.\n", sb.Forge.URL, tokenFile, sb.Owner, sb.Repo, sb.Agent.URL)
	<-ctx.Done()
	return nil
}
