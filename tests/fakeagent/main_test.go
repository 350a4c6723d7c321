package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// bin is the fakeagent program built for these tests.
var bin string

func TestMain(m *testing.M) {
	dir, err := testenv.Build(testenv.FakeAgent)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, testenv.FakeAgent.Name)
	os.Exit(m.Run())
}

// waitLimit bounds every wait for a process or a file, so a broken behaviour
// fails the test instead of hanging it.
const waitLimit = 15 * time.Second

// agentCmd prepares the program in its own process group, in dir, with a clean
// environment plus env.
func agentCmd(t *testing.T, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	return agentCmdAt(t, bin, dir, env, args...)
}

func agentCmdAt(t *testing.T, program, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(program, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RUNR_") && !strings.HasPrefix(kv, "FAKEAGENT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = waitLimit
	return cmd
}

type result struct {
	stdout, stderr string
	code           int
}

// runAgent runs the program to its end with stdin as its input.
func runAgent(t *testing.T, dir string, env []string, stdin string, args ...string) result {
	t.Helper()
	return runCmd(t, agentCmd(t, dir, env, args...), stdin)
}

func runCmd(t *testing.T, cmd *exec.Cmd, stdin string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err := waitProcess(t, cmd)
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{stdout.String(), stderr.String(), code}
}

// waitProcess waits for cmd, killing its group when it runs past waitLimit.
func waitProcess(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(waitLimit):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("%s did not end within %s", cmd, waitLimit)
		return nil
	}
}

// waitForLine is testenv.WaitForLine.
func waitForLine(t *testing.T, file, prefix string) string {
	t.Helper()
	return testenv.WaitForLine(t, file, prefix)
}

func pidOf(t *testing.T, line string) int {
	t.Helper()
	_, s, ok := strings.Cut(line, "pid=")
	require.True(t, ok, line)
	pid, err := strconv.Atoi(strings.TrimSpace(s))
	require.NoError(t, err, line)
	return pid
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

func TestFileActions(t *testing.T) {
	dir := t.TempDir()
	r := runAgent(t, dir, nil, "",
		"--do", `write sub/a.txt hello\nworld; append sub/a.txt \tagain`,
		"--do", "write b.txt doomed; delete b.txt; write c.txt moved; rename c.txt d.txt")
	require.Equal(t, 0, r.code, r.stderr)

	assert.Equal(t, "hello\nworld\tagain", readFile(t, filepath.Join(dir, "sub/a.txt")))
	assert.NoFileExists(t, filepath.Join(dir, "b.txt"))
	assert.NoFileExists(t, filepath.Join(dir, "c.txt"))
	assert.Equal(t, "moved", readFile(t, filepath.Join(dir, "d.txt")))
}

func TestSignalsAndExitCode(t *testing.T) {
	r := runAgent(t, t.TempDir(), nil, "",
		"--do", "print working: on it; status blocked no API key; eprint oops",
		"--do", "exit 3; print never")
	assert.Equal(t, 3, r.code)
	assert.Equal(t, "working: on it\nRUNR_STATUS: blocked no API key\n", r.stdout)
	assert.Equal(t, "oops\n", r.stderr)

	r = runAgent(t, t.TempDir(), nil, "", "--do", "status done; promise; status failed")
	assert.Equal(t, 0, r.code)
	assert.Equal(t, "RUNR_STATUS: done\n<promise>COMPLETE</promise>\nRUNR_STATUS: failed\n", r.stdout)
}

func TestScriptAndActionErrors(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script.txt")
	require.NoError(t, os.WriteFile(script, []byte("print fine\n@2: sleep forever\n"), 0o644))
	r := runAgent(t, dir, nil, "", "--script", script)
	assert.Equal(t, 2, r.code)
	assert.Empty(t, r.stdout, "a bad script must fail before any action runs")
	assert.Contains(t, r.stderr, "script.txt line 2")
	assert.Contains(t, r.stderr, `"forever" is not a duration`)

	r = runAgent(t, dir, nil, "")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "no script")

	r = runAgent(t, dir, nil, "", "--do", "print before; delete missing.txt; print after")
	assert.Equal(t, 1, r.code)
	assert.Equal(t, "before\n", r.stdout)
	assert.Contains(t, r.stderr, "--do #1 line 1: delete")
	assert.Contains(t, r.stderr, "missing.txt")
}

func TestIterationAndMilestoneSelectors(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.script")
	require.NoError(t, os.WriteFile(script, []byte(`# selectors by iteration and milestone
@1: print first
@2-3: print middle
@4+: print late
m2: print milestone two
touch-count calls.txt
`), 0o644))
	want := map[int]string{
		1: "first\n",
		2: "middle\n",
		3: "middle\n",
		4: "late\nmilestone two\n",
		5: "late\nmilestone two\n",
	}
	for it := 1; it <= 5; it++ {
		milestone := 1
		if it >= 4 {
			milestone = 2
		}
		r := runAgent(t, dir, []string{
			"FAKEAGENT_SCRIPT=" + script,
			"RUNR_ITERATION=" + strconv.Itoa(it),
			"RUNR_MILESTONE=" + strconv.Itoa(milestone),
		}, "")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, want[it], r.stdout, "iteration %d", it)
	}
	assert.Equal(t, "1\n2\n3\n4\n5\n", readFile(t, filepath.Join(dir, "calls.txt")))
}

func TestCallCounterAcrossInvocations(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "calls.state")
	steps := []string{"--do", "#1: print first; exit 5", "--do", "#2: print second", "--do", "#3+: status done"}
	env := []string{"FAKEAGENT_STATE=" + state, "RUNR_ITERATION=1"}

	r := runAgent(t, dir, env, "", steps...)
	assert.Equal(t, 5, r.code)
	assert.Equal(t, "first\n", r.stdout)
	r = runAgent(t, dir, env, "", steps...)
	assert.Equal(t, 0, r.code)
	assert.Equal(t, "second\n", r.stdout)
	for range 2 {
		r = runAgent(t, dir, env, "", steps...)
		assert.Equal(t, "RUNR_STATUS: done\n", r.stdout)
	}
	assert.Equal(t, 4, strings.Count(readFile(t, state), "\n"))

	// Without FAKEAGENT_STATE the count lives in the run directory, as it
	// does under runr, so it survives a resume in a new runr process.
	runDir := t.TempDir()
	env = []string{"RUNR_RUN_DIR=" + runDir}
	assert.Equal(t, "first\n", runAgent(t, dir, env, "", steps...).stdout)
	assert.Equal(t, "second\n", runAgent(t, dir, env, "", steps...).stdout)
	assert.Contains(t, readFile(t, filepath.Join(runDir, "fakeagent-calls")), "call=2 ")
}

func TestSleepEndsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	var stdout bytes.Buffer
	cmd := agentCmd(t, dir, []string{"FAKEAGENT_READY_FILE=" + ready}, "--do", "ready; sleep 1m; print not reached")
	cmd.Stdout = &stdout
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })

	line := waitForLine(t, ready, "FAKEAGENT READY")
	assert.Equal(t, cmd.Process.Pid, pidOf(t, line))
	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM))

	err := waitProcess(t, cmd)
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr)
	ws := exitErr.Sys().(syscall.WaitStatus)
	assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGTERM, "want death by SIGTERM, got %v", ws)
	assert.Empty(t, stdout.String())
}

func TestIgnoreTermSurvivesSIGTERM(t *testing.T) {
	dir := t.TempDir()
	ready, proceed := filepath.Join(dir, "ready"), filepath.Join(dir, "proceed")
	var stdout bytes.Buffer
	cmd := agentCmd(t, dir, []string{"FAKEAGENT_READY_FILE=" + ready},
		"--do", "ignore-term; ready; wait-for "+proceed+"; print survived")
	cmd.Stdout = &stdout
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })

	waitForLine(t, ready, "FAKEAGENT READY")
	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM))
	// The program notes the SIGTERM it ignored; only then may it go on.
	line := waitForLine(t, ready, "FAKEAGENT TERM IGNORED")
	assert.Equal(t, cmd.Process.Pid, pidOf(t, line))
	require.NoError(t, os.WriteFile(proceed, nil, 0o644))

	require.NoError(t, waitProcess(t, cmd))
	assert.Equal(t, "survived\n", stdout.String())
}

func TestGrandchildKeepsStdoutInTheGroup(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	cmd := agentCmd(t, dir, []string{"FAKEAGENT_READY_FILE=" + ready}, "--do", "grandchild 30s; print parent done")
	cmd.Stdout = w
	require.NoError(t, cmd.Start())
	w.Close()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	require.NoError(t, waitProcess(t, cmd))

	child := pidOf(t, waitForLine(t, ready, "FAKEAGENT GRANDCHILD"))
	assert.True(t, alive(child), "the grandchild must outlive the agent")
	pgid, err := syscall.Getpgid(child)
	require.NoError(t, err)
	assert.Equal(t, cmd.Process.Pid, pgid, "the grandchild must stay in the agent's process group")

	// Both the agent and its grandchild write to the shared stdout, in
	// either order; the grandchild holds it open after the agent is gone.
	require.NoError(t, r.SetReadDeadline(time.Now().Add(waitLimit)))
	br := bufio.NewReader(r)
	var seen []string
	parentDone, childSaid := false, false
	for !parentDone || !childSaid {
		line, err := br.ReadString('\n')
		require.NoError(t, err, "read the agent's stdout; seen so far: %q", seen)
		seen = append(seen, line)
		parentDone = parentDone || line == "parent done\n"
		childSaid = childSaid || strings.HasPrefix(line, fmt.Sprintf("fakeagent grandchild pid=%d", child))
	}

	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL))
	rest, err := io.ReadAll(br)
	require.NoError(t, err, "the pipe must close once the group is gone")
	assert.Empty(t, string(rest))
}

func TestBackgroundChildClosesStdioAndOutlivesTheAgent(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	cmd := agentCmd(t, dir, []string{"FAKEAGENT_READY_FILE=" + ready}, "--do", "background 30s; print agent done")
	cmd.Stdout = w
	require.NoError(t, cmd.Start())
	w.Close()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	require.NoError(t, waitProcess(t, cmd))

	// The pipe reaches end of file although the child lives: it holds no end of it.
	require.NoError(t, r.SetReadDeadline(time.Now().Add(waitLimit)))
	out, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.Equal(t, "agent done\n", string(out))

	child := pidOf(t, waitForLine(t, ready, "FAKEAGENT BACKGROUND"))
	assert.True(t, alive(child), "the background child must outlive the agent")
	pgid, err := syscall.Getpgid(child)
	require.NoError(t, err)
	assert.Equal(t, cmd.Process.Pid, pgid)
}

func TestFlood(t *testing.T) {
	r := runAgent(t, t.TempDir(), nil, "", "--do", "flood 3M")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Len(t, r.stdout, 3<<20)

	r = runAgent(t, t.TempDir(), nil, "", "--do", "flood-lines 1000")
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	assert.Len(t, lines, 1000)
	assert.Equal(t, "fakeagent line 1000 of 1000", lines[999])
}

func TestPromptAndEnv(t *testing.T) {
	dir := t.TempDir()
	r := runAgent(t, dir, nil, "fix the bug\n<promise>COMPLETE</promise>\n", "--do", "echo-prompt")
	assert.Equal(t, "fix the bug\n<promise>COMPLETE</promise>\n", r.stdout)

	promptFile := filepath.Join(dir, "prompt.md")
	require.NoError(t, os.WriteFile(promptFile, []byte("from a file"), 0o644))
	r = runAgent(t, dir, nil, "not this", "--do", "echo-prompt", "--prompt-file", promptFile)
	assert.Equal(t, "from a file\n", r.stdout)

	r = runAgent(t, dir, nil, "not this", "--do", "echo-prompt", "substituted", "prompt")
	assert.Equal(t, "substituted prompt\n", r.stdout)

	r = runAgent(t, dir, []string{"RUNR_TICK=7", "RUNR_ITERATION=3", "RUNR_MILESTONE_GOAL=fix Add", "OTHER=x"}, "", "--do", "env")
	assert.Equal(t, "RUNR_ITERATION=3\nRUNR_MILESTONE_GOAL=fix Add\nRUNR_TICK=7\n", r.stdout)
}

func TestReplay(t *testing.T) {
	dir := t.TempDir()
	recording := filepath.Join(dir, "session.jsonl")
	events := `{"type":"system","subtype":"init","session_id":"s1"}` + "\n" +
		`{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}` + "\n" +
		`{"type":"result","is_error":false,"total_cost_usd":0.01}`
	require.NoError(t, os.WriteFile(recording, []byte(events), 0o644))

	r := runAgent(t, dir, nil, "", "--do", "json "+recording)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, events+"\n", r.stdout)

	// Installed as claude, it ignores its arguments and plays the recording.
	claude := filepath.Join(dir, "claude")
	data, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(claude, data, 0o755))
	argsFile := filepath.Join(dir, "argv.jsonl")
	cmd := agentCmdAt(t, claude, dir, []string{
		"FAKEAGENT_REPLAY=" + recording, "FAKEAGENT_EXIT=3", "FAKEAGENT_ARGS_FILE=" + argsFile,
	}, "-p", "--output-format", "stream-json", "--do", "not a script")
	r = runCmd(t, cmd, "the prompt")
	assert.Equal(t, 3, r.code, r.stderr)
	assert.Equal(t, events+"\n", r.stdout)

	var argv []string
	require.NoError(t, json.Unmarshal([]byte(readFile(t, argsFile)), &argv))
	assert.Equal(t, []string{claude, "-p", "--output-format", "stream-json", "--do", "not a script"}, argv)
}

func TestReplayPerCall(t *testing.T) {
	dir := t.TempDir()
	first, retry := filepath.Join(dir, "first.jsonl"), filepath.Join(dir, "retry.jsonl")
	require.NoError(t, os.WriteFile(first, []byte(`{"n":1}`), 0o644))
	require.NoError(t, os.WriteFile(retry, []byte(`{"n":2}`), 0o644))
	data, err := os.ReadFile(bin)
	require.NoError(t, err)
	claude := filepath.Join(dir, "claude")
	require.NoError(t, os.WriteFile(claude, data, 0o755))
	env := []string{
		"FAKEAGENT_STATE=" + filepath.Join(dir, "calls"),
		"FAKEAGENT_REPLAY=" + first, "FAKEAGENT_EXIT=1",
		"FAKEAGENT_REPLAY_2=" + retry, "FAKEAGENT_EXIT_2=0",
	}

	// Call 1 plays FAKEAGENT_REPLAY, call 2 its own file and exit code, and
	// call 3 falls back to the defaults again.
	for _, want := range []struct {
		out  string
		code int
	}{{`{"n":1}`, 1}, {`{"n":2}`, 0}, {`{"n":1}`, 1}} {
		r := runCmd(t, agentCmdAt(t, claude, dir, env, "-p"), "prompt")
		assert.Equal(t, want.out+"\n", r.stdout)
		assert.Equal(t, want.code, r.code, r.stderr)
	}

	r := runCmd(t, agentCmdAt(t, claude, dir, append(env, "FAKEAGENT_EXIT_4=x"), "-p"), "prompt")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, `FAKEAGENT_EXIT_4="x"`)
}

func TestFixTestCompletesTheDemoMilestones(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"go.mod", "stats.go", "stats_test.go"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "examples", "demo", "repo", name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}

	r := runAgent(t, dir, []string{"RUNR_MILESTONE=1"}, "", "--do", "fix-test")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "fakeagent: fixed stats.go\nfakeagent: fixed stats.go\n", r.stdout)
	stats := readFile(t, filepath.Join(dir, "stats.go"))
	assert.Contains(t, stats, "if len(xs) == 0 {")
	assert.Contains(t, stats, "return float64(sum) / float64(len(xs))")

	r = runAgent(t, dir, []string{"RUNR_MILESTONE=1"}, "", "--do", "fix-test 2")
	require.Equal(t, 0, r.code, r.stderr)
	assert.FileExists(t, filepath.Join(dir, "max.go"))
	assert.FileExists(t, filepath.Join(dir, "max_test.go"))

	r = runAgent(t, dir, nil, "", "--do", "fix-test 3")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "no milestone 3")
}
