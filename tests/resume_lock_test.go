package tests

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// While --auto-resume waits, the run stays held by its runr process: a
// second runr cannot resume it in between, and status names the holder.
func TestAutoResumeWaitHoldsTheRun(t *testing.T) {
	dir := resumeRepo(t, map[string]string{
		"TASK.md":   "Do it.\n",
		"runr.yaml": "agent:\n  idle_timeout: 1s\n  kill_grace: 1s\nresume:\n  backoff: [1m]\n",
	})
	cmd, stdout, stderr := resRunrCmd(dir, nil, "run", "--auto-resume", "--task", "TASK.md", "--", "fakeagent", "--do", "#1: hang", "--do", "status done")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	resWaitFor(t, "the auto-resume wait", func() bool { return resHasEvent(dir, "auto_resume") })

	second := exec.Command(filepath.Join(binDir, "runr"), "resume", "latest")
	second.Dir = dir
	second.Env = testEnv(dir)
	out, err := second.CombinedOutput()
	assert.Equal(t, 75, resExit(t, err), "a second runr must not take the run during the wait: %s", out)
	// The run is stopped (it stalled) and waits to go on: status names the
	// runr process that holds it.
	st := exec.Command(filepath.Join(binDir, "runr"), "status", "latest")
	st.Dir, st.Env = dir, testEnv(dir)
	detail, err := st.Output()
	require.NoError(t, err)
	assert.Contains(t, string(detail), "held by pid")

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, 130, resExit(t, cmd.Wait()), "%s\n%s", stdout, stderr)
	second = exec.Command(filepath.Join(binDir, "runr"), "status", "latest")
	second.Dir, second.Env = dir, testEnv(dir)
	detail, err = second.Output()
	require.NoError(t, err)
	assert.NotContains(t, string(detail), "held by pid", "the lock is released once runr stops")
}
