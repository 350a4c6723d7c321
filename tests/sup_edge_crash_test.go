package tests

import (
	"os"
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

// supAgentScript writes a shell agent into a fresh directory and returns
// the PATH that finds it first.
func supAgentScript(t *testing.T, name, body string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bin")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755))
	return "PATH=" + dir + string(os.PathListSeparator) + binDir + string(os.PathListSeparator) + os.Getenv("PATH")
}

func supReadPID(t *testing.T, file string) int {
	t.Helper()
	var pid int
	testenv.WaitFor(t, "a pid in "+file, func() bool {
		b, _ := os.ReadFile(file)
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		pid = n
		return err == nil && n > 0
	})
	return pid
}

// A resume whose own start fails (here its timeline cannot be opened: a
// directory stands in its place, which is state_corrupt) reports that
// failure, in state.json, stop.json and its exit code, not the stop it set
// out to resume from.
func TestSupEdgeResumeFailureIsItsOwnStop(t *testing.T) {
	repo := newRepo(t)
	p := startRunr(t, repo, nil, "run", "--prompt", "work", "--", "fakeagent", "--do", "ready; hang")
	p.waitReady(t, 1)
	p.signal(t, syscall.SIGTERM)
	require.Equal(t, 143, p.wait(t, 60*time.Second), "stderr: %s", &p.stderr)
	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	timeline := filepath.Join(dir, "timeline.jsonl")
	require.NoError(t, os.Remove(timeline))
	require.NoError(t, os.Mkdir(timeline, 0o755))

	code, stdout, stderr := resRunr(t, repo, nil, "resume", "latest")
	assert.Equal(t, 65, code, "%s\n%s", stdout, stderr)
	assert.Contains(t, stdout+stderr, timeline+" is a directory")
	st := readState(t, repo)
	assert.Equal(t, "state_corrupt", stopCode(st))
	b, err := os.ReadFile(filepath.Join(dir, "stop.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"state_corrupt"`)
}

// A call's background child ("sleep 300 &") does not outlive the call,
// though the call's main process exited normally.
func TestSupEdgeBackgroundChildOfAShellAgentIsStopped(t *testing.T) {
	dir := resumeRepo(t, map[string]string{"TASK.md": "Do it.\n"})
	bg := filepath.Join(t.TempDir(), "bg.pid")
	path := supAgentScript(t, "sup-bg-agent", "sleep 300 &\necho $! > "+bg+"\necho done > out.txt\necho 'RUNR_STATUS: done'\n")
	code, stdout, stderr := resRunr(t, dir, []string{path}, "run", "--task", "TASK.md", "--", "sup-bg-agent")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	pid := supReadPID(t, bg)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	assert.False(t, testenv.ProcessAlive(pid), "the agent's background sleep %d outlived runr", pid)
}
