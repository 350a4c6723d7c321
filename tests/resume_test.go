package tests

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/tests/testenv"
)

// resumeRepo makes a git repository with files committed, and returns it.
func resumeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "--allow-empty", "-m", "initial"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = testEnv(filepath.Dir(dir))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	return dir
}

// resRunrCmd is runr in dir, in its own process group, so that a signal sent
// to it reaches runr alone.
func resRunrCmd(dir string, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.Command(filepath.Join(binDir, "runr"), args...)
	cmd.Dir = dir
	cmd.Env = append(testEnv(filepath.Dir(dir)), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return cmd, &stdout, &stderr
}

// runr runs runr to its end and returns its exit code and output.
func resRunr(t *testing.T, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd, stdout, stderr := resRunrCmd(dir, env, args...)
	return resExit(t, cmd.Run()), stdout.String(), stderr.String()
}

func resExit(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	t.Fatalf("runr did not run: %v", err)
	return -1
}

// runDir is the directory of the only run of the repository at dir.
func resRunDir(t *testing.T, dir string) string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(dir, ".git", "runr", "runs", "*"))
	require.NoError(t, err)
	require.Len(t, dirs, 1, "runs in %s", dir)
	return dirs[0]
}

// resRunState is the parts of state.json these tests look at.
type resRunState struct {
	RunStatus  string `json:"run_status"`
	ElapsedMS  int64  `json:"elapsed_ms"`
	StopReason *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"stop_reason"`
	AgentProcess *struct {
		PID, PGID int
	} `json:"agent_process"`
	AutoResume struct {
		Count int `json:"count"`
	} `json:"auto_resume"`
	Milestones []struct {
		Status   string `json:"status"`
		Attempts []struct {
			Outcome string `json:"outcome"`
		} `json:"attempts"`
	} `json:"milestones"`
}

func resReadState(t *testing.T, dir string) resRunState {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(resRunDir(t, dir), "state.json"))
	require.NoError(t, err)
	var st resRunState
	require.NoError(t, json.Unmarshal(data, &st))
	return st
}

// resTimeline lists the event types of the run's timeline, in order.
func resTimeline(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(resRunDir(t, dir), "timeline.jsonl"))
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev struct{ Type string }
		require.NoError(t, json.Unmarshal([]byte(line), &ev), "timeline line %q", line)
		out = append(out, ev.Type)
	}
	return out
}

// resWaitFor is testenv.WaitFor.
func resWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, what, cond)
}

// resFileContains is testenv.FileContains.
func resFileContains(path, sub string) func() bool { return testenv.FileContains(path, sub) }

// resMilestonesSeen are the RUNR_MILESTONE values of every agent call, in
// tick order, from the implement logs (the agent prints its environment).
func resMilestonesSeen(t *testing.T, dir string) []int {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(resRunDir(t, dir), "logs", "tick-*-implement.log"))
	require.NoError(t, err)
	sort.Strings(logs)
	re := regexp.MustCompile(`(?m)^RUNR_MILESTONE=(\d+)$`)
	var out []int
	for _, l := range logs {
		b, err := os.ReadFile(l)
		require.NoError(t, err)
		m := re.FindSubmatch(b)
		require.NotNil(t, m, "no RUNR_MILESTONE in %s", l)
		n, _ := strconv.Atoi(string(m[1]))
		out = append(out, n)
	}
	return out
}

func TestResumeAfterTimeoutContinuesAtTheMilestone(t *testing.T) {
	dir := resumeRepo(t, map[string]string{"TASK.md": "- [ ] one\n- [ ] two\n- [ ] three\n"})
	agent := []string{"--", "fakeagent", "--do", "env", "--do", "#2: sleep 30s", "--do", "status done"}

	code, _, stderr := resRunr(t, dir, nil, append([]string{"run", "--task", "TASK.md", "--time", "2s"}, agent...)...)
	require.Equal(t, 124, code, stderr)
	first := resReadState(t, dir)
	require.Equal(t, "timeout", first.StopReason.Code)
	require.Equal(t, "approved", first.Milestones[0].Status)
	require.GreaterOrEqual(t, first.ElapsedMS, int64(2000))

	code, stdout, stderr := resRunr(t, dir, nil, "resume", "latest", "--time", "5m")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	after := resReadState(t, dir)
	assert.Equal(t, "completed", after.RunStatus)
	assert.Equal(t, "complete", after.StopReason.Code)
	// Milestone 1 ran once; the resume started at milestone 2.
	assert.Equal(t, []int{1, 2, 2, 3}, resMilestonesSeen(t, dir))
	assert.Len(t, after.Milestones[0].Attempts, 1)
	// elapsed_ms is cumulative over both invocations.
	assert.Greater(t, after.ElapsedMS, first.ElapsedMS)
	assert.Contains(t, resTimeline(t, dir), "run_resumed")
}

func TestResumeRecoversACrashedRun(t *testing.T) {
	dir := resumeRepo(t, map[string]string{"TASK.md": "Do it.\n"})
	ready := filepath.Join(dir, "..", filepath.Base(dir)+"-ready")
	env := []string{"FAKEAGENT_READY_FILE=" + ready}
	cmd, _, stderr := resRunrCmd(dir, env, "run", "--task", "TASK.md", "--", "fakeagent", "--do", "#1: ready; hang", "--do", "status done")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	resWaitFor(t, "the agent to be ready", resFileContains(ready, "READY"))
	resWaitFor(t, "state.json to record the agent", func() bool {
		st := resReadState(t, dir)
		return st.AgentProcess != nil && st.AgentProcess.PID > 0
	})
	agent := resReadState(t, dir).AgentProcess
	t.Cleanup(func() { syscall.Kill(-agent.PGID, syscall.SIGKILL) })

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	require.Equal(t, 137, resExit(t, cmd.Wait()), stderr.String())
	require.True(t, testenv.ProcessAlive(agent.PID), "the agent outlives the killed runr")

	code, stdout, _ := resRunr(t, dir, nil, "status", "latest", "--json")
	require.Equal(t, 0, code)
	var view struct{ Status string }
	require.NoError(t, json.Unmarshal([]byte(stdout), &view))
	assert.Equal(t, "crashed", view.Status)

	code, stdout, errOut := resRunr(t, dir, nil, "resume", "latest")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	assert.Contains(t, errOut, "stopped the agent process group")
	assert.False(t, testenv.ProcessAlive(agent.PID), "the orphaned agent %d was stopped", agent.PID)
	st := resReadState(t, dir)
	assert.Equal(t, "complete", st.StopReason.Code)
	assert.Equal(t, "stopped", st.Milestones[0].Attempts[0].Outcome, "the attempt the crash cut short")
	types := resTimeline(t, dir)
	assert.Contains(t, types, "crash_detected")
	assert.Contains(t, types, "crash_recovered")
}

func TestResumeOfALiveRunIsRefused(t *testing.T) {
	dir := resumeRepo(t, map[string]string{"TASK.md": "Do it.\n"})
	work := filepath.Dir(dir)
	goFile := filepath.Join(work, filepath.Base(dir)+"-go")
	ready := filepath.Join(work, filepath.Base(dir)+"-ready")
	code, _, stderr := resRunr(t, dir, nil, "run", "--task", "TASK.md", "--max-ticks", "1", "--",
		"fakeagent", "--do", "#1: print working", "--do", "#2: ready; wait-for "+goFile+"; status done")
	require.Equal(t, 125, code, stderr)

	first, firstOut, firstErr := resRunrCmd(dir, []string{"FAKEAGENT_READY_FILE=" + ready}, "resume", "latest", "--max-ticks", "5")
	require.NoError(t, first.Start())
	t.Cleanup(func() { syscall.Kill(-first.Process.Pid, syscall.SIGKILL) })
	resWaitFor(t, "the first resume's agent", resFileContains(ready, "READY"))
	statePath := filepath.Join(resRunDir(t, dir), "state.json")
	before, err := os.ReadFile(statePath)
	require.NoError(t, err)

	code, _, errOut := resRunr(t, dir, nil, "resume", "latest", "--max-ticks", "5")
	assert.Equal(t, 75, code, errOut)
	assert.Contains(t, errOut, "is held by runr process "+strconv.Itoa(first.Process.Pid))
	afterRefusal, err := os.ReadFile(statePath)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(afterRefusal), "the refused resume left state.json alone")

	require.NoError(t, os.WriteFile(goFile, nil, 0o644))
	assert.Equal(t, 0, resExit(t, first.Wait()), "%s\n%s", firstOut, firstErr)
	assert.Equal(t, "complete", resReadState(t, dir).StopReason.Code)
}

func TestAutoResumeWaitStopsOnSignals(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		exit int
		code string
	}{
		{syscall.SIGINT, 130, "user_stopped"},
		{syscall.SIGTERM, 143, "terminated"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			dir := resumeRepo(t, map[string]string{
				"TASK.md":   "Do it.\n",
				"runr.yaml": "agent:\n  idle_timeout: 1s\n  kill_grace: 1s\nresume:\n  backoff: [1m]\n",
			})
			cmd, stdout, stderr := resRunrCmd(dir, nil, "run", "--auto-resume", "--task", "TASK.md", "--", "fakeagent", "--do", "#1: hang", "--do", "status done")
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
			resWaitFor(t, "the auto-resume wait", func() bool { return resHasEvent(dir, "auto_resume") })
			require.NoError(t, cmd.Process.Signal(tc.sig))
			assert.Equal(t, tc.exit, resExit(t, cmd.Wait()), "%s\n%s", stdout, stderr)
			st := resReadState(t, dir)
			assert.Equal(t, tc.code, st.StopReason.Code)
			assert.Contains(t, st.StopReason.Message, "during the auto-resume wait")
			assert.Equal(t, 0, st.AutoResume.Count, "no resume happened")
		})
	}
}

// resHasEvent reports whether the only run of dir has an event of type typ.
func resHasEvent(dir, typ string) bool {
	paths, _ := filepath.Glob(filepath.Join(dir, ".git", "runr", "runs", "*", "timeline.jsonl"))
	for _, p := range paths {
		if resFileContains(p, `"type":"`+typ+`"`)() {
			return true
		}
	}
	return false
}
