package tests

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostile is what an agent prints to take over the terminal of whoever
// reads its output: a window title, a screen clear, a C1 CSI, a bidi override.
const hostile = "\x1b]0;pwned\x07\x1b[2J\u009b31m\u202e"

// runrEnv is runrCmd with more environment.
func runrEnv(t *testing.T, repo string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "runr"), args...)
	cmd.Dir = repo
	cmd.Env = append(testEnv(repo), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("runr %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// TestAgentTextIsPrintedVisibly runs an agent that fails with escape
// sequences in its error output, on a task whose goal holds some too, and
// checks that no output of runr (summary, doctor, status, report.md,
// stop.json, the JSON outputs) carries a control character a terminal would
// act on, while the text itself is still shown, made visible.
func TestAgentTextIsPrintedVisibly(t *testing.T) {
	repo := newRepo(t)
	agent := filepath.Join(t.TempDir(), "agent.sh")
	require.NoError(t, os.WriteFile(agent, []byte("#!/bin/sh\nprintf '%s boom\\n' \"$HOSTILE\" >&2\nexit 3\n"), 0o755))
	task := "- [ ] paint it \x1b[31mred\x1b[0m\n"

	outputs := map[string]string{}
	code, stdout, stderr := runrEnv(t, repo, []string{"HOSTILE=" + hostile}, "run", "--max-iterations", "1", "--prompt", task, "--", agent)
	require.NotEqual(t, 0, code, "the agent fails: %s", stderr)
	outputs["run stdout"], outputs["run stderr"] = stdout, stderr

	for _, args := range [][]string{
		{"doctor", "latest"}, {"doctor", "latest", "--json"},
		{"status"}, {"status", "latest"}, {"status", "latest", "--json"}, {"status", "--json"},
	} {
		code, stdout, stderr := runrCmd(t, repo, args...)
		require.Equal(t, 0, code, "runr %v: %s", args, stderr)
		outputs["runr "+strings.Join(args, " ")] = stdout + stderr
	}
	runs, err := filepath.Glob(filepath.Join(repo, ".git", "runr", "runs", "*"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	for _, name := range []string{"report.md", "stop.json"} {
		b, err := os.ReadFile(filepath.Join(runs[0], name))
		require.NoError(t, err)
		outputs[name] = string(b)
	}

	for name, out := range outputs {
		for _, bad := range []string{"\x1b", "\x07", "\u009b", "\u202e"} {
			assert.NotContains(t, out, bad, "%s prints %q raw:\n%s", name, bad, out)
		}
	}
	// The text is shown, not dropped.
	assert.Contains(t, outputs["runr doctor latest"], `\x1b]0;pwned\x07\x1b[2J\u009b31m\u202e boom`)
	assert.Contains(t, outputs["runr doctor latest"], `paint it \x1b[31mred\x1b[0m`)
	assert.Contains(t, outputs["report.md"], `\x1b]0;pwned\x07\x1b[2J\u009b31m\u202e boom`)
	assert.Contains(t, outputs["runr status latest"], `paint it \x1b[31mred\x1b[0m`)
	// The JSON still decodes to the agent's exact text.
	var stop struct {
		Evidence struct {
			LastFailure struct{ Tail string } `json:"last_failure"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(outputs["stop.json"]), &stop))
	assert.Contains(t, stop.Evidence.LastFailure.Tail, hostile+" boom")
}

// TestErrorMessagesAreVisible: an error that quotes a name it was given
// shows its control characters made visible.
func TestErrorMessagesAreVisible(t *testing.T) {
	repo := newRepo(t)
	code, _, stderr := runrCmd(t, repo, "run", "--task", "no\x1b]0;pwned\x07such.md", "--", "fakeagent")
	assert.Equal(t, 64, code, stderr)
	assert.Contains(t, stderr, `no\x1b]0;pwned\x07such.md`)
	assert.NotContains(t, stderr, "\x1b")
	assert.NotContains(t, stderr, "\x07")
}

// TestPlantedStopCodeIsPrintedVisibly: the store lies where an agent can
// write; a stop code it planted in state.json reaches the terminal with
// its control characters made visible.
func TestPlantedStopCodeIsPrintedVisibly(t *testing.T) {
	repo := newRepo(t)
	code, _, stderr := runrCmd(t, repo, "run", "--max-iterations", "1", "--prompt", "work", "--", "fakeagent", "--do", "status done")
	require.Equal(t, 0, code, stderr)
	runs, err := filepath.Glob(filepath.Join(repo, ".git", "runr", "runs", "*", "state.json"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	b, err := os.ReadFile(runs[0])
	require.NoError(t, err)
	planted := strings.Replace(string(b), `"code": "complete"`, `"code": "complete\u001b]0;pwned\u0007"`, 1)
	require.NotEqual(t, string(b), planted, "the stop code is in state.json")
	require.NoError(t, os.WriteFile(runs[0], []byte(planted), 0o644))
	for _, args := range [][]string{{"status"}, {"status", "latest"}} {
		_, stdout, stderr := runrCmd(t, repo, args...)
		assert.NotContains(t, stdout+stderr, "\x1b", "runr %v prints the planted code raw", args)
		assert.NotContains(t, stdout+stderr, "\x07", "runr %v prints the planted code raw", args)
	}
}
