package tests

import (
	"fmt"
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

// TestLogsFollowStreamsALiveRun: `runr logs --follow` on a live run prints
// each tick as it happens and exits, 0, once the run stops.
func TestLogsFollowStreamsALiveRun(t *testing.T) {
	repo := newRepo(t)
	gate := filepath.Join(repo, ".git", "go-on")
	p := startRunr(t, repo, nil, "run", "--prompt", "write a.txt", "--verify", "test -f a.txt", "--",
		"fakeagent", "--do", "ready; wait-for "+gate+"; write a.txt hi; status done")
	p.waitReady(t, 1)

	outPath := filepath.Join(t.TempDir(), "follow.out")
	out, err := os.Create(outPath)
	require.NoError(t, err)
	defer out.Close()
	follow := exec.Command(filepath.Join(binDir, "runr"), "logs", "latest", "--follow")
	follow.Dir, follow.Env, follow.Stdout, follow.Stderr = repo, testEnv(repo), out, out
	require.NoError(t, follow.Start())
	done := make(chan error, 1)
	go func() { done <- follow.Wait() }()

	// The agent's call is under way: its tick is shown before it ends.
	testenv.WaitFor(t, "the live tick in the follow output", testenv.FileContains(outPath, "tick 1 · milestone 1/1"))
	b, err := os.ReadFile(outPath)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "stop:", "the run has not stopped yet")

	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	assert.Equal(t, 0, p.wait(t, 60*time.Second), "stderr: %s", &p.stderr)
	select {
	case err := <-done:
		require.NoError(t, err, "runr logs --follow exits 0")
	case <-time.After(30 * time.Second):
		follow.Process.Kill()
		t.Fatal("runr logs --follow did not exit after the run stopped")
	}
	b, err = os.ReadFile(outPath)
	require.NoError(t, err)
	text := string(b)
	for _, want := range []string{"run started · task --prompt · 1 milestone", "agent exited 0", "tick 2 · milestone 1/1", "verify exited 0", "attempt approved", "milestone 1 approved", "stop: complete (exit 0)"} {
		assert.Contains(t, text, want)
	}
	assert.Equal(t, 1, strings.Count(text, "tick 1 ·"), "each tick is printed once:\n%s", text)
}

// TestLogsOfACrashedRun: a run whose runr was killed has no stop; `runr
// logs` shows what was recorded and says the run crashed.
func TestLogsOfACrashedRun(t *testing.T) {
	repo := newRepo(t)
	p := startRunr(t, repo, nil, "run", "--prompt", "work", "--", "fakeagent", "--do", "ready; hang")
	p.waitReady(t, 1)
	pid := pidAfter(t, p.ready, "FAKEAGENT READY pid=")
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
	p.signal(t, syscall.SIGKILL)
	p.wait(t, 30*time.Second)

	code, stdout, stderr := runrCmd(t, repo, "logs", "latest")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stdout, "tick 1 · milestone 1/1")
	assert.Contains(t, stdout, "it crashed or was killed")
	assert.NotContains(t, stdout, "stop:")

	// --follow on it ends at once too.
	code, stdout, _ = runrCmd(t, repo, "logs", "latest", "--follow")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "it crashed or was killed")
}

// TestLogsShowACommandAgentsOutput: a command agent's output is all there
// is to show of what it did, so `runr logs` shows the end of each call's,
// its control characters made visible, however much it printed. A Claude
// Code run's stream of events is shown as its tool calls, not dumped.
func TestLogsShowACommandAgentsOutput(t *testing.T) {
	repo := newRepo(t)
	code, _, stderr := runrCmd(t, repo, "run", "--run-id", "said", "--prompt", "say hello", "--verify", "true", "--",
		"sh", "-c", `echo 'hello from the agent'; printf 'in \033[31mred\033[0m\n'; echo 'RUNR_STATUS: done'`)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	code, stdout, stderr := runrCmd(t, repo, "logs", "said")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stdout, "  agent exited 0 after")
	assert.Contains(t, stdout, "  | hello from the agent\n")
	assert.Contains(t, stdout, `  | in \x1b[31mred\x1b[0m`+"\n")
	assert.NotContains(t, stdout, "\x1b", "the escape is shown, not obeyed")
	assert.Less(t, strings.Index(stdout, "hello from the agent"), strings.Index(stdout, "stop: complete"))

	code, _, stderr = runrCmd(t, repo, "run", "--run-id", "chatty", "--prompt", "say a lot", "--verify", "true", "--",
		"sh", "-c", `i=1; while [ $i -le 10000 ]; do echo "chatter $i"; i=$((i+1)); done; echo 'RUNR_STATUS: done'`)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	code, stdout, stderr = runrCmd(t, repo, "logs", "chatty")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stdout, "  | chatter 9999\n")
	assert.NotContains(t, stdout, "chatter 9000\n", "only the end of the output is shown")
	assert.Contains(t, stdout, "earlier output not shown: runr logs chatty --tick 1 --raw")
	assert.Less(t, strings.Count(stdout, "\n"), 60, "the transcript stays short:\n%s", stdout)

	claude := newRepo(t)
	r := runClaude(t, claude, []string{"IS_SANDBOX=1", "FAKEAGENT_REPLAY=" + recording(t, "tool_write")}, "--prompt", "write hello.txt", "--verify", "true")
	require.Equal(t, 0, r.exit, "stderr: %s", r.stderr)
	code, stdout, stderr = runrCmd(t, claude, "logs", "latest")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "  > Write /home/dev/repo/hello.txt\n")
	assert.NotContains(t, stdout, `"type"`, "Claude Code's stream of events is not dumped")
}

// TestLogCapKeepsHeadAndTail: with agent.log_cap set small, an agent's and a
// verify command's floods leave logs of the cap's size that keep the
// output's head and tail and a line that counts the bytes left out; the
// timeline's process_ended and the transcript count them too. (The 1 GB
// measurement with the default cap is in make bench.)
func TestLogCapKeepsHeadAndTail(t *testing.T) {
	const logCap = 4 << 10
	repo := newRepo(t)
	flood := `echo HEAD-START; head -c 100000 /dev/zero | tr '\0' x; echo; echo TAIL-END`
	code, stdout, stderr := resRunr(t, repo, []string{"RUNR_AGENT_LOG_CAP=4KiB"}, "run", "--prompt", "flood", "--quiet",
		"--verify", flood, "--", "sh", "-c", flood+"; echo RUNR_STATUS: done")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	dir, err := latestRunDir(repo)
	require.NoError(t, err)

	omitted := map[string]float64{}
	for _, ev := range timelineEvents(t, dir) {
		if ev["type"] == "process_ended" {
			d := ev["data"].(map[string]any)
			lo, _ := d["log_omitted"].(float64)
			omitted[ev["phase"].(string)] = lo
			assert.Equal(t, d["bytes"].(float64)-logCap, lo, "%s: every byte past the cap is left out", ev["phase"])
		}
	}
	for _, tc := range []struct{ phase, end string }{
		{"implement", "TAIL-END\nRUNR_STATUS: done\n"},
		{"verify", "TAIL-END\n"},
	} {
		b, err := os.ReadFile(filepath.Join(dir, "logs", "tick-0001-"+tc.phase+".log"))
		if tc.phase == "verify" {
			b, err = os.ReadFile(filepath.Join(dir, "logs", "tick-0002-verify.log"))
		}
		require.NoError(t, err, tc.phase)
		log := string(b)
		require.Greater(t, omitted[tc.phase], 90000.0, tc.phase)
		note := fmt.Sprintf("\n[runr: %d bytes of output left out here; the log keeps the first %d and the last %d bytes of ",
			int64(omitted[tc.phase]), logCap/2, logCap/2)
		i := strings.Index(log, note)
		require.GreaterOrEqual(t, i, 0, "%s: the note in the log:\n%.300s", tc.phase, log)
		_, rest, _ := strings.Cut(log[i+1:], "]\n")
		assert.True(t, strings.HasSuffix(log[:i], strings.Repeat("x", 100)), tc.phase)
		assert.Contains(t, log[:i], "HEAD-START\n", "%s: the head", tc.phase)
		assert.True(t, strings.HasSuffix(rest, tc.end), "%s: the tail", tc.phase)
		assert.Len(t, rest, logCap/2, "%s: the tail's size", tc.phase)
		assert.LessOrEqual(t, len(b), logCap+len(note)+200, tc.phase)
	}
	code, logs, _ := resRunr(t, repo, nil, "logs")
	require.Equal(t, 0, code)
	assert.Contains(t, logs, fmt.Sprintf("%d of its", int64(omitted["implement"])))
	assert.Contains(t, logs, "bytes of output left out of its log (agent.log_cap)")
}
