// Command pool keeps N AI reviewer sessions busy on a Forgejo repository's
// open pull requests and drives each one to merged.
//
//	pool [run] [flags]          supervise (the default)
//	pool report OWNER/REPO#N    one PR's state, observed, never guessed
//	pool tick OWNER/REPO#N      one PR's actionable items, as JSON
//	pool hook install           register the pool's webhook on the repository
//	pool status --ops-url URL   a running pool's slots and PRs, as a table
//	pool reap --under DIR       as the agent server's user: end what a session left in a work tree
//	pool version                the version, commit and Go version
//
// Exit codes: 0 idle exit or signal; 1 fatal at run time, a panic included;
// 2 usage or config error (a relaunch hook must not relaunch on 2).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"pool/configs"
	"pool/internal/guard"
	"pool/internal/reap"
	"pool/ops"
	"pool/serve"
)

// panicExitAfter is how long a panicked pool gets to shut down cleanly
// before the process exits 1 regardless.
const panicExitAfter = 2 * time.Minute

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, stopGuard := guard.WithPanics(ctx, func(*guard.PanicError) {
		time.AfterFunc(panicExitAfter, func() {
			fmt.Fprintln(os.Stderr, "pool: still not stopped after a panic; exiting 1")
			os.Exit(1)
		})
	})
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stopGuard()
	stop()
	os.Exit(code)
}

// run runs one command. A panic on its own goroutine, or in a goroutine the
// pool started under ctx (see guard), is exit 1: relaunchable, never Go's 2.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if v := recover(); v != nil {
			log := slog.New(slog.NewTextHandler(stderr, nil))
			log.Error("pool panicked", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			code = 1
		}
	}()
	cmd := "run"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	if cmd == "run" && len(args) > 0 && args[0] == "--version" {
		cmd = "version"
	}
	switch cmd {
	case "run":
		if wantsHelp(args) {
			fmt.Fprintf(stdout, "%s\n\nFlags of pool run (each also a config key and a POOL_ variable):\n%s", usage, configs.RunUsage())
			return 0
		}
		return supervise(ctx, args, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, version())
		return 0
	case "report":
		return reportCmd(ctx, args, stdout, stderr)
	case "tick":
		return tickCmd(ctx, args, stdout, stderr)
	case "hook":
		return hook(ctx, args, stdout, stderr)
	case "status":
		return status(ctx, args, stdout, stderr)
	case "reap":
		return reapTree(ctx, args, os.Stdin, stdout, stderr)
	case "help":
		fmt.Fprintf(stdout, "%s\n\nFlags of pool run (each also a config key and a POOL_ variable):\n%s", usage, configs.RunUsage())
		return 0
	}
	fmt.Fprintf(stderr, "pool: unknown command %q\n%s\n", cmd, usage)
	return 2
}

const usage = `usage:
  pool [run] [flags]            supervise reviewer sessions (the default; flags below)
  pool report OWNER/REPO#N      one PR's CI, reviews and threads, observed, never guessed
  pool tick OWNER/REPO#N        the actionable items on one PR, as JSON
  pool hook install [flags]     register the pool's webhook (--hook-url, webhook secret) on the repository
  pool status --ops-url URL     a running pool's slots, PRs and warnings, read from its ops listener
  pool reap --under DIR         as the agent server's user, started by systemd for each connection on the
                                pool's reaper socket: end the processes a session left in the work tree
                                named on standard input (docs/design.md, Work trees)
  pool version                  the version, commit and Go version of this binary (also --version)
  pool help                     this text (also --help)`

// wantsHelp reports whether args ask for help rather than a run.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "--help", "-help":
			return true
		case "--":
			return false
		}
	}
	return false
}

// version names the build from its build info: the module version, the
// commit (marked when the tree had changes) and the Go version.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "pool (no build info)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	commit := settings["vcs.revision"]
	switch {
	case commit == "":
		commit = "unknown"
	case settings["vcs.modified"] == "true":
		commit += " (modified)"
	}
	if t := settings["vcs.time"]; t != "" {
		commit += " of " + t
	}
	return fmt.Sprintf("pool %s, commit %s, %s", info.Main.Version, commit, info.GoVersion)
}

func supervise(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := configs.Load(args)
	if err != nil {
		return configFailure(err, stderr)
	}
	log := newLogger(stderr, cfg.LogFormat)
	logConfigFile(log, cfg)
	summary, err := serve.Run(ctx, cfg, log)
	if summary.InstanceID != "" { // the pool started: report, whatever ended it
		if werr := serve.WriteReport(stdout, summary); werr != nil {
			log.Error("writing the report failed", "err", werr)
		}
	}
	return exitCode(ctx, err, stderr, log)
}

// exitCode maps how a supervisor run ended: 2 for a configuration error,
// 1 for a run-time failure or a panic in any goroutine the pool started
// (whatever else ended the run), 0 for an idle exit or a signal, even one
// that cut its start short.
func exitCode(ctx context.Context, err error, stderr io.Writer, log *slog.Logger) int {
	panicked := guard.Panicked(ctx)
	if panicked != nil {
		err = panicked
	}
	switch {
	case err == nil:
		return 0
	case configs.IsConfigError(err):
		return configFailure(err, stderr)
	case panicked == nil && ctx.Err() != nil:
		// A signal stopped the pool while it was starting (a clone or a
		// forge call cut short): a stop that was asked for, not a failure.
		log.Info("pool stopped by a signal before it was up", "err", err)
		return 0
	}
	log.Error("pool stopped", "err", err)
	return 1
}

func hook(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "install" {
		fmt.Fprintf(stderr, "pool: usage: pool hook install [flags]\n")
		return 2
	}
	cfg, err := configs.Load(args[1:])
	if err != nil {
		return configFailure(err, stderr)
	}
	logConfigFile(slog.New(slog.NewTextHandler(stderr, nil)), cfg)
	if err := serve.InstallHook(ctx, cfg); err != nil {
		if configs.IsConfigError(err) {
			return configFailure(err, stderr)
		}
		fmt.Fprintf(stderr, "pool: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "webhook installed on %s for %s\n", serve.HookTargets(cfg), cfg.HookURL)
	return 0
}

// logConfigFile says which config file was read: ./pool.yaml is read when
// present, so its use must be visible.
func logConfigFile(log *slog.Logger, cfg configs.Config) {
	if cfg.File == "" {
		return
	}
	path, err := filepath.Abs(cfg.File)
	if err != nil {
		path = cfg.File
	}
	log.Info("config file loaded", "file", path)
}

func configFailure(err error, stderr io.Writer) int {
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "pool: %v\n", err)
	return 2
}

// status prints a running pool's status, read from its ops listener.
func status(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("status", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("ops-url", os.Getenv("POOL_OPS_URL"), "`URL` of the pool's ops listener, e.g. http://127.0.0.1:9090 (env POOL_OPS_URL)")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	if err := fs.Parse(args); err != nil {
		return configFailure(err, stderr)
	}
	if *url == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "pool: usage: pool status --ops-url URL [--json]")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := ops.Fetch(ctx, &http.Client{}, *url)
	if err != nil {
		fmt.Fprintf(stderr, "pool: %v\n", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(st)
	} else {
		err = ops.WriteTable(stdout, st)
	}
	if err != nil {
		fmt.Fprintf(stderr, "pool: write status: %v\n", err)
		return 1
	}
	return 0
}

// newLogger logs to w in the configured format at POOL_LOG_LEVEL.
func newLogger(w io.Writer, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: logLevel()}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("POOL_LOG_LEVEL"))); err != nil {
		return slog.LevelInfo
	}
	return l
}

// reapGrace is how long a process the helper ends has to go on SIGTERM.
const reapGrace = 2 * time.Second

// reapTree is the helper the pool asks, where the agent server runs as a
// user of its own, to end what a session left in a work tree (package
// reap): one request on stdin, the answer on stdout.
func reapTree(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("reap", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("under", "", "the `directory` the work trees are under (the pool's state directory)")
	if err := fs.Parse(args); err != nil {
		return configFailure(err, stderr)
	}
	if *root == "" || !filepath.IsAbs(*root) || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "pool: usage: pool reap --under DIR (an absolute path)")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := reap.Serve(ctx, stdin, stdout, *root, reapGrace); err != nil {
		fmt.Fprintf(stderr, "pool: reap: %v\n", err)
		return 1
	}
	return 0
}
