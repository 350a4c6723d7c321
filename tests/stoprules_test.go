package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runrCmd runs runr to the end in repo and returns its exit code and
// output.
func runrCmd(t *testing.T, repo string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "runr"), args...)
	cmd.Dir = repo
	cmd.Env = testEnv(repo)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("runr %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// writeCommitted writes files into repo and commits them, so that the run
// starts on a clean tree.
func writeCommitted(t *testing.T, repo string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644))
	}
	for _, a := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "setup"}} {
		cmd := exec.Command("git", a...)
		cmd.Dir = repo
		cmd.Env = testEnv(repo)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", a, out)
	}
}

// conditionsOf maps each entry of state.json's conditions to its message.
func conditionsOf(t *testing.T, st map[string]any) map[string]string {
	t.Helper()
	list, ok := st["conditions"].([]any)
	require.True(t, ok, "state.json has no conditions list: %v", st["conditions"])
	out := map[string]string{}
	for _, c := range list {
		m := c.(map[string]any)
		out[m["name"].(string)] = m["message"].(string)
	}
	return out
}

func attemptOutcomes(st map[string]any, milestone int) []string {
	ms, _ := st["milestones"].([]any)
	if milestone >= len(ms) {
		return nil
	}
	attempts, _ := ms[milestone].(map[string]any)["attempts"].([]any)
	var out []string
	for _, a := range attempts {
		o, _ := a.(map[string]any)["outcome"].(string)
		out = append(out, o)
	}
	return out
}

// `runr stop` on a live run: the current tick finishes (the agent is not
// interrupted and its attempt is judged), then the run stops with
// user_stopped, exit 130, and nothing it started is left running.
func TestStopRulesStopLiveRunAfterTick(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	writeCommitted(t, repo, map[string]string{"TASK.md": "- [ ] first\n- [ ] second\n"})
	gate := filepath.Join(t.TempDir(), "go")
	p := startRunr(t, repo, nil, "run", "--task", "TASK.md", "--",
		"fakeagent", "--do", "touch-count calls.txt; ready; wait-for "+gate+"; status done")
	p.waitReady(t, 1)

	code, out, errOut := runrCmd(t, repo, "stop", "latest")
	require.Equal(t, 0, code, "runr stop: %s%s", out, errOut)
	assert.Contains(t, out, "to stop after its current tick")
	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(dir, "stop-request"))

	// The request does not cut the tick short: runr waits for the agent.
	select {
	case <-p.done:
		t.Fatalf("runr exited %d before the tick ended\nstdout: %s\nstderr: %s", p.exitCode, &p.stdout, &p.stderr)
	default:
	}
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	assert.Equal(t, 130, p.wait(t, 30*time.Second), "stdout: %s\nstderr: %s", &p.stdout, &p.stderr)

	require.NoError(t, checkStoppedRun(dir, []string{"user_stopped"}))
	st := readState(t, repo)
	assert.Equal(t, "stopped", st["run_status"])
	assert.EqualValues(t, 1, st["tick"], "no tick after the request")
	assert.EqualValues(t, 1, st["iteration"])
	assert.Equal(t, []string{"approved"}, attemptOutcomes(st, 0), "the tick's attempt is recorded")
	reason := st["stop_reason"].(map[string]any)
	assert.Equal(t, "user_signal", reason["condition"])
	assert.EqualValues(t, 130, reason["exit_code"])
	calls, err := os.ReadFile(filepath.Join(repo, "calls.txt"))
	require.NoError(t, err)
	assert.Equal(t, "1\n", string(calls), "the agent ran once")
	assert.NoFileExists(t, filepath.Join(dir, "stop-request"), "the request is used up by the stop")
}

// `runr stop` of a run that is not live says so and exits 0; of an
// unknown run it exits 66.
func TestStopRulesStopNotLiveOrUnknown(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)

	code, _, errOut := runrCmd(t, repo, "stop", "latest")
	assert.Equal(t, 66, code, "no runs yet: %s", errOut)

	code, out, errOut := runrCmd(t, repo, "run", "--prompt", "work", "--", "fakeagent", "--do", "status done")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	id := filepath.Base(dir)

	for _, ref := range []string{"latest", id} {
		code, out, errOut = runrCmd(t, repo, "stop", ref)
		assert.Equal(t, 0, code, "stop %s: %s%s", ref, out, errOut)
		assert.Contains(t, out, "is not live")
		assert.Contains(t, out, id)
		assert.NoFileExists(t, filepath.Join(dir, "stop-request"), "no request for a run that is not live")
	}

	code, _, errOut = runrCmd(t, repo, "stop", "20200101T000000Z-abcdef")
	assert.Equal(t, 66, code)
	assert.Contains(t, errOut, "20200101T000000Z-abcdef")
}

// `runr stop` with no id stops the one live run of the store: after its
// current tick, with user_stopped (130).
func TestStopRulesStopWithoutIDStopsTheOneLiveRun(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	gate := filepath.Join(t.TempDir(), "go")
	p := startRunr(t, repo, nil, "run", "--prompt", "work", "--", "fakeagent", "--do", "ready; wait-for "+gate+"; status done")
	p.waitReady(t, 1)

	code, out, errOut := runrCmd(t, repo, "stop")
	require.Equal(t, 0, code, "runr stop: %s%s", out, errOut)
	assert.Contains(t, out, "to stop after its current tick")
	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	assert.Contains(t, out, filepath.Base(dir))
	assert.FileExists(t, filepath.Join(dir, "stop-request"))

	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	assert.Equal(t, 130, p.wait(t, 30*time.Second), "stdout: %s\nstderr: %s", &p.stdout, &p.stderr)
	require.NoError(t, checkStoppedRun(dir, []string{"user_stopped"}))
}

// `runr stop` with no id and no live run, or several, exits 64 and names
// the live runs; it writes no request.
func TestStopRulesStopWithoutIDNeedsOneLiveRun(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)

	code, out, errOut := runrCmd(t, repo, "stop")
	assert.Equal(t, 64, code, "no runs yet: %s%s", out, errOut)
	assert.Contains(t, errOut, "no live run")

	code, out, errOut = runrCmd(t, repo, "run", "--run-id", "finished", "--prompt", "work", "--", "fakeagent", "--do", "status done")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	code, out, errOut = runrCmd(t, repo, "stop")
	assert.Equal(t, 64, code, "a finished run is not live: %s%s", out, errOut)
	assert.Contains(t, errOut, "no live run")
	assert.NoFileExists(t, filepath.Join(repo, ".git", "runr", "runs", "finished", "stop-request"))

	// Two live runs, on parts of the checkout that do not overlap.
	gate := filepath.Join(t.TempDir(), "go")
	agent := []string{"--", "fakeagent", "--do", "ready; wait-for " + gate + "; status done"}
	first := startRunr(t, repo, nil, append([]string{"run", "--run-id", "first", "--prompt", "work", "--allow", "a/**"}, agent...)...)
	first.waitReady(t, 1)
	second := startRunr(t, repo, nil, append([]string{"run", "--run-id", "second", "--prompt", "work", "--allow", "b/**"}, agent...)...)
	second.waitReady(t, 2)

	code, out, errOut = runrCmd(t, repo, "stop")
	assert.Equal(t, 64, code, "two live runs: %s%s", out, errOut)
	assert.Contains(t, errOut, "first")
	assert.Contains(t, errOut, "second")
	assert.NotContains(t, errOut, "finished")
	for _, id := range []string{"first", "second"} {
		assert.NoFileExists(t, filepath.Join(repo, ".git", "runr", "runs", id, "stop-request"))
	}

	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	assert.Equal(t, 0, first.wait(t, 30*time.Second), "stdout: %s\nstderr: %s", &first.stdout, &first.stderr)
	assert.Equal(t, 0, second.wait(t, 30*time.Second), "stdout: %s\nstderr: %s", &second.stdout, &second.stderr)
}

// The progress of every active rule is in state.json after each tick, and
// `runr status <id>` shows each with its percentage and message.
func TestStopRulesConditionsAfterEachTick(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	writeCommitted(t, repo, map[string]string{"runr.yaml": `stop:
  success:
    - type: file_created
      path: done.txt
`})
	gate2, gate3 := filepath.Join(t.TempDir(), "go2"), filepath.Join(t.TempDir(), "go3")
	p := startRunr(t, repo, nil, "run", "--prompt", "work", "--", "fakeagent",
		"--do", "touch-count calls.txt",
		"--do", "@2: ready; wait-for "+gate2,
		"--do", "@3: ready; wait-for "+gate3+"; write done.txt ok")

	// While tick 2 runs, state.json holds the evaluation after tick 1.
	p.waitReady(t, 1)
	st := readState(t, repo)
	assert.EqualValues(t, 2, st["tick"])
	conds := conditionsOf(t, st)
	for _, name := range []string{"circuit_breaker", "max_milestone_retries", "max_review_rounds", "max_consecutive_fails",
		"max_reject_rate", "max_retry_rate", "same_error", "noop", "no_progress", "max_edge", "stop.success[0]",
		"budget.max_ticks", "budget.time"} {
		assert.Contains(t, conds, name)
	}
	assert.Equal(t, "1 tick (limit 200)", conds["budget.max_ticks"])
	assert.Equal(t, "1 attempt in all (limit 50)", conds["circuit_breaker"])

	// While tick 3 runs, it holds the evaluation after tick 2.
	require.NoError(t, os.WriteFile(gate2, nil, 0o644))
	p.waitReady(t, 2)
	conds = conditionsOf(t, readState(t, repo))
	assert.Equal(t, "2 ticks (limit 200)", conds["budget.max_ticks"])
	assert.Equal(t, "2 attempts in all (limit 50)", conds["circuit_breaker"])

	require.NoError(t, os.WriteFile(gate3, nil, 0o644))
	require.Equal(t, 0, p.wait(t, 30*time.Second), "stdout: %s\nstderr: %s", &p.stdout, &p.stderr)
	st = readState(t, repo)
	conds = conditionsOf(t, st)
	assert.Equal(t, "3 ticks (limit 200)", conds["budget.max_ticks"])

	// The plain form of `runr status` (stdout is not a terminal): one line
	// per rule with its percentage and message.
	code, out, errOut := runrCmd(t, repo, "status", st["run_id"].(string))
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Stop rules")
	assert.NotRegexp(t, `\[[#.]+\]`, out, "no bars off a terminal")
	for name, msg := range conds {
		line := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(name) + ` +\d+% +` + regexp.QuoteMeta(msg) + `$`)
		assert.Regexp(t, line, out, fmt.Sprintf("status shows %s", name))
	}
	assert.Regexp(t, `(?m)^  stop\.success\[0\] +100% `, out)
	assert.Regexp(t, `(?m)^  budget\.max_ticks +2% +3 ticks \(limit 200\)$`, out)
}

// timelineEvents reads the type and data of every event of a run.
func timelineEvents(t *testing.T, runDir string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "timeline.jsonl"))
	require.NoError(t, err)
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(line, &ev), "timeline line %s", line)
		out = append(out, ev)
	}
	return out
}

// A guardrail stop leaves the run stopped (not failed), resumable, with
// every finished attempt recorded in state.json and the timeline, the
// agent's work on disk, and the stop as the timeline's last event.
func TestStopRulesGuardrailStopsPersistTheWork(t *testing.T) {
	for _, tc := range []struct {
		name, code string
		exit       int
		yaml       string
		args       []string
	}{
		{"same_error", "same_error_repeated", 41, "stop: {max_milestone_retries: 0}\n",
			[]string{"--verify", "echo not yet; exit 1", "--", "fakeagent", "--do", "write work.txt same; status done"}},
		{"noop", "noop_streak", 42, "",
			[]string{"--", "fakeagent", "--do", "#1: write work.txt first", "--do", "print thinking"}},
		{"review_rejected", "review_rejected", 21, "review: {command: [sh, -c, 'exit 2']}\n",
			[]string{"--", "fakeagent", "--do", "write work.txt done; status done"}},
		{"condition_failed", "condition_failed", 15, "stop: {failure: [{type: output_pattern, pattern: GIVE UP}]}\n",
			[]string{"--", "fakeagent", "--do", "touch-count work.txt", "--do", "@2: print GIVE UP"}},
		{"max_ticks", "max_ticks", 125, "",
			[]string{"--max-ticks", "2", "--", "fakeagent", "--do", "touch-count work.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t)
			if tc.yaml != "" {
				writeCommitted(t, repo, map[string]string{"runr.yaml": tc.yaml})
			}
			code, out, errOut := runrCmd(t, repo, append([]string{"run", "--prompt", "work"}, tc.args...)...)
			require.Equal(t, tc.exit, code, "%s%s", out, errOut)
			dir, err := latestRunDir(repo)
			require.NoError(t, err)
			require.NoError(t, checkStoppedRun(dir, []string{tc.code}))

			st := readState(t, repo)
			assert.Equal(t, "stopped", st["run_status"])
			assert.Equal(t, true, st["resumable"])
			assert.NotNil(t, st["resume_from"])
			assert.NotNil(t, st["stopped_at"])
			assert.Nil(t, st["agent_process"], "no process is recorded as running")
			reason := st["stop_reason"].(map[string]any)
			assert.Equal(t, "guardrail", reason["category"])
			assert.EqualValues(t, tc.exit, reason["exit_code"])

			finished := 0
			for _, o := range attemptOutcomes(st, 0) {
				assert.NotEmpty(t, o, "every attempt has an outcome")
				finished++
			}
			events := timelineEvents(t, dir)
			attempts := 0
			for _, ev := range events {
				if ev["type"] == "attempt" {
					attempts++
				}
			}
			assert.Equal(t, finished, attempts, "an attempt event for every attempt in state.json")
			last := events[len(events)-1]
			assert.Equal(t, "stop", last["type"])
			assert.Equal(t, tc.code, last["data"].(map[string]any)["code"])
			assert.EqualValues(t, st["tick"], last["tick"])

			stopJSON, err := os.ReadFile(filepath.Join(dir, "stop.json"))
			require.NoError(t, err)
			assert.Contains(t, string(stopJSON), `"code": "`+tc.code+`"`)
			assert.FileExists(t, filepath.Join(repo, "work.txt"), "the agent's work stays in the checkout")
		})
	}
}
