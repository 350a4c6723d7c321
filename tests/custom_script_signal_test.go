package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/tests/testenv"
)

// TestCtrlCDuringCustomScript: a custom_script is a process of the run like
// the agent. Ctrl+C while a long one runs (one that even ignores SIGTERM)
// stops the run as user_stopped (130) within kill_grace of the signal,
// rather than after the script's own timeout, and leaves none of the script
// behind.
func TestCtrlCDuringCustomScript(t *testing.T) {
	repo := newRepo(t)
	const grace = 2 * time.Second
	files := map[string]string{
		"runr.yaml": "stop:\n  conditions:\n    - type: custom_script\n      script: ./slow.sh\n      timeout: 300s\n",
		// The pid goes to a file outside the tree once the script ignores
		// SIGTERM: that is its ready line.
		"slow.sh": "#!/bin/sh\ntrap '' TERM\necho $$ > .git/script.tmp\nmv .git/script.tmp .git/script.pid\nwhile :; do sleep 1; done\n",
	}
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(repo, name), []byte(body), 0o755))
	}
	for _, a := range [][]string{{"add", "."}, {"commit", "-q", "-m", "a slow check"}} {
		cmd := exec.Command("git", a...)
		cmd.Dir = repo
		cmd.Env = testEnv(repo)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", a, out)
	}

	p := startRunr(t, repo, []string{"RUNR_AGENT_KILL_GRACE=" + grace.String()}, "run", "--prompt", "work", "--",
		"fakeagent", "--do", "write wip.txt partial")
	pidFile := filepath.Join(repo, ".git", "script.pid")
	var pid int
	testenv.WaitFor(t, "the custom_script to write its pid file", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			select {
			case <-p.done:
				t.Fatalf("runr exited %d before the script ran\nstdout: %s\nstderr: %s", p.exitCode, &p.stdout, &p.stderr)
			default:
			}
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })

	signalled := time.Now()
	p.signal(t, syscall.SIGINT)
	assert.Equal(t, 130, p.wait(t, 60*time.Second), "stderr: %s", &p.stderr)
	took := time.Since(signalled)
	// kill_grace, and room for a loaded machine to write the stop.
	assert.Less(t, took, grace+5*time.Second, "the run waited for the script instead of stopping it")

	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	require.NoError(t, checkStoppedRun(dir, []string{"user_stopped"}))
	assert.Empty(t, groupMembers(pid), "the script's group outlived the run")
}
