package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	"pool/deploy"
)

// The environment pool-review reads, and the scopes of the reviewer's token
// (reviewtool.EnvForgeURL, EnvTokenFile and ReviewerScopes; the sandbox
// cannot import that package, whose forgejo tests import the sandbox, so a
// reviewtool test keeps them equal).
const (
	EnvReviewForgeURL  = "POOL_REVIEW_FORGE_URL"
	EnvReviewTokenFile = "POOL_REVIEW_TOKEN_FILE"
)

// ReviewerScopes are the scopes of the scripted reviewer's token: what the
// README tells an operator to give the reviewer's.
var ReviewerScopes = []string{"write:repository", "write:issue"}

// shippedConfig is the shipped opencode.json (deploy/opencode) with the
// scripted model of scripted, the stand-in config, as its only model, no
// title generation (its requests would reach the scripted model), and the
// tool server run as mcp (the shipped command names the paths of an
// installation; nil: no tool server).
func shippedConfig(scripted map[string]any, mcp []string) (map[string]any, error) {
	b, err := fs.ReadFile(deploy.OpenCode, "opencode/opencode.json")
	if err != nil {
		return nil, fmt.Errorf("shipped opencode.json: %w", err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("shipped opencode.json: %w", err)
	}
	for _, k := range []string{"model", "small_model", "provider"} {
		cfg[k] = scripted[k]
	}
	cfg["agent"] = map[string]any{"title": map[string]any{"disable": true}}
	servers, _ := cfg["mcp"].(map[string]any)
	if _, ok := servers[MCPServer]; !ok {
		return nil, fmt.Errorf("shipped opencode.json: no tool server %q under mcp", MCPServer)
	}
	delete(cfg, "mcp")
	if len(mcp) > 0 {
		cfg["mcp"] = map[string]any{MCPServer: mcpEntry(mcp)}
	}
	return cfg, nil
}

// copyShippedAgents copies the shipped agent definitions into configDir's
// agent/, as the README tells an operator to.
func copyShippedAgents(configDir string) error {
	const src = "opencode/agent"
	entries, err := fs.ReadDir(deploy.OpenCode, src)
	if err != nil {
		return fmt.Errorf("shipped agents: %w", err)
	}
	dst := filepath.Join(configDir, "agent")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		b, err := fs.ReadFile(deploy.OpenCode, path.Join(src, e.Name()))
		if err != nil {
			return fmt.Errorf("shipped agents: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ReviewerSetup is what an agent server running the shipped reviewer needs
// besides its config: the pool-review command on its PATH and the
// reviewer's token in a file of its own.
type ReviewerSetup struct {
	Bin       string // the pool-review binary
	TokenFile string // the reviewer's token, mode 0600
	Env       map[string]string
	// MCP is the command vector the agent server runs the tool server with
	// (pool-review mcp), as an installation's opencode.json has it.
	MCP []string
}

// SetUpReviewer builds cmd/pool-review into dir/bin, links it as git in
// dir/guard (the git guard), writes the reviewer's token to
// dir/reviewer-token, and returns the tool server's command vector and the
// agent server's environment: PATH with
// the guard and the tool first, the forge's URL and the token file's path for
// the tool, and a git identity for a fixer's commits. The token itself is in
// no variable.
func SetUpReviewer(ctx context.Context, dir, forgeURL, reviewerToken string) (ReviewerSetup, error) {
	bin := filepath.Join(dir, "bin")
	s := ReviewerSetup{Bin: filepath.Join(bin, "pool-review"), TokenFile: filepath.Join(dir, "reviewer-token")}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return s, fmt.Errorf("sandbox: reviewer tool: %w", err)
	}
	if err := buildReviewTool(ctx, s.Bin); err != nil {
		return s, err
	}
	// As the README installs it: git, first on the server's PATH, is the
	// tool's guard, which runs the real git further on.
	guard := filepath.Join(dir, "guard")
	if err := os.MkdirAll(guard, 0o755); err != nil {
		return s, fmt.Errorf("sandbox: git guard: %w", err)
	}
	if err := os.Symlink(s.Bin, filepath.Join(guard, "git")); err != nil {
		return s, fmt.Errorf("sandbox: git guard: %w", err)
	}
	// As the README installs it: fixer-sh, the shell that runs a fixer's
	// commands in the sandbox (WithFixerShell).
	if err := os.Symlink(s.Bin, filepath.Join(bin, "fixer-sh")); err != nil {
		return s, fmt.Errorf("sandbox: fixer shell: %w", err)
	}
	if err := os.WriteFile(s.TokenFile, []byte(reviewerToken+"\n"), 0o600); err != nil {
		return s, fmt.Errorf("sandbox: reviewer token file: %w", err)
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return s, fmt.Errorf("sandbox: reviewer tool: %w", err)
	}
	s.MCP = []string{s.Bin, "mcp", "--forge", forgeURL, "--token-file", s.TokenFile, "--git", git}
	s.Env = map[string]string{
		"PATH":             strings.Join([]string{guard, bin, os.Getenv("PATH")}, string(os.PathListSeparator)),
		EnvReviewForgeURL:  forgeURL,
		EnvReviewTokenFile: s.TokenFile,
		"GIT_AUTHOR_NAME":  "reviewer", "GIT_AUTHOR_EMAIL": "reviewer@example.com",
		"GIT_COMMITTER_NAME": "reviewer", "GIT_COMMITTER_EMAIL": "reviewer@example.com",
	}
	return s, nil
}

// WithFixerShell is the agent server's environment with fixer-sh as its
// shell (SHELL, which OpenCode's bash tool uses when its config names no
// shell): a session's commands run in the sandbox unless the pool marked
// its work tree a reviewer's. Only for sessions in the pool's work trees:
// elsewhere fixer-sh runs nothing.
func (s ReviewerSetup) WithFixerShell() map[string]string {
	env := maps.Clone(s.Env)
	env["SHELL"] = filepath.Join(filepath.Dir(s.Bin), "fixer-sh")
	return env
}

// buildReviewTool compiles pool/cmd/pool-review to out with the go command
// (its build cache makes a rebuild a link).
func buildReviewTool(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "pool/cmd/pool-review")
	cmd.Dir = moduleRoot()
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("sandbox: build pool-review: %w: %s", err, tail(b, 2000))
	}
	return nil
}

// moduleRoot is the pool module's directory, from this file's place in it;
// "" (the working directory, which go resolves inside the module) when the
// build recorded no usable path (-trimpath).
func moduleRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	root := strings.TrimSuffix(filepath.Dir(file), filepath.Join("internal", "sandbox"))
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return ""
	}
	return root
}
