package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/tests/testenv"
)

// TestCtrlCSaysWhatHappensNext: the first Ctrl+C prints at once, on
// stderr, that the agent's group is asked to stop and gets kill_grace, and
// that Ctrl+C again stops it now; the run is still stopping (the agent
// ignores SIGTERM and the grace is long). The second Ctrl+C is honoured at
// once: runr exits 130 long before the grace would end, and no process of
// the agent's group is left.
func TestCtrlCSaysWhatHappensNext(t *testing.T) {
	repo := newRepo(t)
	ready := filepath.Join(repo, ".git", "ready")
	// stderr goes to a file runr writes directly, so the test can read it
	// while runr runs.
	errPath := filepath.Join(t.TempDir(), "stderr")
	errFile, err := os.Create(errPath)
	require.NoError(t, err)
	defer errFile.Close()
	cmd := exec.Command(filepath.Join(binDir, "runr"), "run", "--prompt", "work", "--",
		"fakeagent", "--do", "ignore-term; ready; hang")
	cmd.Dir = repo
	cmd.Env = append(testEnv(repo), "FAKEAGENT_READY_FILE="+ready, "RUNR_AGENT_KILL_GRACE=300s")
	cmd.Stderr = errFile
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
			<-done
		}
		killRecordedGroups(repo)
	})
	exited := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	stderr := func() string {
		b, _ := os.ReadFile(errPath)
		return string(b)
	}
	waitErr := func(what string) {
		t.Helper()
		testenv.WaitFor(t, "stderr to say "+what, func() bool {
			if strings.Contains(stderr(), what) {
				return true
			}
			if exited() && !strings.Contains(stderr(), what) {
				t.Fatalf("runr exited %d without saying %q; stderr:\n%s", cmd.ProcessState.ExitCode(), what, stderr())
			}
			return false
		})
	}

	testenv.WaitFor(t, "the agent's ready line", func() bool {
		return testenv.FileCount(ready, "FAKEAGENT READY") >= 1 || exited()
	})
	require.False(t, exited(), "runr exited before the agent was ready; stderr:\n%s", stderr())

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	waitErr("Ctrl+C again stops it now")
	first := stderr()
	assert.Contains(t, first, "runr: Ctrl+C: stopping the run; the agent's process group is asked to stop and gets 5m (agent.kill_grace) to exit; Ctrl+C again stops it now\n")
	// The agent got SIGTERM and ignores it: runr is waiting out the grace.
	testenv.WaitFor(t, "the agent to ignore its SIGTERM", func() bool {
		return testenv.FileCount(ready, "FAKEAGENT TERM IGNORED") >= 1 || exited()
	})
	require.False(t, exited(), "the first Ctrl+C leaves the agent its grace; stderr:\n%s", stderr())

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	waitErr("Ctrl+C again: stopping the agent's process group now")
	// 300s of grace: only the second Ctrl+C ends the run within this.
	select {
	case <-done:
	case <-time.After(testenv.WaitLimit):
		t.Fatalf("runr still running %s after the second Ctrl+C; stderr:\n%s", testenv.WaitLimit, stderr())
	}
	assert.Equal(t, 130, cmd.ProcessState.ExitCode(), "stderr:\n%s", stderr())
	assert.Equal(t, 1, strings.Count(stderr(), "Ctrl+C again stops it now"), "the notice is printed once")

	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	require.NoError(t, checkStoppedRun(dir, []string{"user_stopped"}))
	groups := startedGroups(filepath.Join(dir, "timeline.jsonl"))
	require.NotEmpty(t, groups, "the timeline records the agent's group")
	for _, pg := range groups {
		assert.Empty(t, groupMembers(pg), "process group %d outlived the run", pg)
	}
}
