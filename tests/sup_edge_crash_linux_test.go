package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/runr-dev/runr/tests/testenv"
)

// Finding a run's processes by their environment needs /proc: these tests
// are Linux only.

// After runr is killed with SIGKILL, the resume stops every process of the
// run, also one that left the agent's process group, and counts the time
// the call in flight ran before the crash.
func TestSupEdgeCrashRecoveryStopsEscapedProcessesAndCountsTheCall(t *testing.T) {
	dir := resumeRepo(t, map[string]string{"TASK.md": "Do it.\n"})
	side := t.TempDir()
	escaped, ready, first := filepath.Join(side, "escaped.pid"), filepath.Join(side, "ready"), filepath.Join(side, "first")
	path := supAgentScript(t, "sup-crash-agent", `if [ ! -e `+first+` ]; then
  touch `+first+`
  setsid sleep 300 </dev/null >/dev/null 2>&1 &
  echo $! > `+escaped+`
  echo READY > `+ready+`
  exec sleep 300
fi
echo done > out.txt
echo 'RUNR_STATUS: done'
`)
	cmd, _, stderr := resRunrCmd(dir, []string{path}, "run", "--task", "TASK.md", "--", "sup-crash-agent")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	resWaitFor(t, "the agent to be ready", resFileContains(ready, "READY"))
	pid := supReadPID(t, escaped)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	var startedAt time.Time
	resWaitFor(t, "state.json to record the agent", func() bool {
		data, _ := os.ReadFile(filepath.Join(resRunDir(t, dir), "state.json"))
		var st struct {
			AgentProcess *struct {
				PGID      int       `json:"pgid"`
				StartedAt time.Time `json:"started_at"`
			} `json:"agent_process"`
		}
		if json.Unmarshal(data, &st) != nil || st.AgentProcess == nil {
			return false
		}
		startedAt = st.AgentProcess.StartedAt
		t.Cleanup(func() { syscall.Kill(-st.AgentProcess.PGID, syscall.SIGKILL) })
		return true
	})
	// The call runs a while before the crash.
	resWaitFor(t, "the call to have run 1.5s", func() bool { return time.Since(startedAt) > 1500*time.Millisecond })
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	require.Equal(t, 137, resExit(t, cmd.Wait()), stderr.String())
	require.True(t, testenv.ProcessAlive(pid), "the escaped process outlives the killed runr")

	code, stdout, errOut := resRunr(t, dir, []string{path}, "resume", "latest")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	assert.False(t, testenv.ProcessAlive(pid), "the process %d that left the agent's group was stopped", pid)
	st := resReadState(t, dir)
	assert.Equal(t, "complete", st.StopReason.Code)
	assert.GreaterOrEqual(t, st.ElapsedMS, int64(1500), "the call cut short by the crash is counted")
}

// The same after a crash: runr is killed while the agent runs, the agent's
// main process then exits normally and leaves its background child; the
// resume stops that child though the recorded process is gone.
func TestSupEdgeBackgroundChildOfAGroupWhoseLeaderExitedIsStoppedOnResume(t *testing.T) {
	dir := resumeRepo(t, map[string]string{"TASK.md": "Do it.\n"})
	side := t.TempDir()
	bg, ready, release, first := filepath.Join(side, "bg.pid"), filepath.Join(side, "ready"), filepath.Join(side, "release"), filepath.Join(side, "first")
	path := supAgentScript(t, "sup-leader-agent", `if [ ! -e `+first+` ]; then
  touch `+first+`
  sleep 300 &
  echo $! > `+bg+`
  echo READY > `+ready+`
  while [ ! -e `+release+` ]; do sleep 0.05; done
  exit 0
fi
echo done > out.txt
echo 'RUNR_STATUS: done'
`)
	// The orphaned agent is reparented to this test, which reaps it as
	// init would: a zombie leader still looks alive to a pid check.
	require.NoError(t, unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	cmd, _, stderr := resRunrCmd(dir, []string{path}, "run", "--task", "TASK.md", "--", "sup-leader-agent")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	resWaitFor(t, "the agent to be ready", resFileContains(ready, "READY"))
	pid := supReadPID(t, bg)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	resWaitFor(t, "state.json to record the agent", func() bool {
		st := resReadState(t, dir)
		return st.AgentProcess != nil && st.AgentProcess.PID > 0
	})
	leader := resReadState(t, dir).AgentProcess.PID
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	require.Equal(t, 137, resExit(t, cmd.Wait()), stderr.String())
	require.NoError(t, os.WriteFile(release, nil, 0o644))
	var ws syscall.WaitStatus
	_, err := syscall.Wait4(leader, &ws, 0, nil)
	require.NoError(t, err, "reap the agent's main process")
	require.True(t, ws.Exited() && ws.ExitStatus() == 0, "the agent's main process exited normally: %v", ws)
	require.True(t, testenv.ProcessAlive(pid), "the background child outlives its leader")

	code, stdout, errOut := resRunr(t, dir, []string{path}, "resume", "latest")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	assert.False(t, testenv.ProcessAlive(pid), "the background child %d of the crashed call was stopped", pid)
}
