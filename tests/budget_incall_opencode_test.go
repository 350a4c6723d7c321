package tests

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
)

// opencodeManySteps is a replay of opencode 1.18.33's recorded tool_write
// call (internal/agents/testdata/opencode) with its first step, a tool call
// that cost $0.002805, played three times before its last step: four steps
// whose step_finish events bring the call's cost to $0.002805·k.
func opencodeManySteps(t *testing.T) string {
	t.Helper()
	rec, err := os.ReadFile(filepath.Join("..", "internal", "agents", "testdata", "opencode", "tool_write.jsonl"))
	require.NoError(t, err)
	lines := strings.SplitAfter(strings.TrimSuffix(string(rec), "\n"), "\n")
	require.Len(t, lines, 7, "the recording: two steps (start, text, tool_use, finish; start, text, finish)")
	require.Contains(t, lines[3], `"reason":"tool-calls"`)
	require.Contains(t, lines[6], `"reason":"stop"`)
	firstStep := strings.Join(lines[:4], "")
	out := strings.Repeat(firstStep, 3) + strings.Join(lines[4:], "") + "\n"
	path := filepath.Join(t.TempDir(), "opencode-many-steps.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(out), 0o644))
	return path
}

// opencode reports each step's cost as the call goes: runr adds them up and
// stops the call, still at work (the replay hangs after its output, like a
// CLI waiting for its next request), on the step that brings the spend to
// --max-cost. One step ($0.002805) stays below $0.005, two ($0.00561) reach
// it: the call is stopped after the second of its four steps, with 127.
// Were each step's cost taken alone, or usage counted at the end of the
// call only, the budget would not stop it.
func TestOpencodeRecordingStopsMidCallOnTheCostBudget(t *testing.T) {
	repo := newRepo(t)
	bin := t.TempDir()
	data, err := os.ReadFile(filepath.Join(binDir, "fakeagent"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(bin, "opencode"), data, 0o755))

	cmd := exec.Command(filepath.Join(binDir, "runr"), "run", "--agent", "opencode", "--prompt", "write hello.txt", "--max-cost", "0.005")
	cmd.Dir = repo
	cmd.Env = append(testEnv(repo),
		"PATH="+bin+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"FAKEAGENT_REPLAY="+opencodeManySteps(t),
		"FAKEAGENT_REPLAY_HANG=1",
		"RUNR_AGENT_KILL_GRACE=2s",
		"RUNR_AGENT_IDLE_TIMEOUT=2m",
		"RUNR_BUDGET_TIME=5m",
	)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "runr must fail: %v\nstderr: %s", err, stderr.String())
	require.Equal(t, 127, ee.ExitCode(), "stderr: %s", stderr.String())

	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	// The hanging replay was stopped: no process of its group is left.
	require.NoError(t, checkStoppedRun(dir, []string{"budget_exceeded"}))
	st := runState(t, repo)
	sr := st.StopReason
	assert.Equal(t, "budget.max_cost_usd", sr.Condition)
	assert.Contains(t, sr.Message, "mid-call")
	assert.InDelta(t, 0.005, sr.Threshold, 1e-12)
	assert.InDelta(t, 2*0.002805, st.Usage.CostUSD, 1e-12, "two steps' cost: the spend when the call was stopped")
	assert.False(t, st.Usage.CostEstimated, "opencode reported the cost")
	assert.Equal(t, int64(2*800), st.Usage.InputTokens, "two steps of the four")
	assert.Equal(t, int64(2*25), st.Usage.OutputTokens)
	assert.Nil(t, st.AgentProcess)
	require.NotEmpty(t, st.Milestones)
	require.Len(t, st.Milestones[0].Attempts, 1)
	assert.Equal(t, state.OutcomeStopped, st.Milestones[0].Attempts[0].Outcome)
	ev := timelineEvent(t, repo, "budget_stop")
	require.NotNil(t, ev, "the timeline tells of the stop inside the call")
	assert.Equal(t, "budget.max_cost_usd", ev["condition"])
}
