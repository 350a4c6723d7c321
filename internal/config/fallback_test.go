package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/stopreasons"
)

func TestFallbackFromFileAndEnv(t *testing.T) {
	cfg, err := Load(LoadOptions{RepoRoot: repo(t, "agent:\n  kind: claude\n  fallback:\n    - kind: codex\n      model: gpt-5-codex\n    - {kind: command, command: [./agent.sh, \"{prompt}\"]}\n"),
		AgentKinds: agents.Kinds()})
	require.NoError(t, err)
	assert.Equal(t, []FallbackAgent{{Kind: "codex", Model: "gpt-5-codex"}, {Kind: "command", Command: []string{"./agent.sh", "{prompt}"}}}, cfg.Agent.Fallback)
	// config.json keeps the list as written, so a changed chain is a
	// changed config for resume.
	assert.Equal(t, []any{map[string]any{"kind": "codex", "model": "gpt-5-codex"}, map[string]any{"kind": "command", "command": []string{"./agent.sh", "{prompt}"}}},
		cfg.Raw["agent"].(map[string]any)["fallback"])

	env, err := Load(LoadOptions{RepoRoot: repo(t, ""), AgentKinds: agents.Kinds(),
		Environ: []string{`RUNR_AGENT_FALLBACK=[{"kind": "gemini", "model": "gemini-2.5-pro", "args": ["--sandbox"]}]`}})
	require.NoError(t, err)
	assert.Equal(t, []FallbackAgent{{Kind: "gemini", Model: "gemini-2.5-pro", Args: []string{"--sandbox"}}}, env.Agent.Fallback)
	assert.NotEqual(t, cfg.Hash(), env.Hash())

	def, err := Load(LoadOptions{RepoRoot: repo(t, ""), AgentKinds: agents.Kinds()})
	require.NoError(t, err)
	assert.Empty(t, def.Agent.Fallback)
}

func TestFallbackInvalid(t *testing.T) {
	tests := []struct {
		name, file string
		env        []string
		want       string
	}{
		{name: "unknown field, with its line", file: "agent:\n  kind: claude\n  fallback:\n    - kind: codex\n      modle: gpt-5\n",
			want: "runr.yaml:5: unknown key agent.fallback[0].modle (did you mean model?)"},
		{name: "unknown field far from every field", file: "agent:\n  fallback:\n    - {kind: codex}\n    - {kind: gemini, price: 3}\n",
			want: "runr.yaml:4: unknown key agent.fallback[1].price (an entry takes kind, model, args, command)"},
		{name: "entry not a mapping", file: "agent:\n  fallback:\n    - codex\n",
			want: "runr.yaml:3: agent.fallback[0] must be a mapping with kind and model (write e.g. {kind: codex, model: gpt-5-codex})"},
		{name: "not a list", file: "agent:\n  fallback: codex\n",
			want: "runr.yaml:2: agent.fallback must be a list of agents (write e.g. [{kind: codex, model: gpt-5-codex}])"},
		{name: "unknown kind", file: "agent:\n  fallback: [{kind: codx}]\n",
			want: "runr.yaml: agent.fallback[0].kind: codx is not one of claude, codex, gemini, opencode, aider, qwen, command (did you mean codex?)"},
		{name: "no kind", file: "agent:\n  fallback: [{model: gpt-5}]\n",
			want: `runr.yaml: agent.fallback[0]: {"model":"gpt-5"} is missing its kind (write e.g. {kind: codex, model: gpt-5-codex})`},
		{name: "command without its argv", file: "agent:\n  fallback: [{kind: codex}, {kind: command}]\n",
			want: `runr.yaml: agent.fallback[1]: {"kind":"command"} is kind command without its command (write e.g. {kind: command, command: [my-agent, --prompt, "{prompt}"]})`},
		{name: "command for an adapter", file: "agent:\n  fallback: [{kind: codex, command: [x]}]\n",
			want: `runr.yaml: agent.fallback[0].command: ["x"] is only for kind command (an adapter's extra arguments go in args)`},
		{name: "args not a list", file: "agent:\n  fallback: [{kind: codex, args: --fast}]\n",
			want: `runr.yaml: agent.fallback[0].args: --fast is not a list (write e.g. ["go test ./..."])`},
		{name: "env not an array", env: []string{`RUNR_AGENT_FALLBACK={"kind": "codex"}`},
			want: `RUNR_AGENT_FALLBACK: {"kind": "codex"} is not a JSON array (write e.g. [{"kind": "codex", "model": "gpt-5-codex"}])`},
		{name: "env unknown field", env: []string{`RUNR_AGENT_FALLBACK=[{"kind": "codex", "modle": "x"}]`},
			want: "RUNR_AGENT_FALLBACK: modle is not a field of an entry (an entry takes kind, model, args, command); did you mean model?"},
		{name: "env unknown kind", env: []string{`RUNR_AGENT_FALLBACK=[{"kind": "cursor"}]`},
			want: "RUNR_AGENT_FALLBACK: cursor is not one of claude, codex, gemini, opencode, aider, qwen, command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(LoadOptions{RepoRoot: repo(t, tt.file), Environ: tt.env, AgentKinds: agents.Kinds()})
			require.Error(t, err)
			assert.Equal(t, stopreasons.ConfigInvalid, stopreasons.CodeOf(err))
			assert.Equal(t, tt.want, err.Error())
		})
	}
}
