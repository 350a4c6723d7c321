package proc

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStopTaggedNeedsEveryTag: two workers of one parallel run share its
// RUNR_RUN_ID; stopping one worker's leftovers (the run's id and its
// RUNR_WORKER) leaves the other worker's process alone.
func TestStopTaggedNeedsEveryTag(t *testing.T) {
	start := func(worker string) *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		cmd.Env = append(os.Environ(), "RUNR_RUN_ID=tagged-run", "RUNR_WORKER="+worker)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	one, two := start("1"), start("2")
	// /proc shows a child's environment once it has exec'd sleep.
	require.Eventually(t, func() bool {
		return carries(one.Process.Pid, []string{"RUNR_WORKER=1"}) && carries(two.Process.Pid, []string{"RUNR_WORKER=2"})
	}, 10*time.Second, 10*time.Millisecond)
	assert.False(t, carries(one.Process.Pid, nil), "no tags match nothing")

	stopped, err := StopTagged(time.Second, "RUNR_RUN_ID=tagged-run", "RUNR_WORKER=1")
	require.NoError(t, err)
	assert.Equal(t, []int{one.Process.Pid}, stopped)
	_ = one.Wait()
	assert.True(t, pidAlive(two.Process.Pid), "the other worker's process is alive")
}
