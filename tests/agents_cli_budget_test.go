package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/tests/testenv"
)

// TestClaudeCLIIntegrationBudget runs the real Claude Code CLI under runr
// against a scripted Messages API that never stops asking for another
// tool call: every response writes one more file. agent.price makes each
// response (120 input tokens and the 1 output token its assistant events
// show) cost about $0.12 by runr's estimate, while the CLI's own cap
// (--max-budget-usd, at its real prices) is far away: runr stops the call
// itself, in the middle, when the spend reaches max_cost_usd.
func TestClaudeCLIIntegrationBudget(t *testing.T) {
	cli := claudeCLI(t)
	repo := newRepo(t)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "runr.yaml"),
		[]byte("agent:\n  price: {input_per_mtok: 1000, output_per_mtok: 1000}\n"), 0o644))
	api := testenv.NewMessagesAPI(t, func(req testenv.APIRequest) testenv.APIReply {
		if !req.HasTool("Write") {
			// A side request of the CLI (a title, a summary): plain text.
			return testenv.APIReply{Blocks: []testenv.APIBlock{{Text: "parts"}}}
		}
		n := req.ToolResults() + 1
		return testenv.APIReply{Blocks: []testenv.APIBlock{
			{Text: fmt.Sprintf("Writing part %d.", n)},
			{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(repo, fmt.Sprintf("part-%02d.txt", n)), "content": fmt.Sprintf("part %d\n", n)}},
		}}
	})
	code, out := runrWithCLI(t, cli, repo, api, "--prompt", "write the parts, one file per step, forever", "--max-cost", "1")
	api.Check(t)
	require.Equal(t, 127, code, "runr output:\n%s", out)

	st := readRunState(t, repo) // no process of the call's group is left
	t.Logf("usage %+v; stop: %s", st.Usage, st.StopReason.Message)
	assert.Equal(t, "budget_exceeded", string(st.StopReason.Code))
	assert.Equal(t, "budget.max_cost_usd", st.StopReason.Condition)
	assert.Contains(t, st.StopReason.Message, "mid-call")
	assert.True(t, st.Usage.CostEstimated, "no result came: the spend is runr's estimate")
	assert.GreaterOrEqual(t, st.Usage.CostUSD, 1.0)
	assert.Less(t, st.Usage.CostUSD, 1.0+0.25, "stopped on the response that reached the budget")
	assert.GreaterOrEqual(t, st.Usage.InputTokens, int64(8*testenv.APIInputTokens), "many responses before the budget")
	require.Len(t, st.Milestones[0].Attempts, 1)
	assert.Equal(t, state.OutcomeStopped, st.Milestones[0].Attempts[0].Outcome)
	assert.Less(t, api.Count(), testenv.MaxAPIRequests, "runr stopped the CLI, not the API's request limit")
	parts, err := filepath.Glob(filepath.Join(repo, "part-*.txt"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(parts), 5, "the CLI really worked through many turns")
}
