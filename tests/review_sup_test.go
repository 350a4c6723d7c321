package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResumeOfARunCrashedInVerifyJudgesTheAttempt: runr dies while a verify
// command runs. The agent's call had finished, so the resume verifies that
// attempt again (as after a signal in verify) and records its outcome: the
// attempt counts, and the statistics do not show an approved milestone that
// was never attempted.
func TestResumeOfARunCrashedInVerifyJudgesTheAttempt(t *testing.T) {
	dir := resumeRepo(t, map[string]string{"TASK.md": "Do it.\n"})
	ready := filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"-ready")
	// The first verify announces itself and hangs; the second passes.
	verify := "if [ -e .git/verified-once ]; then exit 0; fi; touch .git/verified-once; echo VERIFY READY >> " + ready + "; sleep 300"
	cmd, _, stderr := resRunrCmd(dir, nil, "run", "--task", "TASK.md", "--verify", verify, "--",
		"fakeagent", "--do", "write out.txt done; status done")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	resWaitFor(t, "the verify command to run", resFileContains(ready, "VERIFY READY"))
	resWaitFor(t, "state.json to record the verify process", func() bool {
		return supProcessPhase(t, dir) == "verify"
	})
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	require.Equal(t, 137, resExit(t, cmd.Wait()), stderr.String())

	code, stdout, errOut := resRunr(t, dir, nil, "resume", "latest")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	st := supState(t, dir)
	assert.Equal(t, "complete", st.StopReason.Code)
	require.Len(t, st.Milestones, 1)
	require.Len(t, st.Milestones[0].Attempts, 1, "the agent ran once")
	assert.Equal(t, "approved", st.Milestones[0].Attempts[0].Outcome)
	assert.Equal(t, 1, st.Statistics.Attempted)
	assert.Equal(t, 1, st.Statistics.Approved)
	assert.Equal(t, 1, st.Counters.Attempts)
}

// supRunState is the parts of state.json these tests look at.
type supRunState struct {
	StopReason *struct {
		Code string `json:"code"`
	} `json:"stop_reason"`
	AgentProcess *struct {
		Phase string `json:"phase"`
	} `json:"agent_process"`
	Milestones []struct {
		Status   string `json:"status"`
		Attempts []struct {
			Outcome string `json:"outcome"`
		} `json:"attempts"`
	} `json:"milestones"`
	Statistics struct {
		Attempted int `json:"attempted"`
		Approved  int `json:"approved"`
	} `json:"statistics"`
	Counters struct {
		Attempts int `json:"attempts"`
	} `json:"counters"`
}

func supState(t *testing.T, dir string) supRunState {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(resRunDir(t, dir), "state.json"))
	require.NoError(t, err)
	var st supRunState
	require.NoError(t, json.Unmarshal(data, &st))
	return st
}

func supProcessPhase(t *testing.T, dir string) string {
	st := supState(t, dir)
	if st.AgentProcess == nil {
		return ""
	}
	return st.AgentProcess.Phase
}

// TestResumeStoppedBeforeItsFirstTickKeepsElapsed: a resume that stops
// before its first tick (here the agent program is gone from PATH) keeps
// the elapsed time of the earlier invocations; it must not start the time
// budget afresh.
func TestResumeStoppedBeforeItsFirstTickKeepsElapsed(t *testing.T) {
	dir := resumeRepo(t, map[string]string{"TASK.md": "Do it.\n"})
	code, _, stderr := resRunr(t, dir, nil, "run", "--task", "TASK.md", "--time", "2s", "--", "fakeagent", "--do", "sleep 30s")
	require.Equal(t, 124, code, stderr)
	first := resReadState(t, dir)
	require.GreaterOrEqual(t, first.ElapsedMS, int64(2000))

	code, stdout, errOut := resRunr(t, dir, []string{"PATH=/usr/bin:/bin"}, "resume", "latest", "--time", "1m")
	require.Equal(t, 35, code, "%s\n%s", stdout, errOut)
	after := resReadState(t, dir)
	require.Equal(t, "worker_not_found", after.StopReason.Code)
	assert.Equal(t, first.ElapsedMS, after.ElapsedMS, "elapsed_ms is cumulative")
}
