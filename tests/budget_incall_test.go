package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/tests/testenv"
)

// runState reads the latest run's state.json of repo as runr's own type.
func runState(t *testing.T, repo string) *state.State {
	t.Helper()
	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	require.NoError(t, err)
	st := &state.State{}
	require.NoError(t, json.Unmarshal(b, st), "state.json must parse")
	return st
}

// timelineEvent returns the data of the first event of type typ in the
// latest run's timeline, nil when there is none.
func timelineEvent(t *testing.T, repo, typ string) map[string]any {
	t.Helper()
	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "timeline.jsonl"))
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &ev))
		if ev.Type == typ {
			if ev.Data == nil {
				ev.Data = map[string]any{}
			}
			return ev.Data
		}
	}
	return nil
}

// A command agent's RUNR_USAGE lines bind budget.max_cost_usd inside a call:
// the second milestone's call, still running (it never exits), is stopped
// on the line whose cost, added to the first call's, reaches the budget.
func TestCostBudgetStopsACommandAgentMidCall(t *testing.T) {
	repo := newRepo(t)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "TASK.md"), []byte("# Two steps\n- [ ] one\n- [ ] two\n"), 0o644))
	p := startRunr(t, repo, []string{"RUNR_AGENT_KILL_GRACE=2s"}, "run", "--task", "TASK.md", "--max-cost", "0.5", "--time", "5m", "--",
		"fakeagent",
		"--do", "m1: usage 1000 100 0.30; status done",
		// $0.30 + $0.10 and + $0.15 stay below $0.50; + $0.25 reaches it.
		"--do", "m2: grandchild 300s; usage 500 50 0.10; usage 900 90 0.15; usage 1500 150 0.25; ready; hang")
	code := p.wait(t, 3*time.Minute)
	require.Equal(t, 127, code, "stderr: %s", &p.stderr)
	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	// No process of the call's group is left, the grandchild included.
	require.NoError(t, checkStoppedRun(dir, []string{"budget_exceeded"}))
	b, _ := os.ReadFile(p.ready)
	assert.Contains(t, string(b), "FAKEAGENT GRANDCHILD", "the grandchild really started")

	st := runState(t, repo)
	sr := st.StopReason
	assert.Equal(t, "budget.max_cost_usd", sr.Condition)
	assert.Contains(t, sr.Message, "mid-call")
	assert.InDelta(t, 0.55, sr.Value, 1e-9, "the spend so far: both calls")
	assert.InDelta(t, 0.5, sr.Threshold, 1e-9)
	assert.InDelta(t, 0.55, st.Usage.CostUSD, 1e-9)
	assert.False(t, st.Usage.CostEstimated, "the agent reported its cost")
	assert.Equal(t, int64(1000+1500), st.Usage.InputTokens)
	assert.Equal(t, int64(100+150), st.Usage.OutputTokens)
	assert.Nil(t, st.AgentProcess)
	require.Len(t, st.Milestones, 2)
	assert.Equal(t, state.MilestoneApproved, st.Milestones[0].Status)
	require.NotEmpty(t, st.Milestones[1].Attempts)
	assert.Equal(t, state.OutcomeStopped, st.Milestones[1].Attempts[0].Outcome)
	assert.InDelta(t, 0.25, st.Milestones[1].Attempts[0].CostUSD, 1e-9)
	ev := timelineEvent(t, repo, "budget_stop")
	require.NotNil(t, ev, "the timeline tells of the stop inside the call")
	assert.Equal(t, "budget.max_cost_usd", ev["condition"])
}

// The same with budget.max_tokens, and a malformed usage line that would
// have reached the budget changes nothing.
func TestTokenBudgetStopsACommandAgentMidCall(t *testing.T) {
	repo := newRepo(t)
	p := startRunr(t, repo, []string{"RUNR_BUDGET_MAX_TOKENS=1000"}, "run", "--prompt", "work", "--time", "5m", "--",
		"fakeagent", "--do", "usage 400 100; print RUNR_USAGE: input_tokens=5000 output_tokens=many; usage 800 300; ready; hang")
	require.Equal(t, 127, p.wait(t, 3*time.Minute), "stderr: %s", &p.stderr)
	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	require.NoError(t, checkStoppedRun(dir, []string{"budget_exceeded"}))
	st := runState(t, repo)
	assert.Equal(t, "budget.max_tokens", st.StopReason.Condition)
	assert.Contains(t, st.StopReason.Message, "mid-call")
	assert.EqualValues(t, 1100, st.StopReason.Value)
	assert.EqualValues(t, 1000, st.StopReason.Threshold)
	assert.Equal(t, int64(800), st.Usage.InputTokens)
	assert.Equal(t, int64(300), st.Usage.OutputTokens)
	assert.Equal(t, 0.0, st.Usage.CostUSD, "no cost reported, no price: unknown")

	// Below the budget the call ends as it would have: usage counted, run
	// complete.
	repo = newRepo(t)
	p = startRunr(t, repo, []string{"RUNR_BUDGET_MAX_TOKENS=1000"}, "run", "--prompt", "work", "--time", "5m", "--",
		"fakeagent", "--do", "usage 400 100; print RUNR_USAGE: input_tokens=5000 output_tokens=many; status done")
	require.Equal(t, 0, p.wait(t, 3*time.Minute), "stderr: %s", &p.stderr)
	st = runState(t, repo)
	assert.Equal(t, "complete", string(st.StopReason.Code))
	assert.Equal(t, int64(500), st.Usage.InputTokens+st.Usage.OutputTokens)
	assert.NotNil(t, timelineEvent(t, repo, "budget_warning"), "a command agent's budget binds only with RUNR_USAGE lines: the run says so")
}

// Claude Code's stream, replayed: twelve API responses, each printed as two
// assistant events of one message id (the first saying 1 output token, the
// second 500), and no result (the CLI is still at work). Response k used
// 1000·k input and 100000·k cache-read tokens; priced from runr's table for
// claude-sonnet-4-5 ($3 input, $0.30 cache reads, $15 output per million)
// it cost $0.033·k + $0.0075 (the first event's figures: $0.033·k +
// $0.000015). Four responses come to $0.36; the first event of the fifth
// brings $0.525015: the call is stopped there. Counted once per event, or
// with the first event's output only, it would stop elsewhere (16000 or
// 21000 input tokens, not 15000).
func TestClaudeRecordingStopsMidCallOnTheCostBudget(t *testing.T) {
	repo := newRepo(t)
	r := runClaude(t, repo, []string{"IS_SANDBOX=1", "FAKEAGENT_REPLAY=" + recording(t, "many_turns"), "FAKEAGENT_REPLAY_HANG=1", "RUNR_AGENT_IDLE_TIMEOUT=2m"},
		"--prompt", "write the parts", "--max-cost", "0.5")
	require.Equal(t, 127, r.exit, "stderr: %s", r.stderr)
	assert.Equal(t, "budget_exceeded", string(r.st.StopReason.Code))
	assert.Equal(t, "budget.max_cost_usd", r.st.StopReason.Condition)
	assert.Contains(t, r.st.StopReason.Message, "mid-call")
	assert.Equal(t, int64(1000*(1+2+3+4+5)), r.st.Usage.InputTokens, "five responses, each counted once")
	assert.Equal(t, int64(4*500+1), r.st.Usage.OutputTokens, "each response with its largest output figure so far")
	assert.InDelta(t, 0.525015, r.st.Usage.CostUSD, 1e-9)
	assert.True(t, r.st.Usage.CostEstimated)
	assert.InDelta(t, 0.53, r.st.StopReason.Value, 1e-9)
	require.Len(t, r.attempts(), 1)
	assert.Equal(t, state.OutcomeStopped, r.attempts()[0].Outcome)
}

// A runr killed with SIGKILL in the middle of a call leaves the call's
// usage so far in state.json (agent_process.usage); the resume counts it.
func TestKilledRunKeepsTheInterruptedCallsSpend(t *testing.T) {
	dir := resumeRepo(t, map[string]string{"TASK.md": "Do it.\n"})
	ready := filepath.Join(dir, "..", filepath.Base(dir)+"-ready")
	env := []string{"FAKEAGENT_READY_FILE=" + ready}
	// The second usage line comes within a second of the first, and the
	// agent prints nothing after it: its write waits for the second to pass.
	cmd, _, stderr := resRunrCmd(dir, env, "run", "--task", "TASK.md", "--time", "5m", "--",
		"fakeagent", "--do", "#1: usage 1000 100 0.20; usage 2000 200 0.40; ready; hang",
		"--do", "#2+: usage 10 5 0.05; status done")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	resWaitFor(t, "the agent to be ready", resFileContains(ready, "READY"))
	var agent *state.Process
	testenv.WaitFor(t, "state.json to hold the call's usage so far", func() bool {
		st := runState(t, dir)
		agent = st.AgentProcess
		return agent != nil && agent.Usage != nil && agent.Usage.InputTokens == 2000
	})
	t.Cleanup(func() { syscall.Kill(-agent.PGID, syscall.SIGKILL) })
	assert.InDelta(t, 0.40, agent.Usage.CostUSD, 1e-9)
	assert.Equal(t, "reported", agent.Usage.CostSource)

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	require.Equal(t, 137, resExit(t, cmd.Wait()), stderr.String())
	require.True(t, testenv.ProcessAlive(agent.PID), "the agent outlives the killed runr")
	st := runState(t, dir)
	assert.Equal(t, 0.0, st.Usage.CostUSD, "the call never ended: only agent_process holds its spend")

	code, stdout, errOut := resRunr(t, dir, env, "resume", "latest")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	assert.False(t, testenv.ProcessAlive(agent.PID), "the orphaned agent %d was stopped", agent.PID)
	st = runState(t, dir)
	assert.Equal(t, "complete", string(st.StopReason.Code))
	assert.InDelta(t, 0.40+0.05, st.Usage.CostUSD, 1e-9, "the interrupted call's spend and the resumed call's")
	assert.Equal(t, int64(2000+10), st.Usage.InputTokens)
	assert.Equal(t, int64(200+5), st.Usage.OutputTokens)
	assert.Nil(t, st.AgentProcess)
	rec := timelineEvent(t, dir, "crash_recovered")
	require.NotNil(t, rec)
	added, ok := rec["call_usage_added"].(map[string]any)
	require.True(t, ok, "crash_recovered says what it added: %v", rec)
	assert.Equal(t, "reported", added["cost_source"])
	assert.InDelta(t, 0.40, added["cost_reported_usd"], 1e-9)
	// The interrupted call is in the cost ledger and its model's totals too.
	var calls, interrupted int
	runDir, err := latestRunDir(dir)
	require.NoError(t, err)
	for _, e := range timelineEvents(t, runDir) {
		if e["type"] != "agent_call" {
			continue
		}
		calls++
		if data, _ := e["data"].(map[string]any); data["interrupted"] == true {
			interrupted++
		}
	}
	assert.Equal(t, 2, calls, "the interrupted call and the resumed one")
	assert.Equal(t, 1, interrupted)
	var modelCalls int
	for _, m := range st.Usage.Models {
		modelCalls += m.Calls
	}
	assert.Equal(t, 2, modelCalls)
}
