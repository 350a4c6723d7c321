package agents

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

func TestReportsCostAndTokens(t *testing.T) {
	cost := map[string]bool{}
	tokens := map[string]bool{}
	for _, kind := range Kinds() {
		a := mustLookup(t, kind)
		cost[kind], tokens[kind] = a.ReportsCost(), a.ReportsTokens()
	}
	assert.Equal(t, map[string]bool{"claude": true, "codex": false, "gemini": false, "opencode": true, "aider": false, "qwen": false, "command": false}, cost)
	assert.Equal(t, map[string]bool{"claude": true, "codex": true, "gemini": true, "opencode": true, "aider": true, "qwen": true, "command": false}, tokens)
}

func TestBudgetProblem(t *testing.T) {
	tests := []struct {
		name      string
		kind      string
		maxCost   float64
		maxTokens int64
		priced    bool
		want      []string // substrings of the error; nil for no error
	}{
		{"no budget", "codex", 0, 0, false, nil},
		{"claude reports cost", "claude", 5, 0, false, nil},
		{"opencode reports cost", "opencode", 5, 0, false, nil},
		{"codex without a price", "codex", 5, 0, false, []string{"budget.max_cost_usd", "codex", "agent.price.input_per_mtok", "agent.price.output_per_mtok"}},
		{"gemini without a price", "gemini", 0.5, 0, false, []string{"gemini", "agent.price.input_per_mtok"}},
		{"aider without a price", "aider", 1, 0, false, []string{"aider", "agent.price"}},
		{"codex with a price", "codex", 5, 0, true, nil},
		{"command with a cost budget", "command", 5, 0, true, []string{"reports neither cost nor tokens", "remove budget.max_cost_usd"}},
		{"command with a token budget", "command", 0, 1000, false, []string{"budget.max_tokens is 1000", "reports no tokens"}},
		{"tokens from codex", "codex", 0, 1000, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := BudgetProblem(mustLookup(t, tc.kind), tc.maxCost, tc.maxTokens, tc.priced)
			if tc.want == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, stopreasons.ConfigInvalid, stopreasons.CodeOf(err))
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
