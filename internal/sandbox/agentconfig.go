package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// prepareAgentDir writes the server's config and its private home.
func prepareAgentDir(dir string, opts AgentOptions) error {
	if opts.AgentName == "" {
		return errors.New("no agent name")
	}
	config := opencodeConfig(opts)
	if opts.Shipped {
		var err error
		if config, err = shippedConfig(config, opts.MCP); err != nil {
			return err
		}
	}
	cfg, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := seedConfigDir(agentConfigDir(dir)); err != nil {
		return err
	}
	if err := os.WriteFile(agentModelsFile(dir), []byte("{}\n"), 0o644); err != nil {
		return err
	}
	if opts.Shipped {
		if err := copyShippedAgents(agentConfigDir(dir)); err != nil {
			return err
		}
	}
	return os.WriteFile(agentConfigFile(dir), cfg, 0o644)
}

// opencodeConfig is the server's opencode.json: the scripted model as the
// only model, the pool's agent, every tool allowed, and no title generation
// (its requests would reach the scripted model).
func opencodeConfig(opts AgentOptions) map[string]any {
	permission := opts.Permission
	if permission == nil {
		permission = "allow"
	}
	model := ModelProvider + "/" + ModelID
	config := map[string]any{
		"autoupdate":  false,
		"share":       "disabled",
		"model":       model,
		"small_model": model,
		"permission":  permission,
		"provider": map[string]any{ModelProvider: map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "Scripted model",
			"options": map[string]any{"baseURL": opts.ModelURL, "apiKey": "sandbox"},
			"models": map[string]any{ModelID: map[string]any{
				"name": "Scripted model", "tool_call": true,
				"limit": map[string]any{"context": 1000000, "output": 32000},
			}},
		}},
		"agent": map[string]any{
			"title": map[string]any{"disable": true},
			opts.AgentName: map[string]any{
				"mode":        "primary",
				"description": "The pool's reviewer, answered by the scripted model.",
				"prompt":      "You review pull requests.",
			},
		},
	}
	if len(opts.MCP) > 0 {
		config["mcp"] = map[string]any{MCPServer: mcpEntry(opts.MCP)}
	}
	return config
}

// mcpEntry is the config of a local tool server run as command.
func mcpEntry(command []string) map[string]any {
	return map[string]any{"type": "local", "command": command, "enabled": true}
}

// seedConfigDir makes the server's global config dir look as if its plugin
// package were installed. Otherwise, at every start in a fresh home, the
// server npm-installs @opencode-ai/plugin there (about 95 MB) in the
// background; it skips that when node_modules exists and package-lock.json
// lists the package (Npm.install in opencode 1.18). The tests use no plugins.
func seedConfigDir(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o755); err != nil {
		return err
	}
	lock := fmt.Sprintf(`{"lockfileVersion": 3, "packages": {"": {"dependencies": {"@opencode-ai/plugin": %q}}}}`, OpencodeVersion)
	return os.WriteFile(filepath.Join(dir, "package-lock.json"), []byte(lock+"\n"), 0o644)
}

func agentHome(dir string) string { return filepath.Join(dir, "home") }

// agentModelsFile is the server's model catalog (OPENCODE_MODELS_PATH): an
// empty one. The only model the server may use is the scripted one its
// config declares, and the catalog bundled with opencode (models.dev, every
// provider's models) costs the server about 1.2 CPU-seconds in each new
// directory, where it is read again for the directory's instance: GET
// /config/providers took 1.13-1.57 CPU-s in each of five new directories
// with the bundled catalog and 0.02-0.06 s with this one (opencode-ai
// 1.18.33, idle 2-core machine, 2026-12-03). Nothing else changes: the
// providers listed are the scripted one alone, where the bundled catalog
// added OpenCode Zen's free models, which no test uses.
func agentModelsFile(dir string) string { return filepath.Join(agentHome(dir), "models.json") }

// agentConfigDir is the server's global config dir ($XDG_CONFIG_HOME/opencode).
func agentConfigDir(dir string) string { return filepath.Join(agentHome(dir), ".config", "opencode") }

func agentConfigFile(dir string) string { return filepath.Join(agentConfigDir(dir), "opencode.json") }
