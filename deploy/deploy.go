// Package deploy holds the files an installation copies into place: the
// pool's configuration and systemd unit, and the agent server's global
// config dir for the reviewer (opencode/: opencode.json and the agent
// definitions under agent/). The test sandbox starts its agent server from
// the same files, embedded here, with its scripted model in place of a real
// one.
package deploy

import "embed"

// OpenCode is the agent server's global config dir as shipped: copy
// opencode/ to ~/.config/opencode of the server's user (see docs/reviewer.md,
// "Setting up the reviewer").
//
//go:embed opencode
var OpenCode embed.FS

// Reviewer and Fixer name the shipped agents: the reviewer, and its variant
// that may also fix an approved PR whose checks fail.
const (
	Reviewer = "ca-pr-self-reviewer"
	Fixer    = "ca-pr-self-fixer"
)
