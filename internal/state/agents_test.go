package state

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAgentsUsed(t *testing.T) {
	claude, codex := AgentRef{Kind: "claude"}, AgentRef{Kind: "codex", Model: "m"}
	st := &State{
		Milestones: []Milestone{{Attempts: []Attempt{{Tick: 4, Agent: &codex}}}},
		// The attempt of tick 1 is no longer listed; the switch tells it.
		AgentSwitches: []AgentSwitch{{Tick: 1, From: claude, To: codex, Reason: SwitchRateLimited}},
	}
	assert.Equal(t, []AgentRef{claude, codex}, st.AgentsUsed())
	// A program that was missing made no call.
	st.AgentSwitches[0].Reason = SwitchNotFound
	assert.Equal(t, []AgentRef{codex}, st.AgentsUsed())
}
