package tests

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/tests/testenv"
)

// claudeCLI finds the real Claude Code CLI on PATH, or skips the test.
func claudeCLI(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("claude")
	if err != nil {
		t.Skip("the Claude Code CLI is not installed: `make test-agents` installs it into .cache/agents and runs this test")
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Claude Code") {
		t.Skipf("%s is not the Claude Code CLI (%v: %s): `make test-agents` installs it into .cache/agents and runs this test", path, err, out)
	}
	return path
}

// runrWithCLI runs `runr run --agent claude` in repo with the real CLI
// talking to api.
func runrWithCLI(t *testing.T, cli, repo string, api *testenv.MessagesAPI, args ...string) (int, string) {
	t.Helper()
	return runrWithCLIEnv(t, cli, repo, api, nil, args...)
}

// runrWithCLIEnv is runrWithCLI with env added last.
func runrWithCLIEnv(t *testing.T, cli, repo string, api *testenv.MessagesAPI, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "runr"), append([]string{"run", "--agent", "claude"}, args...)...)
	cmd.Dir = repo
	cmd.Env = append(testEnv(repo),
		"PATH="+filepath.Dir(cli)+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL="+api.URL(),
		"ANTHROPIC_API_KEY=sk-ant-test-not-a-key",
		"CLAUDE_CODE_MAX_RETRIES=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"IS_SANDBOX=1",
		"RUNR_BUDGET_TIME=3m",
		"RUNR_AGENT_TIMEOUT=2m",
		"RUNR_AGENT_IDLE_TIMEOUT=90s",
	)
	cmd.Env = append(cmd.Env, env...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	}
	t.Fatalf("runr: %v", err)
	return -1, ""
}

func readRunState(t *testing.T, repo string) *state.State {
	t.Helper()
	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	require.NoError(t, checkStoppedRun(dir, nil))
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	require.NoError(t, err)
	st := &state.State{}
	require.NoError(t, json.Unmarshal(b, st))
	return st
}

// verifyHello passes once hello.txt holds what writeHello's model writes.
const verifyHello = "grep -qx 'hello from the model' hello.txt"

// writeHello scripts a model that writes target with the Write tool, then
// says it did.
func writeHello(target string) func(testenv.APIRequest) testenv.APIReply {
	return func(req testenv.APIRequest) testenv.APIReply {
		switch {
		case !req.HasTool("Write"):
			// A side request of the CLI (a title, a summary): plain text.
			return testenv.APIReply{Blocks: []testenv.APIBlock{{Text: "hello"}}}
		case req.ToolResults() == 0:
			return testenv.APIReply{Blocks: []testenv.APIBlock{
				{Text: "I will write the file."},
				{Tool: "Write", Input: map[string]any{"file_path": target, "content": "hello from the model\n"}},
			}}
		default:
			return testenv.APIReply{Blocks: []testenv.APIBlock{{Text: "Wrote hello.txt."}}}
		}
	}
}

// TestClaudeCLIIntegration runs the real Claude Code CLI under runr against
// a scripted Messages API: the model's tool call makes the CLI write a file
// that verification then checks; an overloaded API fails the attempt and
// runr's retry succeeds; an API that answers 401 stops the run with
// worker_auth_failed.
func TestClaudeCLIIntegration(t *testing.T) {
	cli := claudeCLI(t)

	t.Run("edit and verify", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		target := filepath.Join(repo, "hello.txt")
		api := testenv.NewMessagesAPI(t, writeHello(target))
		code, out := runrWithCLI(t, cli, repo, api, "--prompt", "write hello.txt", "--verify", verifyHello)
		api.Check(t)
		require.Equal(t, 0, code, "runr output:\n%s", out)
		assert.FileExists(t, target)

		st := readRunState(t, repo)
		assert.Equal(t, "complete", string(st.StopReason.Code))
		require.Len(t, st.Verify, 1)
		assert.True(t, st.Verify[0].Passed)
		assert.NotEmpty(t, st.Usage.AgentSessionID, "the CLI's session id is kept")
		// Two main-loop messages at least: the tool call and the answer.
		assert.GreaterOrEqual(t, st.Usage.InputTokens, int64(2*testenv.APIInputTokens))
		assert.GreaterOrEqual(t, st.Usage.OutputTokens, int64(2*testenv.APIOutputTokens))
		assert.False(t, st.Usage.CostEstimated)
		assert.Greater(t, st.Usage.CostUSD, 0.0, "the CLI prices its own usage")

		// The output runr read is the real CLI's.
		dir, err := latestRunDir(repo)
		require.NoError(t, err)
		log, err := os.ReadFile(filepath.Join(dir, st.Milestones[0].Attempts[0].Log))
		require.NoError(t, err)
		assert.Contains(t, string(log), `"claude_code_version"`)
	})

	t.Run("overloaded is a failed attempt, retried", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		target := filepath.Join(repo, "hello.txt")
		write := writeHello(target)
		api := testenv.NewMessagesAPI(t, func(req testenv.APIRequest) testenv.APIReply {
			// Overloaded until runr's retry, whose prompt carries the
			// feedback of the failed attempt.
			if req.HasTool("Write") && !strings.Contains(req.Text(), "Feedback from the last attempt") {
				return testenv.APIReply{Status: 529, ErrorType: "overloaded_error"}
			}
			return write(req)
		})
		code, out := runrWithCLI(t, cli, repo, api, "--prompt", "write hello.txt", "--verify", verifyHello)
		api.Check(t)
		require.Equal(t, 0, code, "runr output:\n%s", out)
		st := readRunState(t, repo)
		require.Len(t, st.Milestones[0].Attempts, 2)
		first, second := st.Milestones[0].Attempts[0], st.Milestones[0].Attempts[1]
		assert.Equal(t, state.OutcomeFailed, first.Outcome)
		assert.NotEmpty(t, first.ErrorSignature)
		assert.Contains(t, first.Error, "529")
		assert.Equal(t, state.OutcomeApproved, second.Outcome)
		assert.FileExists(t, target)
	})

	t.Run("401", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		api := testenv.NewMessagesAPI(t, func(testenv.APIRequest) testenv.APIReply {
			return testenv.APIReply{Status: http.StatusUnauthorized, ErrorType: "authentication_error"}
		})
		code, out := runrWithCLI(t, cli, repo, api, "--prompt", "write hello.txt")
		api.Check(t)
		require.Equal(t, 34, code, "runr output:\n%s", out)
		st := readRunState(t, repo)
		assert.Equal(t, "worker_auth_failed", string(st.StopReason.Code))
		assert.Greater(t, api.Count(), 0, "the CLI reached the API")
		assert.NoFileExists(t, filepath.Join(repo, "hello.txt"))
	})
}
