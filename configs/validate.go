package configs

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

var mergeStyles = map[string]bool{
	"merge": true, "rebase": true, "rebase-merge": true, "squash": true, "fast-forward-only": true,
}

// Validate reports the first bad value, naming its key and the reason.
func (c Config) Validate() error {
	checks := []func() *Error{
		func() *Error { return checkURL("forgejo.url", c.ForgejoURL) },
		func() *Error { return checkURL("agent.url", c.AgentURL) },
		c.checkRepo,
		c.checkToken,
		func() *Error { return atLeast("workers", c.Workers, 1) },
		func() *Error { return atLeast("idle_exit", c.IdleExit, 0) },
		func() *Error { return atLeast("diagnostic_every", c.DiagnosticEvery, 1) },
		func() *Error { return positive("poll_interval", c.PollInterval) },
		func() *Error { return positive("status_interval", c.StatusInterval) },
		func() *Error { return positive("claim_ttl", c.ClaimTTL) },
		func() *Error { return positive("session_timeout", c.SessionTimeout) },
		func() *Error { return positive("shutdown_timeout", c.ShutdownTimeout) },
		c.checkAgent,
		c.checkMergeStyle,
		func() *Error { return notNegative("checks_grace", c.ChecksGrace) },
		c.checkReviewers,
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

func checkURL(key, s string) *Error {
	if s == "" {
		return &Error{Key: key, Reason: "required"}
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &Error{Key: key, Reason: fmt.Sprintf("want an http(s) URL, got %q", s)}
	}
	if u.User != nil {
		return &Error{Key: key, Reason: "must not carry credentials; use the token or password settings"}
	}
	return nil
}

func (c Config) checkRepo() *Error {
	if c.Owner == "" && c.Name == "" {
		return &Error{Key: "repo", Reason: "required, as owner/name"}
	}
	if c.Owner == "" || c.Name == "" || strings.Contains(c.Name, "/") {
		return &Error{Key: "repo", Reason: fmt.Sprintf("want owner/name, got %q", c.Owner+"/"+c.Name)}
	}
	return nil
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

func (c Config) checkAgent() *Error {
	if c.AgentName == "" {
		return &Error{Key: "agent.name", Reason: "must not be empty"}
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

func (c Config) checkMergeStyle() *Error {
	if !mergeStyles[c.MergeStyle] {
		return &Error{Key: "merge.style", Reason: fmt.Sprintf("unknown style %q", c.MergeStyle)}
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
