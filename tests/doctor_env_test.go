package tests

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/tests/testenv"
)

// TestDoctorFindsTheStaleLockOfAKilledRun kills runr with SIGKILL while its
// agent works: `runr doctor` then fails the stale-lock and dead-claim checks
// (69) and names the resume; `runr doctor latest` shows the run as crashed
// with commands that run as printed; after they ran, every check passes.
func TestDoctorFindsTheStaleLockOfAKilledRun(t *testing.T) {
	repo := newRepo(t)
	writeCommitted(t, repo, map[string]string{"runr.yaml": "agent:\n  command: [fakeagent, --do, \"#1: ready; hang\", --do, \"#2+: write a.txt done; status done\"]\n"})
	p := startRunr(t, repo, nil, "run", "--quiet", "--prompt", "work")
	p.waitReady(t, 1)
	// The agent may be ready before runr has saved it in state.json: a kill
	// during that save would leave its temp file behind for doctor to flag.
	testenv.WaitFor(t, "state.json to record the agent", func() bool { return readState(t, repo)["agent_process"] != nil })
	p.signal(t, syscall.SIGKILL)
	p.wait(t, 30*time.Second)
	// The agent's group outlives runr: end it, as a person would find it.
	killRecordedGroups(repo)

	runDir, err := latestRunDir(repo)
	require.NoError(t, err)
	id := filepath.Base(runDir)

	code, out, errOut := runrCmd(t, repo, "doctor")
	require.Equal(t, 69, code, "stdout: %s\nstderr: %s", out, errOut)
	assert.Contains(t, out, "FAIL stale locks: run "+id+" says running but no runr process holds it (crashed); continue it with `runr resume "+id+"`")
	assert.Contains(t, out, "FAIL dead claims: ")
	assert.Contains(t, out, "run "+id+" is not live; remove the file")
	assert.Contains(t, out, "ok   config valid")

	code, out, _ = runrCmd(t, repo, "doctor", "latest")
	require.Equal(t, 0, code, "doctor diagnoses a crashed run: %s", out)
	assert.Contains(t, out, "Run "+id+" (crashed)")
	assert.Contains(t, out, "runr ended without recording one")
	actions := doctorActions(t, repo)
	require.Equal(t, []string{"runr status " + id, "runr resume " + id}, actions)
	for _, a := range actions {
		code, out := shellIn(t, repo, a)
		require.Equal(t, 0, code, "%s\n%s", a, out)
	}
	got, _ := stopOf(t, repo)
	assert.Equal(t, "complete", got)

	code, out, _ = runrCmd(t, repo, "doctor")
	assert.Equal(t, 0, code, "after the resume nothing is stale: %s", out)
	assert.NotContains(t, out, "FAIL")
}

// TestDoctorReadOnlyRunStore makes the run store's directories read-only.
// Root writes anyway, so the test needs an ordinary user; the store under a
// file (doctor_env.txtar) covers the check for root.
func TestDoctorReadOnlyRunStore(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can write to read-only directories")
	}
	repo := newRepo(t)
	writeCommitted(t, repo, map[string]string{"runr.yaml": "agent:\n  command: [fakeagent]\n"})
	home := filepath.Join(t.TempDir(), "store")
	for _, d := range []string{"runs", "active", "worktrees"} {
		require.NoError(t, os.MkdirAll(filepath.Join(home, d), 0o755))
	}
	require.NoError(t, os.Chmod(filepath.Join(home, "runs"), 0o555))
	t.Cleanup(func() { os.Chmod(filepath.Join(home, "runs"), 0o755) })

	code, out, _ := runrCmd(t, repo, "doctor", "--home", home)
	assert.Equal(t, 69, code, out)
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "run store writable") {
			line = l
		}
	}
	assert.Contains(t, line, "FAIL run store writable: run store "+home+" is not writable")
}
