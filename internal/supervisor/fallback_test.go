package supervisor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/runr-dev/runr/internal/config"
)

func TestAgentSettings(t *testing.T) {
	base := config.Agent{Kind: "claude", Model: "opus", Args: []string{"--x"}, PermissionMode: "plan", Timeout: time.Minute,
		Price:    config.Price{InputPerMTok: 3, OutputPerMTok: 15},
		Fallback: []config.FallbackAgent{{Kind: "codex", Model: "gpt-5-codex"}, {Kind: "command", Command: []string{"./a.sh"}}}}
	assert.Equal(t, base, agentSettings(base, 0))
	assert.Equal(t, base, agentSettings(base, 3), "an index past the list is the primary")
	got := agentSettings(base, 1)
	assert.Equal(t, "codex", got.Kind)
	assert.Equal(t, "gpt-5-codex", got.Model)
	assert.Nil(t, got.Args)
	assert.Equal(t, config.Price{}, got.Price, "agent.price is the primary's")
	assert.Equal(t, "plan", got.PermissionMode)
	assert.Equal(t, time.Minute, got.Timeout)
	assert.Equal(t, []string{"./a.sh"}, agentSettings(base, 2).Command)
}
