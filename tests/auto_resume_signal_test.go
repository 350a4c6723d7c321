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
)

// A signal during a call ends a run under --auto-resume at once, with its
// code: the stop it causes (terminated for SIGTERM, which is itself
// auto-resumable) is not waited on and continued. An evicted pod gets one
// SIGTERM and must exit within its grace period.
func TestAutoResumeSignalDuringACallEndsTheRun(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		code string
		exit int
	}{
		{syscall.SIGTERM, "terminated", 143},
		{syscall.SIGHUP, "terminated", 143},
		{syscall.SIGINT, "user_stopped", 130},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t)
			calls := filepath.Join(t.TempDir(), "calls.txt")
			// A short backoff: were the stop continued, the agent would be
			// started again well before the bound below.
			p := startRunr(t, repo, []string{"RUNR_AGENT_KILL_GRACE=2s", `RUNR_RESUME_BACKOFF=["1s"]`},
				"run", "--prompt", "work", "--auto-resume", "--",
				"fakeagent", "--do", "touch-count "+calls+"; ready; sleep 60s")
			p.waitReady(t, 1)
			p.signal(t, tc.sig)
			assert.Equal(t, tc.exit, p.wait(t, 20*time.Second), "one signal ends the run\nstderr: %s", &p.stderr)

			st := readState(t, repo)
			assert.Equal(t, tc.code, stopCode(st))
			assert.Equal(t, "stopped", st["run_status"])
			b, err := os.ReadFile(calls)
			require.NoError(t, err)
			assert.Len(t, strings.Fields(string(b)), 1, "the agent was started once: %q", b)
			ar, _ := st["auto_resume"].(map[string]any)
			assert.EqualValues(t, 0, ar["count"], "no automatic resume: %v", ar)
			assert.NotContains(t, p.stderr.String(), "auto-resume in", "no wait is announced")
		})
	}
}

// A run that a SIGTERM ended (an evicted pod) is continued by the next
// `runr resume --auto-resume`: terminated stays auto-resumable, and only
// the invocation that got the signal ends on it.
func TestAutoResumeContinuesARunASignalEndedBefore(t *testing.T) {
	repo := newRepo(t)
	p := startRunr(t, repo, []string{"RUNR_AGENT_KILL_GRACE=2s", `RUNR_RESUME_BACKOFF=["1s"]`},
		"run", "--prompt", "work", "--auto-resume", "--",
		"fakeagent", "--do", "#1: ready; sleep 60s", "--do", "#2+: write done.txt done; status done")
	p.waitReady(t, 1)
	p.signal(t, syscall.SIGTERM)
	require.Equal(t, 143, p.wait(t, 20*time.Second), "stderr: %s", &p.stderr)
	require.Equal(t, "terminated", stopCode(readState(t, repo)))

	code, stdout, stderr := runrCmd(t, repo, "resume", "latest", "--auto-resume")
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Equal(t, "complete", stopCode(readState(t, repo)))
	assert.FileExists(t, filepath.Join(repo, "done.txt"))
}
