package config

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runr-dev/runr/internal/stopreasons"
)

func codes() []string {
	var out []string
	for _, r := range stopreasons.All() {
		out = append(out, string(r.Code))
	}
	return out
}

func TestClosestCodes(t *testing.T) {
	assert.Contains(t, Closest("timout", codes(), 3), string(stopreasons.Timeout))
	assert.Contains(t, Closest("stalld", codes(), 3), string(stopreasons.Stalled))
	assert.Empty(t, Closest("zzzzzzzzzzzzzzzzzzzz", codes(), 3))

	// Fewest edits first: `runr reasons timout` names timeout before any
	// code that merely looks alike.
	assert.Equal(t, "timeout", Closest("timout", codes(), 3)[0])
	// A part of a code finds it.
	assert.Equal(t, []string{"budget_exceeded"}, Closest("budget", codes(), 3))
	assert.Len(t, Closest("rate", codes(), 2), 2)
}

func TestClosestKeysAndValues(t *testing.T) {
	tests := []struct {
		s          string
		candidates []string
		want       []string
	}{
		{"cluade", []string{"claude", "codex", "gemini", "opencode", "aider", "command"}, []string{"claude"}},
		{"Claude", []string{"claude", "codex"}, []string{"claude"}},
		{"cursor", []string{"claude", "codex", "gemini", "opencode", "aider", "command"}, nil},
		{"continue", []string{"stop", "skip"}, nil},
		{"max_ticks", names, []string{"budget.max_ticks"}},
		{"stop.no", names, []string{"stop.noop", "stop.no_progress"}},
		{"timeout", names, []string{"agent.timeout", "notify.timeout", "verify.timeout", "telemetry.timeout", "agent.idle_timeout"}},
		{"frobnicate", names, nil},
		{"ab", []string{"a", "abc"}, []string{"a", "abc"}},
	}
	for _, tt := range tests {
		t.Run(tt.s, func(t *testing.T) {
			// One more than wanted: nothing else is near enough.
			assert.Equal(t, tt.want, Closest(tt.s, tt.candidates, len(tt.want)+1))
		})
	}
}

func TestEditDistance(t *testing.T) {
	assert.Equal(t, 0, editDistance("stop", "stop"))
	assert.Equal(t, 2, editDistance("cluade", "claude"))
	assert.Equal(t, 3, editDistance("kitten", "sitting"))
	assert.Equal(t, 4, editDistance("", "stop"))
}
