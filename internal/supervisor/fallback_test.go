package supervisor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

func TestSwitchReason(t *testing.T) {
	now := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	s := New(Options{Config: &config.Config{Resume: config.Resume{MaxWait: 6 * time.Hour}}, Now: func() time.Time { return now }})
	limited := result{Event: Event{Outcome: AgentRateLimited}}
	tests := []struct {
		name    string
		r       result
		resetAt time.Time
		limit   agents.LimitKind
		reason  string
		why     string
	}{
		{"reset beyond max_wait", limited, now.Add(6*time.Hour + time.Second), agents.LimitUsageWindow, state.SwitchRateLimited, "beyond resume.max_wait 6h"},
		{"reset at max_wait: the auto-resume waits", limited, now.Add(6 * time.Hour), agents.LimitUsageWindow, "", ""},
		{"reset soon", limited, now.Add(time.Minute), agents.LimitRate, "", ""},
		{"no reset known: transient", limited, time.Time{}, agents.LimitRate, "", ""},
		{"overloaded, no reset: transient", limited, time.Time{}, agents.LimitOverloaded, "", ""},
		{"spend cap, no reset: never lifts by waiting", limited, time.Time{}, agents.LimitSpendCap, state.SwitchRateLimited, "spend cap limit with no reset time"},
		{"usage window, no reset: hours", limited, time.Time{}, agents.LimitUsageWindow, state.SwitchRateLimited, "usage window limit with no reset time"},
		{"spend cap resetting soon: waited for", limited, now.Add(time.Minute), agents.LimitSpendCap, "", ""},
		{"program missing", result{Event: Event{Outcome: Fault, Code: stopreasons.WorkerNotFound}, stop: &stop{Stop: stopreasons.Stop{Message: "gone"}}}, time.Time{}, agents.LimitNone, state.SwitchNotFound, "gone"},
		{"another fault", result{Event: Event{Outcome: Fault, Code: stopreasons.InternalError}}, time.Time{}, agents.LimitNone, "", ""},
		{"auth failure", result{Event: Event{Outcome: AgentAuthFailed}}, now.Add(24 * time.Hour), agents.LimitNone, "", ""},
		{"failed attempt", result{Event: Event{Outcome: AgentFailed}}, now.Add(24 * time.Hour), agents.LimitNone, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, why := s.switchReason(tt.r, tt.resetAt, tt.limit)
			assert.Equal(t, tt.reason, reason)
			assert.Contains(t, why, tt.why)
		})
	}
}

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
