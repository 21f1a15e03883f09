package configs

import (
	"fmt"
	"net"
	"net/url"
	"os/user"
	"regexp"
	"strings"
	"time"

	"pool/internal/bounded"
	"pool/internal/loopback"
	"pool/internal/redact"
)

var mergeStyles = map[string]bool{
	"merge": true, "rebase": true, "rebase-merge": true, "squash": true, "fast-forward-only": true,
}

var updateModes = map[string]bool{"always": true, "when_required": true, "never": true}

var trainModes = map[string]bool{"off": true, "auto": true, "always": true}

// maxTrainSize bounds merge.train_size: every car is a CI run, and a
// train longer than a page of the forge's lists gains nothing.
const maxTrainSize = 50

// Floors below which a setting would make the pool hammer a server.
const (
	MinPollInterval   = time.Second
	MinStatusInterval = 100 * time.Millisecond
	MinOrgRelist      = time.Second
)

const (
	// minMaxBody keeps room for one page of one item of any list.
	minMaxBody = 64 << 10
	maxMaxBody = 1 << 30
)

// Validate reports the first bad value, naming its key and the reason.
func (c Config) Validate() error {
	checks := []func() *Error{
		c.checkForgeURL,
		func() *Error { return c.checkServerURL("agent.url", c.AgentURL) },
		c.checkServers,
		c.checkRepos,
		func() *Error { return atLeast("max_per_repo", c.MaxPerRepo, 0) },
		c.checkToken,
		c.checkMaxBody,
		func() *Error { return atLeast("workers", c.Workers, 1) },
		func() *Error { return atLeast("idle_exit", c.IdleExit, 0) },
		func() *Error { return atLeast("diagnostic_every", c.DiagnosticEvery, 1) },
		func() *Error { return atLeastDuration("poll_interval", c.PollInterval, MinPollInterval) },
		func() *Error { return atLeastDuration("status_interval", c.StatusInterval, MinStatusInterval) },
		func() *Error { return atLeastDuration("org_relist", c.OrgRelist, MinOrgRelist) },
		func() *Error { return positive("claim_ttl", c.ClaimTTL) },
		func() *Error { return positive("session_timeout", c.SessionTimeout) },
		func() *Error { return positive("shutdown_timeout", c.ShutdownTimeout) },
		c.checkAgent,
		c.checkMergeStyle,
		c.checkTrain,
		func() *Error { return notNegative("checks_grace", c.ChecksGrace) },
		c.checkReviewers,
		c.checkReviews,
		c.checkWebhook,
		c.checkPublicForge,
		c.checkOps,
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateForge checks only what a read-only command needs: how to reach
// the forge, and the settings of the policy it judges by.
func (c Config) validateForge() error {
	for _, check := range []func() *Error{c.checkForgeURL, c.checkToken, c.checkMaxBody, c.checkMergeStyle, c.checkReviewers} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (c Config) checkForgeURL() *Error { return c.checkServerURL("forgejo.url", c.ForgejoURL) }

// checkServerURL checks the URL of a server the pool sends credentials to:
// https, or http to loopback, unless allow_insecure_http says otherwise.
func (c Config) checkServerURL(key, s string) *Error {
	if err := checkURL(key, s); err != nil {
		return err
	}
	u, _ := url.Parse(s)
	if u.Scheme == "http" && !loopback.Host(u.Hostname()) && !c.AllowInsecureHTTP {
		return &Error{Key: key, Reason: fmt.Sprintf("http:// to %s would send credentials in clear; use https, or set allow_insecure_http (--allow-insecure-http)", u.Hostname())}
	}
	return nil
}

func checkURL(key, s string) *Error {
	if s == "" {
		return &Error{Key: key, Reason: "required"}
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &Error{Key: key, Reason: fmt.Sprintf("want an http(s) URL, got %q", redact.URL(s))}
	}
	if u.User != nil {
		return &Error{Key: key, Reason: "must not carry credentials; use the token or password settings"}
	}
	return nil
}

// AgentOnLoopback reports whether every agent server's URL names this
// machine.
func (c Config) AgentOnLoopback() bool {
	for _, a := range c.Servers() {
		if u, err := url.Parse(a.URL); err != nil || !loopback.Host(u.Hostname()) {
			return false
		}
	}
	return true
}

// AgentURLs names the agent servers, for messages.
func (c Config) AgentURLs() string {
	urls := make([]string, 0, len(c.Servers()))
	for _, a := range c.Servers() {
		urls = append(urls, a.URL)
	}
	return strings.Join(urls, ", ")
}

// The forge's rules for names (Gitea 1.26, modules/validation/helpers.go and
// models/repo/repo.go; Forgejo has the same): an owner starts with a letter
// or digit, then letters, digits, '-', '_' and '.', never two of those three
// in a row nor one at the end, at most 40 characters; a repository name is
// letters, digits, '-', '_' and '.', without "..", not ".", ".." or "-", and
// not ending in .git, .wiki, .rss or .atom, at most 100 characters.
var (
	ownerChars    = regexp.MustCompile(`^[0-9A-Za-z][-.\w]*$`)
	ownerBadPunct = regexp.MustCompile(`[-._]{2,}|[-._]$`)
	repoChars     = regexp.MustCompile(`^[-.\w]+$`)
	repoReserved  = []string{".", "..", "-"}
	repoSuffixes  = []string{".git", ".wiki", ".rss", ".atom"}
)

const (
	maxOwnerLen = 40
	maxRepoLen  = 100
)

// checkRepos checks every repository named and the organisation: at
// least one of them is required.
func (c Config) checkRepos() *Error {
	if c.Org != "" {
		if reason := ownerProblem(c.Org); reason != "" {
			return &Error{Key: "org", Reason: fmt.Sprintf("%q: %s", c.Org, reason)}
		}
	}
	if len(c.Repos) == 0 && c.Org == "" {
		if c.Owner != "" || c.Name != "" {
			return checkRepo(c.Owner, c.Name) // set by hand, as tests do
		}
		return &Error{Key: "repo", Reason: "required, as owner/name (or repos, or org)"}
	}
	for _, r := range c.Repos {
		if err := checkRepo(splitRepo(r)); err != nil {
			return err
		}
	}
	return nil
}

func checkRepo(owner, name string) *Error {
	if owner == "" || name == "" || strings.Contains(name, "/") {
		return &Error{Key: "repo", Reason: fmt.Sprintf("want owner/name, got %q", owner+"/"+name)}
	}
	if reason := ownerProblem(owner); reason != "" {
		return &Error{Key: "repo", Reason: fmt.Sprintf("owner %q: %s", owner, reason)}
	}
	if reason := repoProblem(name); reason != "" {
		return &Error{Key: "repo", Reason: fmt.Sprintf("name %q: %s", name, reason)}
	}
	return nil
}

func ownerProblem(s string) string {
	switch {
	case len(s) > maxOwnerLen:
		return fmt.Sprintf("longer than %d characters", maxOwnerLen)
	case !ownerChars.MatchString(s):
		return "the forge allows only letters, digits, '-', '_' and '.', starting with a letter or digit"
	case ownerBadPunct.MatchString(s):
		return "the forge allows no two of '-', '_', '.' in a row and none at the end"
	}
	return ""
}

func repoProblem(s string) string {
	lower := strings.ToLower(s)
	switch {
	case len(s) > maxRepoLen:
		return fmt.Sprintf("longer than %d characters", maxRepoLen)
	case !repoChars.MatchString(s):
		return "the forge allows only letters, digits, '-', '_' and '.'"
	case strings.Contains(s, ".."):
		return `the forge allows no ".."`
	}
	for _, r := range repoReserved {
		if lower == r {
			return "reserved by the forge"
		}
	}
	for _, suffix := range repoSuffixes {
		if strings.HasSuffix(lower, suffix) {
			return fmt.Sprintf("the forge reserves names ending in %s", suffix)
		}
	}
	return ""
}

func (c Config) checkToken() *Error {
	if c.Token == "" {
		return &Error{Key: "forgejo.token", Reason: "required: set POOL_FORGEJO_TOKEN or forgejo.token_file (--forgejo-token-file)"}
	}
	if strings.ContainsAny(c.Token, " \t\r\n") {
		return &Error{Key: "forgejo.token", Reason: "must not contain white space"}
	}
	return nil
}

func (c Config) checkMaxBody() *Error {
	if c.MaxBody < minMaxBody || c.MaxBody > maxMaxBody {
		return &Error{Key: "limits.max_body", Reason: fmt.Sprintf("must be between %s and %s, got %s",
			bounded.Size(minMaxBody), bounded.Size(maxMaxBody), bounded.Size(c.MaxBody))}
	}
	return nil
}

func (c Config) checkAgent() *Error {
	if c.AgentName == "" {
		return &Error{Key: "agent.name", Reason: "must not be empty"}
	}
	if g := c.AgentTreeGroup; g != "" {
		if _, err := user.LookupGroup(g); err != nil {
			if _, err := user.LookupGroupId(g); err != nil {
				return &Error{Key: "agent.tree_group", Reason: "names no group of this machine"}
			}
		}
	}
	return nil
}

func (c Config) checkReviewers() *Error {
	if c.AllowUnofficial && len(c.Reviewers) == 0 {
		return &Error{Key: "reviewers.allow_unofficial", Reason: "needs reviewers: it widens only the listed accounts"}
	}
	if c.AutoMerge {
		return &Error{Key: "merge.auto", Reason: "no longer supported: the forge's scheduled merge is not pinned to a head, so a push after it was armed could be merged unreviewed; the pool merges itself, pinned to the reviewed head, when checks pass"}
	}
	return nil
}

func (c Config) checkReviews() *Error {
	r := c.Reviews
	switch {
	case r.PerPR < 1:
		return &Error{Key: "reviews.budget.per_pr", Reason: fmt.Sprintf("must be at least 1, got %d (the budget stops sessions; a maintainer's reviews.allow_label lifts it)", r.PerPR)}
	case r.PerAuthor < 1:
		return &Error{Key: "reviews.budget.per_author", Reason: fmt.Sprintf("must be at least 1, got %d", r.PerAuthor)}
	case r.Authors != AuthorsCollaborators && r.Authors != AuthorsAnyone:
		return &Error{Key: "reviews.authors", Reason: fmt.Sprintf("unknown value %q: collaborators or anyone", r.Authors)}
	case r.AllowLabel == "":
		return &Error{Key: "reviews.allow_label", Reason: "must name a label: a PR over budget or by an outsider waits for it"}
	case strings.EqualFold(r.AllowLabel, c.SkipLabel):
		return &Error{Key: "reviews.allow_label", Reason: fmt.Sprintf("%q is skip_label too, which leaves a PR to humans", r.AllowLabel)}
	}
	return nil
}

func (c Config) checkMergeStyle() *Error {
	switch {
	case !mergeStyles[c.MergeStyle]:
		return &Error{Key: "merge.style", Reason: fmt.Sprintf("unknown style %q", c.MergeStyle)}
	case !updateModes[c.MergeUpdate]:
		return &Error{Key: "merge.update", Reason: fmt.Sprintf("unknown mode %q: always, when_required or never", c.MergeUpdate)}
	case c.UpdateStyle != "merge" && c.UpdateStyle != "rebase":
		return &Error{Key: "merge.update_style", Reason: fmt.Sprintf("unknown style %q: merge or rebase", c.UpdateStyle)}
	}
	return nil
}

func (c Config) checkTrain() *Error {
	switch {
	case !trainModes[c.MergeTrain]:
		return &Error{Key: "merge.train", Reason: fmt.Sprintf("unknown mode %q: off, auto or always", c.MergeTrain)}
	case c.TrainSize < 1 || c.TrainSize > maxTrainSize:
		return &Error{Key: "merge.train_size", Reason: fmt.Sprintf("must be 1 to %d, got %d", maxTrainSize, c.TrainSize)}
	}
	return nil
}

func atLeast(key string, n, min int) *Error {
	if n < min {
		return &Error{Key: key, Reason: fmt.Sprintf("must be at least %d, got %d", min, n)}
	}
	return nil
}

func positive(key string, d time.Duration) *Error {
	if d <= 0 {
		return &Error{Key: key, Reason: fmt.Sprintf("must be positive, got %s", d)}
	}
	return nil
}

func notNegative(key string, d time.Duration) *Error {
	if d < 0 {
		return &Error{Key: key, Reason: fmt.Sprintf("must not be negative, got %s", d)}
	}
	return nil
}

func atLeastDuration(key string, d, min time.Duration) *Error {
	if d < min {
		return &Error{Key: key, Reason: fmt.Sprintf("must be at least %s, got %s", min, d)}
	}
	return nil
}

func (c Config) checkWebhook() *Error {
	if c.Listen != "" && c.WebhookSecret == "" {
		return &Error{Key: "webhook.secret", Reason: "required when webhook.listen is set: unsigned deliveries are refused"}
	}
	if c.HookURL != "" {
		if err := checkURL("webhook.url", c.HookURL); err != nil {
			return err
		}
	}
	return nil
}

func (c Config) checkOps() *Error {
	if c.OpsListen != "" {
		if _, port, err := net.SplitHostPort(c.OpsListen); err != nil || port == "" {
			return &Error{Key: "ops.listen", Reason: fmt.Sprintf("want host:port or a port, got %q", c.OpsListen)}
		}
	}
	if c.OpsURL != "" {
		if err := checkURL("ops.url", c.OpsURL); err != nil {
			return err
		}
	}
	if len(c.StatusContext) > 100 {
		return &Error{Key: "commit_status.context", Reason: "at most 100 characters"}
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return &Error{Key: "log_format", Reason: fmt.Sprintf("want text or json, got %q", c.LogFormat)}
	}
	return nil
}

// publicForges are hosted forges that throttle heavy clients at their proxy.
var publicForges = map[string]time.Duration{"codeberg.org": 30 * time.Second}

func (c Config) checkPublicForge() *Error {
	u, err := url.Parse(c.ForgejoURL)
	if err != nil {
		return nil
	}
	if min, ok := publicForges[strings.ToLower(u.Hostname())]; ok && c.PollInterval < min {
		return &Error{Key: "poll_interval", Reason: fmt.Sprintf("%s asks clients to poll at most every %s; got %s", u.Hostname(), min, c.PollInterval)}
	}
	return nil
}
