package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runr-dev/runr/internal/agents"
)

// --agent's help and the "no agent" usage error list the registry's kinds,
// qwen included.
func TestRunListsTheAgentKinds(t *testing.T) {
	usage := NewCmdRun(testFactory(), nil).Flags().Lookup("agent").Usage
	kinds := agents.Kinds()
	assert.Equal(t, "agent kind: "+strings.Join(kinds[:len(kinds)-1], ", ")+" or "+kinds[len(kinds)-1], usage)
	assert.Contains(t, usage, "qwen")
	assert.Equal(t, len(kinds)-1, len(adapterKinds()))
	assert.Contains(t, adapterKinds(), "qwen")
	assert.NotContains(t, adapterKinds(), agents.CommandKind)
}
