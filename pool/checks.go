package pool

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"pool/configs"
)

// The checks New makes before a pool starts: the agent server knows the
// agent and asks for a password, and the reviewer accounts cannot merge.

// checkAgent fails when the agent server does not know the configured
// agent: it would accept every prompt for it and never run one. It asks the
// server's own instance: the agents are the server's global config (project
// config is off, README), and naming the pool's state directory made the
// server boot and keep an instance for it, one per pool start, in which no
// session ever runs.
func (p *Pool) checkAgent(ctx context.Context) error {
	names, err := p.agent.Agents(ctx, "")
	if err != nil {
		return fmt.Errorf("pool: list the agent server's agents: %w", err)
	}
	if slices.Contains(names, p.cfg.AgentName) {
		return nil
	}
	return &configs.Error{Key: "agent.name", Reason: fmt.Sprintf("the agent server has no agent %q; its agents: %s",
		p.cfg.AgentName, strings.Join(names, ", "))}
}

// warnMightyReviewers warns about each configured reviewer account that
// could merge or push: the reviewer reads hostile text and needs only read
// access and a place on the branch's approvals whitelist. The forge tells
// an account's permission only to an admin of the repository; when it does
// not, the pool cannot tell and says so at debug level only.
func (p *Pool) warnMightyReviewers(ctx context.Context) {
	for _, account := range p.cfg.Reviewers {
		perm, err := p.forge.Permission(ctx, p.cfg.Owner, p.cfg.Name, account)
		switch {
		case err != nil:
			p.log.Debug("cannot tell whether the reviewer account could merge", "account", account, "err", err)
		case perm == "write" || perm == "admin" || perm == "owner":
			p.log.Warn("the reviewer account could merge and push: it needs only read access and a place on the branch's approvals whitelist",
				"account", account, "permission", perm)
		}
	}
}

// checkAgentPassword looks whether the agent server answers without a
// password. Then any process that reaches it gets a shell as its user, in
// work trees of the pool's: on loopback the pool warns; off loopback it
// refuses to start unless agent.allow_no_password says so.
func (p *Pool) checkAgentPassword(ctx context.Context) error {
	open, err := p.agent.OpenToAnyone(ctx)
	if err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	if !open {
		return nil
	}
	const fix = "set OPENCODE_SERVER_PASSWORD on it and agent.password (POOL_AGENT_PASSWORD) here"
	switch {
	case p.cfg.AgentAllowNoPassword:
		p.log.Warn("the agent server answers without a password, as agent.allow_no_password allows", "agent_url", p.cfg.AgentURLs())
	case p.cfg.AgentOnLoopback():
		p.log.Warn("the agent server answers without a password: any local process can run commands as its user; "+fix, "agent_url", p.cfg.AgentURLs())
	default:
		return &configs.Error{Key: "agent.password", Reason: fmt.Sprintf("the agent server at %s answers without a password, off loopback: %s, "+
			"or set agent.allow_no_password: true", p.cfg.AgentURLs(), fix)}
	}
	return nil
}
