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
		{"command with a cost budget (RUNR_USAGE)", "command", 5, 0, false, nil},
		{"command with a token budget (RUNR_USAGE)", "command", 0, 1000, false, nil},
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

func TestBudgetWarning(t *testing.T) {
	cmd := mustLookup(t, "command")
	assert.Empty(t, BudgetWarning(cmd, 0, 0, false), "no budget, nothing to say")
	assert.Empty(t, BudgetWarning(mustLookup(t, "claude"), 5, 100, false), "claude reports its usage")
	w := BudgetWarning(cmd, 0, 1000, false)
	assert.Contains(t, w, "RUNR_USAGE:")
	assert.NotContains(t, w, "cost_usd")
	w = BudgetWarning(cmd, 2, 0, false)
	assert.Contains(t, w, "cost_usd", "an unpriced cost budget needs cost_usd or a priced model")
	assert.NotContains(t, BudgetWarning(cmd, 2, 0, true), "cost_usd")
}

func TestPricedByTheTable(t *testing.T) {
	assert.True(t, Priced(1, 0, ""))
	assert.True(t, Priced(0, 0, "gpt-5-codex"))
	assert.False(t, Priced(0, 0, "my-local-model"))
	assert.False(t, Priced(0, 0, ""))
	// The supervisor passes Priced on: a codex run on a model of the table
	// may have a cost budget, one on an unknown model may not.
	assert.NoError(t, BudgetProblem(mustLookup(t, "codex"), 5, 0, Priced(0, 0, "gpt-5.1-codex-max")))
	assert.Error(t, BudgetProblem(mustLookup(t, "codex"), 5, 0, Priced(0, 0, "my-local-model")))
}
