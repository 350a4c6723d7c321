package tests

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/tests/testenv"
)

// A claude that printed its result and then never exits (a recorded
// success replayed, then a hang) is ended after agent.result_grace, and its
// result counts: the run completes, the attempt is approved, the call is no
// worker_timeout and no stall, and nothing of its process group is left.
func TestClaudeResultWithoutExitEndsAfterResultGrace(t *testing.T) {
	repo := newRepo(t)
	r := runClaude(t, repo, []string{"IS_SANDBOX=1", "FAKEAGENT_REPLAY=" + recording(t, "success_promise"), "FAKEAGENT_REPLAY_HANG=1",
		"RUNR_AGENT_RESULT_GRACE=1s", "RUNR_AGENT_KILL_GRACE=1s", "RUNR_AGENT_IDLE_TIMEOUT=2m", "RUNR_AGENT_TIMEOUT=2m"},
		"--prompt", "write hello.txt")
	require.Equal(t, 0, r.exit, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Equal(t, "complete", string(r.st.StopReason.Code))
	require.Len(t, r.attempts(), 1)
	assert.Equal(t, state.OutcomeApproved, r.attempts()[0].Outcome)
	assert.Equal(t, 0, r.attempts()[0].ExitCode, "the call counts as if the agent had exited")
	assert.InDelta(t, 0.0014, r.st.Usage.CostUSD, 1e-9, "the result's cost counts")
	assert.Equal(t, sessionSuccess, r.st.Usage.AgentSessionID)

	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	var grace, ended map[string]any
	var pgid int
	for _, ev := range timelineEvents(t, dir) {
		data, _ := ev["data"].(map[string]any)
		switch ev["type"] {
		case "agent_result_grace":
			grace = data
		case "process_ended":
			if ev["phase"] == state.PhaseImplement {
				ended = data
			}
		case "process_started":
			if ev["phase"] == state.PhaseImplement {
				pgid = int(data["pgid"].(float64))
			}
		}
	}
	require.NotNil(t, grace, "the timeline says why the call was ended")
	assert.Equal(t, "result_grace", grace["reason"])
	assert.EqualValues(t, 1000, grace["grace_ms"])
	assert.GreaterOrEqual(t, grace["after_result_ms"].(float64), 1000.0, "not before the grace ran out")
	require.NotNil(t, ended)
	assert.Equal(t, false, ended["timed_out"])
	assert.Equal(t, false, ended["idle"])
	require.NotZero(t, pgid)
	assert.False(t, testenv.ProcessAlive(pgid), "the agent's process is gone")
	assert.NotContains(t, r.stderr, "worker_timeout")
}

// Without a result the grace never starts: a hanging call that printed
// none is still the idle timeout's (stalled), however short the grace.
func TestResultGraceNeedsAResult(t *testing.T) {
	repo := newRepo(t)
	r := runClaude(t, repo, []string{"IS_SANDBOX=1", "FAKEAGENT_REPLAY=" + recording(t, "many_turns"), "FAKEAGENT_REPLAY_HANG=1",
		"RUNR_AGENT_RESULT_GRACE=1s", "RUNR_AGENT_KILL_GRACE=1s", "RUNR_AGENT_IDLE_TIMEOUT=2s"},
		"--prompt", "write the parts")
	require.Equal(t, 126, r.exit, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Equal(t, "stalled", string(r.st.StopReason.Code))
}
