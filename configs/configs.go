// Package configs loads and validates the pool's configuration in one place.
//
// Sources, lowest precedence first: built-in defaults, the config file
// (--config, POOL_CONFIG, or ./pool.yaml when present), POOL_* environment
// variables, then command-line flags. viper stays inside this package; the
// rest of the pool sees only the typed Config.
package configs

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"pool/internal/bounded"
	"pool/internal/redact"
)

// Config is the validated configuration of one pool process.
type Config struct {
	ForgejoURL string
	// Token is the forge token. It is never logged: Config has a String
	// method that redacts it.
	Token string
	// Owner and Name are the first repository served: the only one, unless
	// Several.
	Owner string
	Name  string
	// Repos are all the repositories named ("owner/name"), from repo
	// (--repo, which may be repeated) and repos, each once.
	Repos []string
	// Org adds every repository of this organisation the token can see,
	// listed again every OrgRelist.
	Org string
	// OrgRelist is how often Org's repositories are listed again.
	OrgRelist time.Duration
	// MaxPerRepo caps the slots one repository holds; 0: no cap.
	MaxPerRepo int

	AgentURL      string
	AgentName     string
	AgentPassword string
	// AgentAllowNoPassword lets the pool use an agent server off loopback
	// that answers without a password.
	AgentAllowNoPassword bool
	// AgentTreeGroup is the OS group the agent server's user is in: the
	// work trees are shared with it and nothing else (clone.Options).
	AgentTreeGroup string
	// AgentServers are the agent servers the sessions run on
	// (agent.servers); empty: the one at AgentURL, with AgentPassword and
	// Workers (Servers). With them, Workers is the sum of their workers.
	AgentServers []AgentServer
	// AgentReaper is the socket of the helper that ends, as the agent
	// server's user, the processes a session left in its work tree
	// (clone.Options.Reaper); empty: the pool does it itself, for the
	// processes it may see.
	AgentReaper string

	Workers         int
	InstanceID      string
	PollInterval    time.Duration
	StatusInterval  time.Duration
	ClaimTTL        time.Duration
	IdleExit        int
	DiagnosticEvery int
	SkipLabel       string
	StateDir        string
	SpecFile        string
	GitName         string
	GitEmail        string

	// Reviewers narrows whose reviews count to these accounts. Empty means
	// any account the forge marks official (write access, or the approvals
	// whitelist), but the PR's author (lifecycle.ReviewRule).
	Reviewers []string
	// AllowUnofficial lets the listed Reviewers count without write access.
	AllowUnofficial bool
	// HumanReviewers are the accounts whose own reviews count; any other
	// account's (the reviewer agent's) count only when a session of the
	// pool filed them for the head (lifecycle.ReviewRule.Sessions).
	HumanReviewers []string
	// ChecksGrace is how long an approved head with no statuses, on a
	// branch that requires none, waits for a CI to report before merging.
	ChecksGrace time.Duration
	// TrustedClaimers are accounts, besides the token's own, whose claim
	// comments are honoured.
	TrustedClaimers []string
	// Fixers says when the pool starts a fixer session on an approved PR
	// whose checks fail.
	Fixers Fixers
	// Reviews says whose PRs get review sessions, and how many.
	Reviews Reviews

	SessionTimeout  time.Duration
	ShutdownTimeout time.Duration
	AbortOnExit     bool
	MergeStyle      string
	// MergeUpdate says when a PR behind its base is updated before its
	// merge: always, when_required (the protection blocks outdated
	// branches) or never; UpdateStyle how: merge or rebase.
	MergeUpdate string
	UpdateStyle string
	// MergeTrain says when PRs of one base are merged as a train (package
	// train): off, auto (the protection blocks outdated branches) or
	// always; TrainSize is the most cars of one train.
	MergeTrain string
	TrainSize  int
	// AutoMerge is refused: the forge's scheduled merge is not pinned to a
	// head (see Validate).
	AutoMerge bool

	// Listen is the address the webhook receiver serves on ("" = off).
	Listen string
	// WebhookSecret signs deliveries; never logged.
	WebhookSecret string
	// HookURL is where the forge delivers webhooks, for `pool hook install`.
	HookURL string

	// OpsListen is the address of the ops listener (health, metrics, status
	// page); "" = off. A bare port binds loopback.
	OpsListen string
	// OpsURL is where people reach the ops listener, for the links in
	// commit statuses; "" = no links.
	OpsURL string
	// StatusContext names the pool's own commit status on each PR's head;
	// "" = no commit status.
	StatusContext string
	// LogFormat is text or json.
	LogFormat string
	// MaxBody caps every answer read from the forge or the agent server.
	MaxBody int64
	// AllowInsecureHTTP permits http:// to a host other than loopback for
	// the forge and the agent server, whose credentials then travel in clear.
	AllowInsecureHTTP bool

	// File is the config file that was read ("" when none), for the log.
	File string

	DryRun bool
	Once   bool
}

// Reviews is the reviews section: who spends the model's budget.
type Reviews struct {
	// PerPR and PerAuthor cap the review sessions started in 24 hours on
	// one PR and on one author's PRs (reviews.budget).
	PerPR, PerAuthor int
	// Authors is whose PRs get sessions: AuthorsCollaborators (the
	// repository's collaborators and its organisation's members) or
	// AuthorsAnyone.
	Authors string
	// AllowLabel is the label a maintainer puts on a PR to give it sessions
	// past the budget, or by an author Authors leaves out.
	AllowLabel string
}

// The values of reviews.authors.
const (
	AuthorsCollaborators = "collaborators"
	AuthorsAnyone        = "anyone"
)

// Fixers is the fixers section.
type Fixers struct {
	// Enabled starts fixers at all (default true).
	Enabled bool
	// Forks starts them on PRs whose head is in another repository too: the
	// fixer then pushes to a stranger's repository (default false).
	Forks bool
	// Token is the account's the pool pushes a fixer's commits with; ""
	// means the forge token. Never logged; the agent side never sees it.
	Token string
}

// AgentServer is one agent server of agent.servers.
type AgentServer struct {
	URL      string
	Password string // never logged
	// Workers are the sessions it runs at once.
	Workers int
	// Role says which sessions it runs: RoleReview, RoleFix or RoleBoth.
	Role string
	// Labels describe it on the status page (a model's name, a machine's).
	Labels map[string]string
}

// The roles of an agent server.
const (
	RoleReview = "review"
	RoleFix    = "fix"
	RoleBoth   = "both"
)

// Reviews reports whether the server runs reviewer sessions.
func (a AgentServer) Reviews() bool { return a.Role == RoleReview || a.Role == RoleBoth }

// Fixes reports whether the server runs fixer sessions.
func (a AgentServer) Fixes() bool { return a.Role == RoleFix || a.Role == RoleBoth }

// Servers are the agent servers the sessions run on: agent.servers, or
// the one agent.url names, with agent.password and workers, for both
// roles.
func (c Config) Servers() []AgentServer {
	if len(c.AgentServers) > 0 {
		return c.AgentServers
	}
	return []AgentServer{{URL: c.AgentURL, Password: c.AgentPassword, Workers: c.Workers, Role: RoleBoth}}
}

// Repo is "owner/name".
func (c Config) Repo() string { return c.Owner + "/" + c.Name }

// Several reports whether the pool serves more than one repository, or an
// organisation's, in one process.
func (c Config) Several() bool { return len(c.Repos) > 1 || c.Org != "" }

// For returns the configuration of one of the repositories served.
func (c Config) For(repo string) Config {
	c.Owner, c.Name = splitRepo(repo)
	c.Repos, c.Org = []string{repo}, ""
	return c
}

// String renders the config for logs, with the token redacted.
func (c Config) String() string {
	c.Token = hidden(c.Token)
	c.AgentPassword = hidden(c.AgentPassword)
	servers := make([]AgentServer, len(c.AgentServers))
	for i, a := range c.AgentServers {
		a.Password = hidden(a.Password)
		servers[i] = a
	}
	c.AgentServers = servers
	c.WebhookSecret = hidden(c.WebhookSecret)
	type plain Config // drop the String method to avoid recursion
	return fmt.Sprintf("%+v", plain(c))
}

func hidden(s string) string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// Error names the config key at fault and why. Callers map it to exit code 2.
type Error struct {
	Key    string
	Reason string
}

// Error never shows a URL's user info, whatever value it quotes.
func (e *Error) Error() string {
	return redact.Text(fmt.Sprintf("config: %s: %s", e.Key, e.Reason))
}

// IsConfigError reports whether err is a configuration or usage error.
func IsConfigError(err error) bool {
	var ce *Error
	return errors.As(err, &ce) || errors.Is(err, pflag.ErrHelp)
}

// key, flag name, env names and default of every setting.
type setting struct {
	key, flag string
	env       []string
	def       string
	usage     string
}

var settings = []setting{
	{"forgejo.url", "forgejo-url", []string{"POOL_FORGEJO_URL"}, "", "base `URL` of the Forgejo server (required)"},
	{"forgejo.token", "", []string{"POOL_FORGEJO_TOKEN"}, "", ""},
	{"forgejo.token_file", "forgejo-token-file", []string{"POOL_FORGEJO_TOKEN_FILE"}, "", "`file` holding the forge token"},
	{"repo", "repo", []string{"POOL_REPO"}, "", "repository as `owner/name`; repeat it to serve several (required, unless repos or org)"},
	{"repos", "", []string{"POOL_REPOS"}, "", ""},
	{"org", "org", []string{"POOL_ORG"}, "", "serve every repository of this `organisation` the token can see"},
	{"org_relist", "org-relist", []string{"POOL_ORG_RELIST"}, "10m", "list the organisation's repositories again after this `duration`, to serve new ones and drop archived ones"},
	{"max_per_repo", "max-per-repo", []string{"POOL_MAX_PER_REPO"}, "0", "at most `N` of the workers on one repository (0: no cap)"},
	{"agent.url", "agent-url", []string{"POOL_AGENT_URL"}, "http://localhost:4096", "agent (OpenCode) server `URL`"},
	{"agent.name", "agent", []string{"POOL_AGENT_NAME"}, "ca-pr-self-reviewer", "`agent` that reviews a PR"},
	{"agent.password", "", []string{"POOL_AGENT_PASSWORD", "OPENCODE_SERVER_PASSWORD"}, "", ""},
	{"agent.allow_no_password", "agent-allow-no-password", []string{"POOL_AGENT_ALLOW_NO_PASSWORD"}, "false", "use an agent server off loopback that answers without a password (a `bool`; anyone who reaches it runs commands as its user)"},
	{"agent.servers", "", nil, "", ""},
	{"agent.tree_group", "agent-tree-group", []string{"POOL_AGENT_TREE_GROUP"}, "", "OS `group` of the agent server's user, when it runs as a user of its own: the work trees are shared with it, nothing else (empty: the pool's alone)"},
	{"agent.reaper_socket", "agent-reaper-socket", []string{"POOL_AGENT_REAPER_SOCKET"}, "", "unix `socket` of the helper (pool reap) that ends, as the agent server's user, the processes a session left in its work tree (empty: the pool ends those it may see)"},
	{"workers", "workers", []string{"POOL_WORKERS", "CA_MAX_PARALLEL_WORKERS"}, "4", "`N` concurrent reviewer sessions"},
	{"instance_id", "instance-id", []string{"POOL_INSTANCE_ID"}, "", "`identity` of this pool (default: kept in the state dir)"},
	{"poll_interval", "poll-interval", []string{"POOL_POLL_INTERVAL"}, "30s", "time between discovery cycles (a `duration`)"},
	{"status_interval", "status-interval", []string{"POOL_STATUS_INTERVAL"}, "10s", "time between session status checks (a `duration`)"},
	{"claim_ttl", "claim-ttl", []string{"POOL_CLAIM_TTL"}, "30m", "a claim without review activity goes stale after this `duration`"},
	{"idle_exit", "idle-exit", []string{"POOL_IDLE_EXIT"}, "50", "exit after `N` idle cycles (0 = never)"},
	{"diagnostic_every", "diagnostic-every", []string{"POOL_DIAGNOSTIC_EVERY"}, "10", "post the first diagnostic comment on an approved PR after `N` poll intervals of waiting, each next one after twice the pause"},
	{"skip_label", "skip-label", []string{"POOL_SKIP_LABEL"}, "needs feedback", "PRs with this `label` are left to humans"},
	{"state_dir", "state-dir", []string{"POOL_STATE_DIR"}, "", "state `dir` (default $XDG_STATE_HOME/pool)"},
	{"spec_file", "spec-file", []string{"POOL_SPEC_FILE"}, "", "`file` with spec context for reviewers"},
	{"git.name", "git-name", []string{"POOL_GIT_NAME"}, "", "git user.name in the clone (a `name`)"},
	{"git.email", "git-email", []string{"POOL_GIT_EMAIL"}, "", "git user.email in the clone (an `email`)"},
	{"reviewers.accounts", "reviewers", []string{"POOL_REVIEWERS"}, "", "comma-separated reviewer `accounts` whose reviews count (default: any account the forge marks official, but the author)"},
	{"reviewers.allow_unofficial", "allow-unofficial-reviewers", []string{"POOL_REVIEWERS_ALLOW_UNOFFICIAL"}, "false", "count the listed reviewers' reviews even without write access (a `bool`)"},
	{"reviewers.humans", "human-reviewers", []string{"POOL_HUMAN_REVIEWERS"}, "", "comma-separated `accounts` whose own reviews count; any other account's count only when a session of the pool filed them"},
	{"checks_grace", "checks-grace", []string{"POOL_CHECKS_GRACE"}, "2m", "an approved head with no statuses waits this `duration` for a CI before it merges"},
	{"fixers.enabled", "fixers", []string{"POOL_FIXERS_ENABLED"}, "true", "start a fixer session on an approved PR whose checks fail (a `bool`)"},
	{"fixers.forks", "fixers-forks", []string{"POOL_FIXERS_FORKS"}, "false", "start fixers on PRs from forks too; they push to the fork's branch (a `bool`)"},
	{"fixers.token", "", []string{"POOL_FIXERS_TOKEN"}, "", ""},
	{"fixers.token_file", "fixers-token-file", []string{"POOL_FIXERS_TOKEN_FILE"}, "", "`file` holding the token of the account the pool pushes fixers' commits as (default: the forge token)"},
	{"reviews.budget.per_pr", "reviews-per-pr", []string{"POOL_REVIEWS_BUDGET_PER_PR"}, "20", "at most `N` review sessions on one PR in 24 hours; then one note, and the PR waits for reviews.allow_label"},
	{"reviews.budget.per_author", "reviews-per-author", []string{"POOL_REVIEWS_BUDGET_PER_AUTHOR"}, "100", "at most `N` review sessions on one author's PRs in 24 hours; then one note per PR, and it waits for reviews.allow_label"},
	{"reviews.authors", "review-authors", []string{"POOL_REVIEWS_AUTHORS"}, "collaborators", "whose PRs get review sessions (a `who`): collaborators (the repository's collaborators and its organisation's members) or anyone; another author's PR gets one note and waits for reviews.allow_label"},
	{"reviews.allow_label", "review-allow-label", []string{"POOL_REVIEWS_ALLOW_LABEL"}, "ok to review", "a maintainer puts this `label` on a PR to give it review sessions past reviews.budget or reviews.authors"},
	{"claims.trusted", "trusted-claimers", []string{"POOL_CLAIMS_TRUSTED"}, "", "comma-separated `accounts` whose claims are honoured"},
	{"session_timeout", "session-timeout", []string{"POOL_SESSION_TIMEOUT"}, "60m", "abort a session busy longer than this `duration`"},
	{"shutdown_timeout", "shutdown-timeout", []string{"POOL_SHUTDOWN_TIMEOUT"}, "30s", "time allowed for a clean exit (a `duration`)"},
	{"abort_on_exit", "abort-on-exit", []string{"POOL_ABORT_ON_EXIT"}, "false", "abort running sessions on exit (a `bool`)"},
	{"merge.style", "merge-style", []string{"POOL_MERGE_STYLE"}, "merge", "`style`: merge, rebase, rebase-merge, squash or fast-forward-only"},
	{"merge.update", "merge-update", []string{"POOL_MERGE_UPDATE"}, "when_required", "when to update a PR behind its base before merging it (a `mode`): always, when_required (the protection blocks outdated branches) or never"},
	{"merge.update_style", "merge-update-style", []string{"POOL_MERGE_UPDATE_STYLE"}, "merge", "how the forge updates a PR behind its base (a `style`): merge or rebase"},
	{"merge.train", "merge-train", []string{"POOL_MERGE_TRAIN"}, "off", "merge approved PRs of one base as a train (a `mode`): off, auto (when the protection blocks outdated branches) or always"},
	{"merge.train_size", "merge-train-size", []string{"POOL_MERGE_TRAIN_SIZE"}, "8", "at most `N` cars in one train"},
	{"webhook.listen", "listen", []string{"POOL_LISTEN"}, "", "serve forge webhooks on this `address`, e.g. 127.0.0.1:8787 (off when empty)"},
	{"webhook.secret", "", []string{"POOL_WEBHOOK_SECRET"}, "", ""},
	{"webhook.secret_file", "webhook-secret-file", []string{"POOL_WEBHOOK_SECRET_FILE"}, "", "`file` holding the webhook secret"},
	{"webhook.url", "hook-url", []string{"POOL_HOOK_URL"}, "", "`URL` the forge delivers webhooks to (for pool hook install)"},
	{"merge.auto", "auto-merge", []string{"POOL_AUTO_MERGE"}, "false", "refused: the forge's scheduled merge is not pinned to the reviewed head (a `bool`)"},
	{"ops.listen", "ops-listen", []string{"POOL_OPS_LISTEN"}, "", "serve health, metrics and the status page on this `address` (a bare port binds loopback; off when empty)"},
	{"ops.url", "ops-url", []string{"POOL_OPS_URL"}, "", "`URL` people reach the ops listener at, for links in commit statuses"},
	{"commit_status.context", "commit-status-context", []string{"POOL_COMMIT_STATUS_CONTEXT"}, "pool", "`context` of the pool's own commit status on each PR (empty: none)"},
	{"log_format", "log-format", []string{"POOL_LOG_FORMAT"}, "text", "log `format`: text or json"},
	{"limits.max_body", "max-body", []string{"POOL_MAX_BODY"}, sizeText(bounded.DefaultMaxBody), "largest answer read from the forge or the agent server (a `size`: bytes, KiB, MiB or GiB)"},
	{"allow_insecure_http", "allow-insecure-http", []string{"POOL_ALLOW_INSECURE_HTTP"}, "false", "allow http:// to a host other than loopback for the forge and agent URLs (a `bool`; credentials travel in clear)"},
}

// forgeKeys are the settings a read-only command takes as flags (it reads
// every other from the pool's file and the environment): how to reach the
// forge, the pool's own commit status context (not a check), and what of
// the pool's policy (Config.Policy) an operator may give by hand: the skip
// label, when a PR behind its base is updated first, and whose reviews
// count.
var forgeKeys = []string{"forgejo.url", "forgejo.token", "forgejo.token_file", "limits.max_body", "allow_insecure_http",
	"commit_status.context", "skip_label", "merge.update", "reviewers.accounts", "reviewers.allow_unofficial"}

// Default returns the typed defaults from the settings table: the Config
// that Load starts from before any file, environment variable or flag.
// Required settings (forgejo.url, repo, the token) are empty. Tests,
// benchmarks and the sandbox start from it and set what they need.
func Default() Config {
	v := viper.New()
	for _, s := range settings {
		v.SetDefault(s.key, s.def)
	}
	cfg, err := decode(v)
	if err != nil {
		panic("configs: the settings table's defaults do not decode: " + err.Error())
	}
	return cfg
}

// Load reads the configuration from args (without the program and command
// name) and the environment, and validates it.
func Load(args []string) (Config, error) {
	v := viper.New()
	fs, flags, err := runFlags(v)
	if err != nil {
		return Config{}, err
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return Config{}, err
		}
		return Config{}, &Error{Key: "flags", Reason: err.Error()}
	}
	if fs.NArg() > 0 {
		return Config{}, &Error{Key: "flags", Reason: fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	file, err := readFile(v, string(flags.configFile))
	if err != nil {
		return Config{}, err
	}
	cfg, err := decode(v)
	if err != nil {
		return Config{}, err
	}
	cfg.File = file
	cfg.DryRun, cfg.Once = flags.dryRun.on(), flags.once.on()
	return cfg, cfg.Validate()
}

func decode(v *viper.Viper) (Config, error) {
	d := decoder{v: v}
	cfg := Config{
		ForgejoURL:    strings.TrimRight(d.str("forgejo.url"), "/"),
		AgentURL:      strings.TrimRight(d.str("agent.url"), "/"),
		AgentName:     d.str("agent.name"),
		AgentPassword: d.str("agent.password"),

		AgentAllowNoPassword: d.boolean("agent.allow_no_password"),
		AgentTreeGroup:       d.str("agent.tree_group"),
		AgentReaper:          d.str("agent.reaper_socket"),
		Workers:              d.integer("workers"),
		InstanceID:           d.str("instance_id"),
		PollInterval:         d.duration("poll_interval"),
		StatusInterval:       d.duration("status_interval"),
		ClaimTTL:             d.duration("claim_ttl"),
		IdleExit:             d.integer("idle_exit"),
		DiagnosticEvery:      d.integer("diagnostic_every"),
		SkipLabel:            d.str("skip_label"),
		StateDir:             d.str("state_dir"),
		SpecFile:             d.str("spec_file"),
		GitName:              d.str("git.name"),
		GitEmail:             d.str("git.email"),
		ChecksGrace:          d.duration("checks_grace"),
		TrustedClaimers:      d.list("claims.trusted"),
		Fixers:               Fixers{Enabled: d.boolean("fixers.enabled"), Forks: d.boolean("fixers.forks")},
		Reviews: Reviews{PerPR: d.integer("reviews.budget.per_pr"), PerAuthor: d.integer("reviews.budget.per_author"),
			Authors: strings.ToLower(d.str("reviews.authors")), AllowLabel: strings.TrimSpace(d.str("reviews.allow_label"))},
		SessionTimeout:  d.duration("session_timeout"),
		ShutdownTimeout: d.duration("shutdown_timeout"),
		AbortOnExit:     d.boolean("abort_on_exit"),
		MergeStyle:      d.str("merge.style"),
		MergeUpdate:     d.str("merge.update"),
		UpdateStyle:     d.str("merge.update_style"),
		MergeTrain:      strings.ToLower(d.str("merge.train")),
		TrainSize:       d.integer("merge.train_size"),
		AutoMerge:       d.boolean("merge.auto"),
		Listen:          d.str("webhook.listen"),
		HookURL:         d.str("webhook.url"),
		OpsListen:       loopbackDefault(d.str("ops.listen")),
		OpsURL:          strings.TrimRight(d.str("ops.url"), "/"),
		StatusContext:   d.str("commit_status.context"),
		LogFormat:       strings.ToLower(d.str("log_format")),
		MaxBody:         d.size("limits.max_body"),

		AllowInsecureHTTP: d.boolean("allow_insecure_http"),
	}
	cfg.Reviewers, cfg.AllowUnofficial = d.reviewers()
	cfg.HumanReviewers = d.list("reviewers.humans")
	cfg.Repos = unique(append(d.list("repo"), d.list("repos")...))
	if len(cfg.Repos) > 0 {
		cfg.Owner, cfg.Name = splitRepo(cfg.Repos[0])
	}
	cfg.Org = d.str("org")
	cfg.OrgRelist = d.duration("org_relist")
	cfg.MaxPerRepo = d.integer("max_per_repo")
	if d.err != nil {
		return Config{}, d.err
	}
	token, err := loadSecret("forgejo.token", d.str("forgejo.token"), d.str("forgejo.token_file"))
	if err != nil {
		return Config{}, err
	}
	cfg.Token = token
	if cfg.Fixers.Token, err = loadSecret("fixers.token", d.str("fixers.token"), d.str("fixers.token_file")); err != nil {
		return Config{}, err
	}
	if cfg.WebhookSecret, err = loadSecret("webhook.secret", d.str("webhook.secret"), d.str("webhook.secret_file")); err != nil {
		return Config{}, err
	}
	if cfg.AgentServers, err = d.servers(); err != nil {
		return Config{}, err
	}
	if len(cfg.AgentServers) > 0 {
		cfg.Workers = 0
		for _, a := range cfg.AgentServers {
			cfg.Workers += a.Workers
		}
	}
	if cfg.StateDir == "" {
		cfg.StateDir = defaultStateDir()
	}
	return cfg, nil
}
