package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPruneNeverRemovesALiveRun: `runr prune --older-than 0s` removes
// every stopped run but never one a runr process holds, even while its
// agent works; once that runr is killed the run is crashed, and goes only
// when the age covers its last update.
func TestPruneNeverRemovesALiveRun(t *testing.T) {
	repo := newRepo(t)
	code, stdout, stderr := runrOut(t, repo, "run", "--json", "--quiet", "--prompt", "work", "--verify", "true", "--", "fakeagent", "--do", "write a.txt 1")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	stopped := regexp.MustCompile(`"run_id": "([^"]+)"`).FindStringSubmatch(stdout)[1]

	p := startRunr(t, repo, []string{"RUNR_AGENT_KILL_GRACE=1s"}, "run", "--allow-dirty", "--prompt", "more", "--", "fakeagent", "--do", "ready; hang")
	p.waitReady(t, 1)
	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	live := filepath.Base(dir)
	require.NotEqual(t, stopped, live)

	code, stdout, stderr = runrOut(t, repo, "prune", "--older-than", "0s", "--dry-run")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Regexp(t, fmt.Sprintf(`(?m)^would remove +%s  completed, \S+ ago$`, stopped), stdout)
	assert.Regexp(t, fmt.Sprintf(`(?m)^would keep +%s  running: live \(runr process %d\)$`, live, p.cmd.Process.Pid), stdout)

	code, stdout, stderr = runrOut(t, repo, "prune", "--older-than", "0s")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Regexp(t, fmt.Sprintf(`(?m)^removed +%s  completed, \S+ ago$`, stopped), stdout)
	assert.Regexp(t, fmt.Sprintf(`(?m)^kept +%s  running: live \(runr process %d\)$`, live, p.cmd.Process.Pid), stdout)
	assert.Contains(t, stdout, "Removed 1 run, kept 1.")
	assert.NoDirExists(t, filepath.Join(repo, ".git", "runr", "runs", stopped))
	assert.FileExists(t, filepath.Join(dir, "state.json"))
	select {
	case <-p.done:
		t.Fatalf("the live run ended during prune (exit %d): %s", p.exitCode, &p.stderr)
	default:
	}

	// runr dies; its agent is stopped as a crash leaves it to be.
	p.signal(t, syscall.SIGKILL)
	p.wait(t, 30*time.Second)
	killRecordedGroups(repo)
	code, stdout, stderr = runrOut(t, repo, "prune", "--older-than", "1h")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Regexp(t, fmt.Sprintf(`(?m)^kept +%s  crashed: last updated \S+ ago, within 1h$`, live), stdout)
	assert.FileExists(t, filepath.Join(dir, "state.json"))

	code, stdout, stderr = runrOut(t, repo, "prune", "--older-than", "0s", "--json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stdout, `"status": "crashed"`)
	assert.Contains(t, stdout, `"action": "removed"`)
	_, err = os.Stat(dir)
	assert.ErrorIs(t, err, os.ErrNotExist, "the crashed run is gone")
	code, stdout, _ = runrOut(t, repo, "status", "--json")
	require.Equal(t, 0, code)
	assert.Equal(t, "[]\n", stdout)
}
