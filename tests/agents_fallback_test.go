package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
)

// codexRecording is the path of a recorded Codex CLI session.
func codexRecording(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "internal", "agents", "testdata", "codex", name+".jsonl"))
	require.NoError(t, err)
	require.FileExists(t, p)
	return p
}

// usageLimitRecording is claude's recorded 429 result turned into its
// usage-limit result, "Claude AI usage limit reached|<epoch>", with the
// reset at resetAt: a reset hours ahead can only be written when the test
// runs.
func usageLimitRecording(t *testing.T, resetAt time.Time) string {
	t.Helper()
	b, err := os.ReadFile(recording(t, "rate_limit_429"))
	require.NoError(t, err)
	var out bytes.Buffer
	found := false
	for _, line := range bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n")) {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(line, &ev))
		if ev["type"] == "result" {
			ev["result"] = fmt.Sprintf("Claude AI usage limit reached|%d", resetAt.Unix())
			delete(ev, "api_error_status")
			delete(ev, "api_error_type")
			line, err = json.Marshal(ev)
			require.NoError(t, err)
			found = true
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	require.True(t, found, "the recording has its result event")
	path := filepath.Join(t.TempDir(), "usage_limit.jsonl")
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
	return path
}

// fakeCLIs is a directory holding the fake agent installed under each of
// names, to be put first on PATH: under such a name it replays
// FAKEAGENT_REPLAY[_N], the call count shared by all of them.
func fakeCLIs(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(binDir, "fakeagent"))
	require.NoError(t, err)
	for _, n := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), data, 0o755))
	}
	return dir
}

// fallbackRun is one finished runr command of a fallback test.
type fallbackRun struct {
	exit           int
	stdout, stderr string
	dir            string // the run dir
	st             *state.State
	calls          []string   // the program of each agent call, by name
	argv           [][]string // the argv of each agent call
}

// runFallback runs runr with args in repo, the fake CLIs of fakes first on
// PATH, env added; it reads the run's state and which program made each
// call.
func runFallback(t *testing.T, repo, fakes, argsFile string, env []string, args ...string) fallbackRun {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "runr"), args...)
	cmd.Dir = repo
	cmd.Env = append(testEnv(repo),
		"PATH="+fakes+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"FAKEAGENT_ARGS_FILE="+argsFile,
		"IS_SANDBOX=1",
		"RUNR_AGENT_IDLE_TIMEOUT=10s",
		"RUNR_BUDGET_TIME=2m",
	)
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("runr %v: %v", args, err)
	}
	r := fallbackRun{exit: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	dir, err := latestRunDir(repo)
	require.NoError(t, err, "runr exited %d without a run\nstderr: %s", r.exit, r.stderr)
	require.NoError(t, checkStoppedRun(dir, nil))
	r.dir = dir
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	require.NoError(t, err)
	r.st = &state.State{}
	require.NoError(t, json.Unmarshal(b, r.st))
	if b, err := os.ReadFile(argsFile); err == nil {
		for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var argv []string
			require.NoError(t, json.Unmarshal(line, &argv))
			r.calls = append(r.calls, filepath.Base(argv[0]))
			r.argv = append(r.argv, argv)
		}
	}
	return r
}

// attemptAgents are the outcome and agent kind of each attempt of the
// first milestone: "switched claude".
func (r fallbackRun) attemptAgents(t *testing.T) []string {
	t.Helper()
	require.NotEmpty(t, r.st.Milestones)
	var out []string
	for _, a := range r.st.Milestones[0].Attempts {
		require.NotNil(t, a.Agent, "attempt of tick %d records its agent", a.Tick)
		out = append(out, a.Outcome+" "+a.Agent.Kind)
	}
	return out
}

// switchEvents are the run's agent_switch events.
func switchEvents(t *testing.T, runDir string) []map[string]any {
	var out []map[string]any
	for _, ev := range timelineEvents(t, runDir) {
		if ev["type"] == "agent_switch" {
			out = append(out, ev)
		}
	}
	return out
}

// A claude whose usage limit resets hours beyond resume.max_wait hands the
// milestone to the fallback codex, which completes it: the run exits 0,
// its attempts name both agents, and the switch is in the timeline, the
// summary, `runr status`, `runr doctor` and the --json summary.
func TestFallbackOnDistantUsageLimitCompletes(t *testing.T) {
	repo := newRepo(t)
	resetAt := time.Now().Add(9 * time.Hour).Truncate(time.Second)
	env := []string{
		"FAKEAGENT_REPLAY=" + usageLimitRecording(t, resetAt), "FAKEAGENT_EXIT=1",
		"FAKEAGENT_REPLAY_2=" + codexRecording(t, "success"), "FAKEAGENT_EXIT_2=0",
		`RUNR_AGENT_FALLBACK=[{"kind": "codex", "model": "gpt-test"}]`,
		"RUNR_AGENT_CONTINUE_SESSION=true",
	}
	argsFile := filepath.Join(t.TempDir(), "argv.jsonl")
	r := runFallback(t, repo, fakeCLIs(t, "claude", "codex"), argsFile, env, "run", "--agent", "claude", "--prompt", "write hello.txt")
	require.Equal(t, 0, r.exit, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Equal(t, "complete", string(r.st.StopReason.Code))

	assert.Equal(t, []string{"claude", "codex"}, r.calls, "one call each, in order")
	// claude's session is not handed to codex.
	assert.NotContains(t, r.argv[1], "resume")
	assert.NotContains(t, strings.Join(r.argv[1], " "), "c2203fd3-e8e3-4221-8740-08988284357b")
	assert.Equal(t, "gpt-test", argAfter(r.argv[1], "--model"), "the fallback's model is asked for")
	assert.Equal(t, []string{"switched claude", "approved codex"}, r.attemptAgents(t))
	assert.Equal(t, "gpt-test", r.st.Milestones[0].Attempts[1].Agent.Model)
	// The limit was the agent's, not the work's: no retry, no failure.
	assert.Equal(t, 0, r.st.Milestones[0].Retries)
	assert.Equal(t, 1, r.st.Counters.Attempts)
	assert.Equal(t, 0, r.st.Statistics.Failed)
	// Neither call changed a file, but the switched one counts for no
	// streak: only codex's call is a no-op.
	assert.Equal(t, 1, r.st.Counters.Noop)
	// Codex took the same milestone with the same task.
	prompt1, err := os.ReadFile(filepath.Join(r.dir, "prompts", "tick-0001.md"))
	require.NoError(t, err)
	prompt2, err := os.ReadFile(filepath.Join(r.dir, "prompts", "tick-0002.md"))
	require.NoError(t, err)
	assert.Equal(t, string(prompt1), string(prompt2))

	assert.Equal(t, 1, r.st.AgentIndex)
	require.Len(t, r.st.AgentSwitches, 1)
	sw := r.st.AgentSwitches[0]
	assert.Equal(t, state.AgentRef{Kind: "claude"}, sw.From)
	assert.Equal(t, state.AgentRef{Kind: "codex", Model: "gpt-test"}, sw.To)
	assert.Equal(t, state.SwitchRateLimited, sw.Reason)
	assert.Equal(t, resetAt.UTC().Format(time.RFC3339), sw.ResetAt)
	assert.Equal(t, 1, sw.Tick)
	assert.Contains(t, sw.Message, "beyond resume.max_wait 6h")

	evs := switchEvents(t, r.dir)
	require.Len(t, evs, 1)
	data := evs[0]["data"].(map[string]any)
	assert.Equal(t, map[string]any{"kind": "claude"}, data["from"])
	assert.Equal(t, map[string]any{"kind": "codex", "model": "gpt-test"}, data["to"])
	assert.Equal(t, "rate_limited", data["reason"])
	assert.Equal(t, sw.ResetAt, data["reset_at"])

	line := "switched from claude to codex (gpt-test) at tick 1: rate limited until "
	assert.Contains(t, r.stdout, line, "the end-of-run summary shows the switch")

	id := r.st.RunID
	code, out, errOut := runrCmd(t, repo, "status", id)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, line)
	code, out, errOut = runrCmd(t, repo, "doctor", id)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Agents: claude, codex (gpt-test)")
	assert.Contains(t, out, line)

	js := runFallback(t, newRepo(t), fakeCLIs(t, "claude", "codex"), filepath.Join(t.TempDir(), "argv.jsonl"), env,
		"run", "--agent", "claude", "--prompt", "write hello.txt", "--json")
	require.Equal(t, 0, js.exit, js.stderr)
	var sum struct {
		Agents   []state.AgentRef    `json:"agents"`
		Switches []state.AgentSwitch `json:"agent_switches"`
	}
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &sum), js.stdout)
	assert.Equal(t, []state.AgentRef{{Kind: "claude"}, {Kind: "codex", Model: "gpt-test"}}, sum.Agents)
	require.Len(t, sum.Switches, 1)
	assert.Equal(t, state.SwitchRateLimited, sum.Switches[0].Reason)
}

// A limit that resets within resume.max_wait does not switch: the run stops
// with worker_rate_limited, for the auto-resume to wait for the reset. A
// limit that resets beyond it with no fallback agent usable stops the same
// way, and says that none was left.
func TestFallbackNotTakenStopsRateLimited(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reset    time.Duration
		fakes    []string
		fallback string
		message  string
	}{
		{name: "reset within max_wait", reset: 2 * time.Hour, fakes: []string{"claude", "codex"},
			fallback: `[{"kind": "codex"}]`, message: "it resets at"},
		{name: "no fallback program left", reset: 9 * time.Hour, fakes: []string{"claude"},
			fallback: `[{"kind": "codex"}]`, message: "no fallback agent left to switch to (agent.fallback)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath("codex"); err == nil && len(tc.fakes) == 1 {
				t.Skip("a codex is installed on this machine's PATH")
			}
			repo := newRepo(t)
			env := []string{
				"FAKEAGENT_REPLAY=" + usageLimitRecording(t, time.Now().Add(tc.reset)), "FAKEAGENT_EXIT=1",
				"FAKEAGENT_REPLAY_2=" + codexRecording(t, "success"), "FAKEAGENT_EXIT_2=0",
				"RUNR_AGENT_FALLBACK=" + tc.fallback,
			}
			r := runFallback(t, repo, fakeCLIs(t, tc.fakes...), filepath.Join(t.TempDir(), "argv.jsonl"), env,
				"run", "--agent", "claude", "--prompt", "write hello.txt")
			require.Equal(t, 33, r.exit, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			assert.Equal(t, "worker_rate_limited", string(r.st.StopReason.Code))
			assert.Contains(t, r.st.StopReason.Message, tc.message)
			assert.NotEmpty(t, r.st.StopReason.Details.ResetAt)
			assert.Equal(t, []string{"claude"}, r.calls)
			assert.Equal(t, []string{"stopped claude"}, r.attemptAgents(t))
			assert.Zero(t, r.st.AgentIndex)
			assert.Empty(t, r.st.AgentSwitches)
			assert.Empty(t, switchEvents(t, r.dir))
		})
	}
}

// A primary agent whose program is missing hands the run to the fallback
// before any call: the run completes with the fallback alone.
func TestFallbackForAMissingProgram(t *testing.T) {
	if _, err := exec.LookPath("claude"); err == nil {
		t.Skip("a claude is installed on this machine's PATH")
	}
	repo := newRepo(t)
	env := []string{
		"FAKEAGENT_REPLAY=" + codexRecording(t, "success"), "FAKEAGENT_EXIT=0",
		`RUNR_AGENT_FALLBACK=[{"kind": "codex"}]`,
	}
	r := runFallback(t, repo, fakeCLIs(t, "codex"), filepath.Join(t.TempDir(), "argv.jsonl"), env,
		"run", "--agent", "claude", "--prompt", "write hello.txt")
	require.Equal(t, 0, r.exit, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Equal(t, []string{"codex"}, r.calls)
	assert.Equal(t, []string{"approved codex"}, r.attemptAgents(t))
	require.Len(t, r.st.AgentSwitches, 1)
	sw := r.st.AgentSwitches[0]
	assert.Equal(t, state.SwitchNotFound, sw.Reason)
	assert.Equal(t, 0, sw.Tick)
	assert.Contains(t, sw.Message, `"claude" not found`)
	assert.Contains(t, r.stdout, "switched from claude to codex before the first call")
	assert.Len(t, switchEvents(t, r.dir), 1)

	// Without a fallback the missing program is worker_not_found, as before.
	r = runFallback(t, newRepo(t), fakeCLIs(t, "codex"), filepath.Join(t.TempDir(), "argv.jsonl"), nil,
		"run", "--agent", "claude", "--prompt", "write hello.txt")
	require.Equal(t, 35, r.exit, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Empty(t, r.calls)
}

// A run that switched to its fallback agent and then stopped resumes with
// the fallback: the primary is not asked again.
func TestFallbackKeptAcrossResume(t *testing.T) {
	repo := newRepo(t)
	fakes := fakeCLIs(t, "claude", "codex")
	argsFile := filepath.Join(t.TempDir(), "argv.jsonl")
	env := []string{
		"FAKEAGENT_STATE=" + filepath.Join(t.TempDir(), "calls"),
		"FAKEAGENT_REPLAY=" + usageLimitRecording(t, time.Now().Add(9*time.Hour)), "FAKEAGENT_EXIT=1",
		// Codex's own 429 names no reset: a transient limit, no switch.
		"FAKEAGENT_REPLAY_2=" + codexRecording(t, "rate_limit"), "FAKEAGENT_EXIT_2=1",
		"FAKEAGENT_REPLAY_3=" + codexRecording(t, "success"), "FAKEAGENT_EXIT_3=0",
		`RUNR_AGENT_FALLBACK=[{"kind": "codex"}]`,
	}
	r := runFallback(t, repo, fakes, argsFile, env, "run", "--agent", "claude", "--prompt", "write hello.txt")
	require.Equal(t, 33, r.exit, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Equal(t, []string{"claude", "codex"}, r.calls)
	assert.Equal(t, 1, r.st.AgentIndex)
	assert.Empty(t, r.st.StopReason.Details.ResetAt)

	r = runFallback(t, repo, fakes, argsFile, env, "resume", r.st.RunID)
	require.Equal(t, 0, r.exit, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Equal(t, []string{"claude", "codex", "codex"}, r.calls)
	assert.Equal(t, []string{"switched claude", "stopped codex", "approved codex"}, r.attemptAgents(t))
	assert.Equal(t, 1, r.st.AgentIndex)
	assert.Len(t, r.st.AgentSwitches, 1)
}

// --dry-run shows the fallback chain as found, and a fallback agent whose
// program is missing only warns: it may never be needed.
func TestFallbackDryRun(t *testing.T) {
	if _, err := exec.LookPath("gemini"); err == nil {
		t.Skip("a gemini is installed on this machine's PATH")
	}
	repo := newRepo(t)
	env := []string{`RUNR_AGENT_FALLBACK=[{"kind": "codex", "model": "gpt-test"}, {"kind": "gemini"}]`}
	cmd := exec.Command(filepath.Join(binDir, "runr"), "run", "--dry-run", "--agent", "claude", "--prompt", "write hello.txt")
	cmd.Dir = repo
	fakes := fakeCLIs(t, "claude", "codex")
	cmd.Env = append(testEnv(repo), "PATH="+fakes+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "IS_SANDBOX=1")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `(?m)^  fallback +1\. codex · model gpt-test · `+regexpQuote(filepath.Join(fakes, "codex"))+`$`, string(out))
	assert.Regexp(t, `(?m)^ +2\. gemini · cannot be used now: agent program "gemini" not found`, string(out))
	assert.Contains(t, string(out), "1 of 2 left usable")
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
