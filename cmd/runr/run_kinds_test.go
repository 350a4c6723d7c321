package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// --agent's help and the "no agent" usage error list the registry's kinds,
// qwen included.
func TestRunListsTheAgentKinds(t *testing.T) {
	assert.Equal(t, "agent kind: claude, codex, gemini, opencode, aider, qwen or command",
		NewCmdRun(testFactory(), nil).Flags().Lookup("agent").Usage)
	assert.Equal(t, []string{"claude", "codex", "gemini", "opencode", "aider", "qwen"}, adapterKinds())
}
