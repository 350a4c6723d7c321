package tests

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
)

// Session ids and figures of the recordings in testdata/agents/claude.
const (
	sessionSuccess = "db5fa216-ec81-4cb4-bbbf-87ff2531cbf0" // success_promise: $0.0014, 100 in, 50 out
	sessionWrite   = "09c0718c-06f5-48f5-9a73-192868179973" // tool_write: $0.0028, 200 in, 100 out
	sessionAuth    = "094860d7-fdb6-4a63-bd8c-4a75ae0f418a"
	sessionBudget  = "5d0c1f3e-7a2b-4c55-9e61-2f8a4b7c9d10" // max_budget_usd: $0.0514, 3000 in, 1500 out
)

// recording is the path of a recorded claude session.
func recording(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "agents", "claude", name+".jsonl"))
	require.NoError(t, err)
	require.FileExists(t, p)
	return p
}

// fakeClaudeDir is a directory holding the fake agent installed as claude,
// to be put first on PATH: under that name it replays FAKEAGENT_REPLAY.
func fakeClaudeDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(binDir, "fakeagent"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "claude"), data, 0o755))
	return dir
}

// claudeRun is one finished `runr run --agent claude`.
type claudeRun struct {
	exit           int
	stdout, stderr string
	st             *state.State
	argv           [][]string // each call of the fake claude
}

// runClaude runs runr with the fake claude first on PATH and env added to
// the test environment, and reads the run's state and the agent's argv.
func runClaude(t *testing.T, repo string, env []string, args ...string) claudeRun {
	t.Helper()
	argsFile := filepath.Join(t.TempDir(), "argv.jsonl")
	cmd := exec.Command(filepath.Join(binDir, "runr"), append([]string{"run", "--agent", "claude"}, args...)...)
	cmd.Dir = repo
	cmd.Env = append(testEnv(repo),
		"PATH="+fakeClaudeDir(t)+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"FAKEAGENT_ARGS_FILE="+argsFile,
		"RUNR_AGENT_IDLE_TIMEOUT=10s",
		"RUNR_BUDGET_TIME=2m",
	)
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := claudeRun{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
	default:
		t.Fatalf("runr: %v", err)
	}
	dir, err := latestRunDir(repo)
	require.NoError(t, err, "runr exited %d without a run\nstderr: %s", r.exit, r.stderr)
	require.NoError(t, checkStoppedRun(dir, nil))
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	require.NoError(t, err)
	r.st = &state.State{}
	require.NoError(t, json.Unmarshal(b, r.st))
	if f, err := os.Open(argsFile); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var argv []string
			require.NoError(t, json.Unmarshal(sc.Bytes(), &argv))
			r.argv = append(r.argv, argv)
		}
	}
	return r
}

func (r claudeRun) attempts() []state.Attempt {
	if len(r.st.Milestones) == 0 {
		return nil
	}
	return r.st.Milestones[0].Attempts
}

// argAfter is the value after flag in argv, "" when the flag is absent.
func argAfter(argv []string, flag string) string {
	for i, a := range argv {
		if a == flag && i+1 < len(argv) {
			return argv[i+1]
		}
	}
	return ""
}

func TestClaudeRecordingsDriveTheRun(t *testing.T) {
	type usage struct {
		cost          float64
		input, output int64
		session       string
	}
	tests := []struct {
		name     string
		env      []string // FAKEAGENT_REPLAY... and RUNR_* settings
		args     []string
		exit     int
		code     string
		usage    usage
		outcomes []string
		check    func(t *testing.T, r claudeRun)
	}{
		{
			name:     "promise in the result text completes",
			env:      []string{"FAKEAGENT_REPLAY=" + recording(t, "success_promise")},
			exit:     0,
			code:     "complete",
			usage:    usage{0.0014, 100, 50, sessionSuccess},
			outcomes: []string{"approved"},
			check: func(t *testing.T, r claudeRun) {
				require.Len(t, r.argv, 1)
				assert.Equal(t, []string{"-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "bypassPermissions"}, r.argv[0][1:])
			},
		},
		{
			name:     "success without the promise goes on to verify",
			env:      []string{"FAKEAGENT_REPLAY=" + recording(t, "tool_write")},
			args:     []string{"--verify", "git rev-parse --verify HEAD"},
			exit:     0,
			code:     "complete",
			usage:    usage{0.0028, 200, 100, sessionWrite},
			outcomes: []string{"approved"},
			check: func(t *testing.T, r claudeRun) {
				require.Len(t, r.st.Verify, 1)
				assert.True(t, r.st.Verify[0].Passed)
			},
		},
		{
			name:     "401 is worker_auth_failed",
			env:      []string{"FAKEAGENT_REPLAY=" + recording(t, "auth_401"), "FAKEAGENT_EXIT=1"},
			exit:     34,
			code:     "worker_auth_failed",
			usage:    usage{0, 0, 0, sessionAuth},
			outcomes: []string{"stopped"},
			check: func(t *testing.T, r claudeRun) {
				assert.Contains(t, r.st.StopReason.Message, "401")
				assert.Contains(t, r.stdout+r.stderr, "worker_auth_failed")
			},
		},
		{
			name:     "429 is worker_rate_limited",
			env:      []string{"FAKEAGENT_REPLAY=" + recording(t, "rate_limit_429"), "FAKEAGENT_EXIT=1"},
			exit:     33,
			code:     "worker_rate_limited",
			usage:    usage{0, 0, 0, "c2203fd3-e8e3-4221-8740-08988284357b"},
			outcomes: []string{"stopped"},
			check: func(t *testing.T, r claudeRun) {
				assert.Contains(t, r.st.StopReason.Message, "rate or usage limit")
				assert.True(t, r.st.Resumable)
			},
		},
		{
			name: "529 overloaded is a failed attempt, retried",
			env: []string{"FAKEAGENT_REPLAY=" + recording(t, "overloaded_529"), "FAKEAGENT_EXIT=1",
				"FAKEAGENT_REPLAY_2=" + recording(t, "success_promise"), "FAKEAGENT_EXIT_2=0"},
			exit:     0,
			code:     "complete",
			usage:    usage{0.0014, 100, 50, sessionSuccess},
			outcomes: []string{"failed", "approved"},
			check: func(t *testing.T, r claudeRun) {
				a := r.attempts()[0]
				assert.NotEmpty(t, a.ErrorSignature)
				assert.Contains(t, a.Error, "529 Overloaded")
				assert.Equal(t, 1, a.ExitCode)
				assert.Equal(t, a.ErrorSignature, r.st.LastErrorSignature)
			},
		},
		{
			name: "500 after the CLI's retries is a failed attempt, retried",
			env: []string{"FAKEAGENT_REPLAY=" + recording(t, "server_500"), "FAKEAGENT_EXIT=1",
				"FAKEAGENT_REPLAY_2=" + recording(t, "success_promise"), "FAKEAGENT_EXIT_2=0"},
			exit:     0,
			code:     "complete",
			usage:    usage{0.0014, 100, 50, sessionSuccess},
			outcomes: []string{"failed", "approved"},
			check: func(t *testing.T, r claudeRun) {
				assert.NotEmpty(t, r.attempts()[0].ErrorSignature)
				require.NotNil(t, r.st.LastFailure)
				assert.Contains(t, r.st.LastFailure.Tail, "500")
			},
		},
		{
			name:     "the CLI stopping on --max-budget-usd is budget_exceeded",
			env:      []string{"FAKEAGENT_REPLAY=" + recording(t, "max_budget_usd"), "FAKEAGENT_EXIT=1", "RUNR_BUDGET_MAX_COST_USD=0.05"},
			exit:     127,
			code:     "budget_exceeded",
			usage:    usage{0.0514, 3000, 1500, sessionBudget},
			outcomes: []string{"stopped"},
			check: func(t *testing.T, r claudeRun) {
				require.Len(t, r.argv, 1)
				assert.Equal(t, "0.05", argAfter(r.argv[0], "--max-budget-usd"))
			},
		},
		{
			name:     "the reported cost reaching max_cost_usd is budget_exceeded",
			env:      []string{"FAKEAGENT_REPLAY=" + recording(t, "tool_write"), "RUNR_BUDGET_MAX_COST_USD=0.005"},
			exit:     127,
			code:     "budget_exceeded",
			usage:    usage{0.0056, 400, 200, sessionWrite},
			outcomes: []string{"incomplete", "incomplete"},
			check: func(t *testing.T, r claudeRun) {
				assert.Equal(t, "budget.max_cost_usd", r.st.StopReason.Condition)
				require.Len(t, r.argv, 2)
				// Each call gets what is left of the budget.
				assert.Equal(t, "0.005", argAfter(r.argv[0], "--max-budget-usd"))
				assert.Equal(t, "0.0022", argAfter(r.argv[1], "--max-budget-usd"))
			},
		},
		{
			// The second call's assistant messages (101 tokens each) bring
			// the 300 of the first to 502 before its result: the call is
			// stopped there, its tokens counted (its cost is unknown: the
			// recording's model is in no price table).
			name:     "tokens reaching max_tokens inside a call stop it: budget_exceeded",
			env:      []string{"FAKEAGENT_REPLAY=" + recording(t, "tool_write"), "RUNR_BUDGET_MAX_TOKENS=500"},
			exit:     127,
			code:     "budget_exceeded",
			usage:    usage{0.0028, 400, 102, sessionWrite},
			outcomes: []string{"incomplete", "stopped"},
			check: func(t *testing.T, r claudeRun) {
				assert.Equal(t, "budget.max_tokens", r.st.StopReason.Condition)
				assert.Contains(t, r.st.StopReason.Message, "mid-call")
				assert.Empty(t, argAfter(r.argv[0], "--max-budget-usd"), "no cost budget, no cap")
			},
		},
		{
			// The first call's result brings the tokens to 300: the call
			// had ended its work, so the run stops after it.
			name:     "the reported tokens reaching max_tokens with the result stop after the call",
			env:      []string{"FAKEAGENT_REPLAY=" + recording(t, "tool_write"), "RUNR_BUDGET_MAX_TOKENS=300"},
			exit:     127,
			code:     "budget_exceeded",
			usage:    usage{0.0028, 200, 100, sessionWrite},
			outcomes: []string{"incomplete"},
			check: func(t *testing.T, r claudeRun) {
				assert.Equal(t, "budget.max_tokens", r.st.StopReason.Condition)
				assert.NotContains(t, r.st.StopReason.Message, "mid-call")
			},
		},
		{
			name: "continue_session passes the session id back",
			env: []string{"FAKEAGENT_REPLAY=" + recording(t, "tool_write"),
				"FAKEAGENT_REPLAY_2=" + recording(t, "success_promise"), "RUNR_AGENT_CONTINUE_SESSION=true"},
			exit:     0,
			code:     "complete",
			usage:    usage{0.0042, 300, 150, sessionSuccess},
			outcomes: []string{"incomplete", "approved"},
			check: func(t *testing.T, r claudeRun) {
				require.Len(t, r.argv, 2)
				assert.NotContains(t, r.argv[0], "--resume")
				assert.Equal(t, sessionWrite, argAfter(r.argv[1], "--resume"))
			},
		},
		{
			name: "without continue_session every call starts anew",
			env: []string{"FAKEAGENT_REPLAY=" + recording(t, "tool_write"),
				"FAKEAGENT_REPLAY_2=" + recording(t, "success_promise")},
			exit:     0,
			code:     "complete",
			usage:    usage{0.0042, 300, 150, sessionSuccess},
			outcomes: []string{"incomplete", "approved"},
			check: func(t *testing.T, r claudeRun) {
				require.Len(t, r.argv, 2)
				assert.NotContains(t, r.argv[1], "--resume")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t)
			env := append([]string{"IS_SANDBOX=1"}, tc.env...)
			r := runClaude(t, repo, env, append([]string{"--prompt", "write hello.txt"}, tc.args...)...)
			require.Equal(t, tc.exit, r.exit, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			require.NotNil(t, r.st.StopReason)
			assert.Equal(t, tc.code, string(r.st.StopReason.Code))
			assert.Equal(t, tc.exit, r.st.StopReason.ExitCode)

			u := r.st.Usage
			assert.InDelta(t, tc.usage.cost, u.CostUSD, 1e-9)
			assert.False(t, u.CostEstimated, "claude reports its cost")
			assert.Equal(t, tc.usage.input, u.InputTokens)
			assert.Equal(t, tc.usage.output, u.OutputTokens)
			assert.Equal(t, tc.usage.session, u.AgentSessionID)
			assert.Equal(t, "claude 0.0.0-fake (fakeagent)", r.st.Fingerprint.AgentVersion, "the fingerprint holds the agent's version")

			var outcomes []string
			for _, a := range r.attempts() {
				outcomes = append(outcomes, a.Outcome)
			}
			assert.Equal(t, tc.outcomes, outcomes)
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestClaudeAsRootNeedsIsSandbox(t *testing.T) {
	repo := newRepo(t)
	replay := "FAKEAGENT_REPLAY=" + recording(t, "success_promise")
	r := runClaude(t, repo, []string{replay}, "--prompt", "write hello.txt")
	if os.Geteuid() != 0 {
		// Claude Code accepts bypassPermissions from ordinary users.
		require.Equal(t, 0, r.exit, "stderr: %s", r.stderr)
		return
	}
	require.Equal(t, 69, r.exit, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Equal(t, "environment_invalid", string(r.st.StopReason.Code))
	assert.Contains(t, r.st.StopReason.Message, "IS_SANDBOX=1")
	assert.Contains(t, r.stdout+r.stderr, "IS_SANDBOX=1", "runr says so plainly")
	assert.Empty(t, r.argv, "claude must not be started")

	// Another permission mode needs no sandbox statement.
	r = runClaude(t, repo, []string{replay, "RUNR_AGENT_PERMISSION_MODE=acceptEdits"}, "--prompt", "write hello.txt")
	require.Equal(t, 0, r.exit, "stderr: %s", r.stderr)
	require.Len(t, r.argv, 1)
	assert.Equal(t, "acceptEdits", argAfter(r.argv[0], "--permission-mode"))
}
