package main

// The read-only commands, pool report and pool tick: their flags, settings
// and output. What they observe and how they judge it is package report's.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/pflag"

	"pool/configs"
	"pool/forge"
	"pool/forgejo"
	"pool/forgejo/sdkclient"
	"pool/report"
)

// Exit codes of the commands.
const (
	exitOK      = 0 // produced, whatever it says
	exitNoPR    = 1 // the PR could not be read at all
	exitBadArgs = 2
)

const (
	reportUsage = "usage: pool report OWNER/REPO#N [--json] [--wait] [--interval 30s] [--cap 20m] [--config pool.yaml] [--reviewers a,b [--allow-unofficial-reviewers]] [--skip-label L] [--merge-update MODE] [--forgejo-url URL] [--forgejo-token-file FILE]"
	tickUsage   = "usage: pool tick OWNER/REPO#N [--prompt] [--auto-merge] [--config pool.yaml] [--reviewers a,b [--allow-unofficial-reviewers]] [--skip-label L] [--merge-update MODE] [--forgejo-url URL] [--forgejo-token-file FILE]"
)

// reportCmd runs `pool report`; args follow the command name. It prints
// the report block (or its JSON) on stdout and failed reads on stderr.
func reportCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("report", reportUsage, stderr)
	conn := addConnFlags(fs)
	jsonOut := fs.Bool("json", false, "print the report as one JSON object")
	wait := fs.Bool("wait", false, "poll until checks are terminal and every reviewer is done")
	interval := fs.Duration("interval", report.DefaultInterval, "time between polls with --wait")
	capAfter := fs.Duration("cap", report.DefaultCap, "stop polling after this long; what is still pending becomes timeout")
	t, code := parseArgs(fs, args, stderr, "report")
	if code >= 0 {
		return code
	}
	if *interval <= 0 || *capAfter <= 0 {
		return usageError(stderr, "report", errors.New("--interval and --cap must be positive"))
	}
	c, settings, code := conn.client(ctx, stderr, "report")
	if code >= 0 {
		return code
	}
	var w *report.Wait
	if *wait {
		w = &report.Wait{Interval: *interval, Cap: *capAfter}
	}
	r, err := report.Produce(ctx, c, t, settings.Policy(), settings.StatusContext, w)
	if err != nil {
		fmt.Fprintf(stderr, "pool report: %s: %v\n", t, err)
		return exitNoPR
	}
	for _, e := range r.Errors {
		fmt.Fprintf(stderr, "pool report: %s\n", e)
	}
	return writeReport(stdout, stderr, r, *jsonOut)
}

func writeReport(stdout, stderr io.Writer, r report.Report, asJSON bool) int {
	out := r.Render()
	if asJSON {
		b, err := r.JSON()
		if err != nil {
			fmt.Fprintf(stderr, "pool report: encode JSON: %v\n", err)
			return exitNoPR
		}
		out = string(b) + "\n"
	}
	if _, err := io.WriteString(stdout, out); err != nil {
		fmt.Fprintf(stderr, "pool report: write: %v\n", err)
		return exitNoPR
	}
	return exitOK
}

// tickCmd runs `pool tick`; args follow the command name. It prints the
// digest as JSON (or as a prompt section) on stdout.
func tickCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("tick", tickUsage, stderr)
	conn := addConnFlags(fs)
	fs.Bool("json", true, "print the digest as JSON (the default)")
	prompt := fs.Bool("prompt", false, "print the items as the prompt section a reviewer is given")
	autoMerge := fs.Bool("auto-merge", false, "the pool merges with auto-merge: report auto-merge-not-armed (env POOL_TICK_AUTO_MERGE)")
	t, code := parseArgs(fs, args, stderr, "tick")
	if code >= 0 {
		return code
	}
	if err := envBool(fs, "auto-merge", "POOL_TICK_AUTO_MERGE"); err != nil {
		return usageError(stderr, "tick", err)
	}
	c, settings, code := conn.client(ctx, stderr, "tick")
	if code >= 0 {
		return code
	}
	opt := report.TickOptionsFor(settings.Policy(), settings.StatusContext, *autoMerge)
	d, err := report.Tick(ctx, c, t.Owner, t.Repo, t.Number, opt)
	if err != nil {
		fmt.Fprintf(stderr, "pool tick: %v\n", err)
		return exitNoPR
	}
	for _, e := range d.Errors {
		fmt.Fprintf(stderr, "pool tick: %s\n", e)
	}
	return writeDigest(stdout, stderr, d, *prompt)
}

func writeDigest(stdout, stderr io.Writer, d report.Digest, prompt bool) int {
	out := d.PromptSection()
	if !prompt {
		b, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "pool tick: encode JSON: %v\n", err)
			return exitNoPR
		}
		out = string(b) + "\n"
	}
	if _, err := io.WriteString(stdout, out); err != nil {
		fmt.Fprintf(stderr, "pool tick: write: %v\n", err)
		return exitNoPR
	}
	return exitOK
}

func newFlagSet(cmd, usage string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("pool "+cmd, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags and the one OWNER/REPO#N argument. A code >= 0
// means stop with that exit code.
func parseArgs(fs *pflag.FlagSet, args []string, stderr io.Writer, cmd string) (forge.Target, int) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return forge.Target{}, exitOK
		}
		return forge.Target{}, exitBadArgs // pflag has printed the error and usage
	}
	if fs.NArg() != 1 {
		return forge.Target{}, usageError(stderr, cmd, fmt.Errorf("want one OWNER/REPO#N, got %d arguments", fs.NArg()))
	}
	t, err := forge.ParseTarget(fs.Arg(0))
	if err != nil {
		return forge.Target{}, usageError(stderr, cmd, err)
	}
	return t, -1
}

func usageError(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "pool %s: %v\n", cmd, err)
	return exitBadArgs
}

// envBool sets a bool flag from the environment unless the command line set it.
func envBool(fs *pflag.FlagSet, flag, env string) error {
	v, ok := os.LookupEnv(env)
	if !ok || fs.Changed(flag) {
		return nil
	}
	if _, err := strconv.ParseBool(v); err != nil {
		return fmt.Errorf("%s: want true or false, got %q", env, v)
	}
	return fs.Set(flag, v)
}

// connFlags say where the forge is, how to authenticate and what the
// supervisor's policy is, as configs reads them for the supervisor: the
// same file, keys, environment variables, defaults and checks
// (configs.ForgeFlags). The token comes from POOL_FORGEJO_TOKEN or a file;
// it is never printed.
type connFlags struct {
	resolve func() (configs.Config, error)
}

func addConnFlags(fs *pflag.FlagSet) connFlags {
	return connFlags{resolve: configs.ForgeFlags(fs)}
}

// client connects to the forge. A code >= 0 means stop with that exit code:
// bad settings are usage errors, an unreachable forge means the PR could
// not be read.
// The settings are returned too: the pool's own commit status context is
// among them (its status is no check).
func (f connFlags) client(ctx context.Context, stderr io.Writer, cmd string) (*sdkclient.Client, configs.Config, int) {
	cfg, err := f.resolve()
	if err != nil {
		return nil, cfg, usageError(stderr, cmd, err)
	}
	c, err := sdkclient.New(ctx, cfg.ForgejoURL, cfg.Token, forgejo.Options{MaxBody: cfg.MaxBody})
	if err != nil {
		fmt.Fprintf(stderr, "pool %s: %v\n", cmd, err)
		return nil, cfg, exitNoPR
	}
	return c, cfg, -1
}
