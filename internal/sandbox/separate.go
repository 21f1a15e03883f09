package sandbox

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
)

// startSeparateAgent starts an agent server of the sandbox's own, running
// the shipped agents as SeparateUser with a reviewer setup of its own (the
// servers' token file is this process's user's alone; opts.AllowEverything:
// a stand-in reviewer instead of the shipped one), when this machine
// allows it; otherwise it says why not on log and keeps the servers'.
func (sb *Sandbox) startSeparateAgent(ctx context.Context, s *Servers, opts Options) error {
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	rev, err := SetUpReviewer(ctx, filepath.Join(sb.Dir, "reviewer"), s.Forge.URL, s.ReviewerToken)
	if err != nil {
		return err
	}
	u, err := separateReviewer(rev, log)
	if err != nil || u == nil {
		return err
	}
	agent, err := StartAgentServer(ctx, filepath.Join(sb.Dir, "agent"), AgentOptions{
		ModelURL: s.Model.URL, AgentName: s.Agent.opts.AgentName, Log: log, Shipped: !opts.AllowEverything, Env: rev.WithFixerShell(), MCP: rev.MCP, RunAs: u,
	})
	if err != nil {
		return err
	}
	sb.Agent, sb.ownAgent, sb.Reviewer, sb.AgentUser = agent, agent, rev, u
	return nil
}

// separateReviewer returns SeparateUser with rev's token file given to it
// and the way to its tool open; nil, with a line on log saying why, when
// this machine does not allow it.
func separateReviewer(rev ReviewerSetup, log io.Writer) (*OSUser, error) {
	u, err := SeparateUser()
	if err != nil {
		fmt.Fprintf(log, "sandbox: cannot run the agent server as a user of its own, running it as this process's user: %v\n", err)
		return nil, nil
	}
	if err := giveTo(u, rev.TokenFile); err != nil {
		return nil, fmt.Errorf("sandbox: reviewer token file: %w", err)
	}
	if err := OpenWayTo(rev.Bin); err != nil {
		return nil, err
	}
	return &u, nil
}
