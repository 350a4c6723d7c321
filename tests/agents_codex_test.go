package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/tests/testenv"
)

// realCLIOnPath finds the real CLI program on PATH whose `--version` prints
// want, or skips the test.
func realCLIOnPath(t *testing.T, program, name, want string) string {
	t.Helper()
	path, err := exec.LookPath(program)
	if err != nil {
		t.Skipf("%s is not installed: `make test-agents` installs it into .cache/agents and runs this test", name)
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), want) {
		t.Skipf("%s is not %s (%v: %s): `make test-agents` installs it into .cache/agents and runs this test", path, name, err, out)
	}
	return path
}

// runrRealCLI runs `runr run --agent kind` in repo with the real CLI first on
// PATH, a private HOME and env added; it returns the exit code and output.
func runrRealCLI(t *testing.T, kind, cli, repo, home string, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "runr"), append([]string{"run", "--agent", kind}, args...)...)
	cmd.Dir = repo
	cmd.Env = append(testEnv(repo),
		"PATH="+filepath.Dir(cli)+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+home,
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

// codexHome makes a HOME whose ~/.codex/config.toml points Codex at api
// through a model provider of its own (base_url, the key in
// OPENAI_API_KEY), with Codex's own retries off so a failure reaches runr at
// once.
func codexHome(t *testing.T, api *testenv.ResponsesAPI) string {
	t.Helper()
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".codex"), 0o755))
	config := fmt.Sprintf(`model = "gpt-test"
model_provider = "runrtest"

[model_providers.runrtest]
name = "runr test"
base_url = %q
env_key = "OPENAI_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
supports_websockets = false
`, api.URL())
	require.NoError(t, os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(config), 0o644))
	return home
}

// codexEnv is what Codex needs besides its config: a dummy key.
var codexEnv = []string{"OPENAI_API_KEY=sk-test-not-a-key", "TZ=UTC"}

// codexWriteHello scripts a model that runs a shell command through Codex's
// exec_command tool to write hello.txt, then says it did.
func codexWriteHello(req testenv.OpenAIRequest) testenv.OpenAIReply {
	switch {
	case !req.HasTool("exec_command"):
		return testenv.OpenAIReply{Text: "hello"}
	case len(req.ToolOutputs) == 0:
		return testenv.OpenAIReply{Text: "I will write the file.", Calls: []testenv.OpenAICall{
			{Name: "exec_command", Args: map[string]any{"cmd": "printf 'hello from the model\\n' > hello.txt"}}}}
	default:
		return testenv.OpenAIReply{Text: "Wrote hello.txt.\nRUNR_STATUS: done"}
	}
}

// codexUsageLimit is the 429 of a plan's usage limit, with when it resets,
// as the API sends it to Codex.
func codexUsageLimit(resetsAt time.Time) testenv.OpenAIReply {
	return testenv.OpenAIReply{Status: http.StatusTooManyRequests, ErrorType: "usage_limit_reached",
		Message: "The usage limit has been reached",
		Extra: map[string]any{"plan_type": "plus", "resets_at": resetsAt.Unix(),
			"resets_in_seconds": int(time.Until(resetsAt).Seconds())}}
}

// TestCLIIntegrationCodex runs the real Codex CLI under runr against a
// scripted Responses API: the model's exec_command call writes a file that
// verification checks; a usage limit with its reset time stops the run with
// worker_rate_limited and the reset in the stop's details; a plain 429 is a
// rate limit too; a 401 stops it with worker_auth_failed.
func TestCLIIntegrationCodex(t *testing.T) {
	cli := realCLIOnPath(t, "codex", "the Codex CLI", "codex-cli")

	t.Run("edit and verify", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		api := testenv.NewResponsesAPI(t, codexWriteHello)
		code, out := runrRealCLI(t, "codex", cli, repo, codexHome(t, api), codexEnv, "--prompt", "write hello.txt", "--verify", verifyHello)
		api.Check(t)
		require.Equal(t, 0, code, "runr output:\n%s", out)
		assert.FileExists(t, filepath.Join(repo, "hello.txt"))

		st := readRunState(t, repo)
		assert.Equal(t, "complete", string(st.StopReason.Code))
		require.Len(t, st.Verify, 1)
		assert.True(t, st.Verify[0].Passed)
		assert.NotEmpty(t, st.Usage.AgentSessionID, "the CLI's thread id is kept")
		// Two requests: the tool call and the answer, each with the
		// scripted usage, which Codex sums into turn.completed.
		assert.Equal(t, int64(2*testenv.OpenAIInputTokens), st.Usage.InputTokens)
		assert.Equal(t, int64(2*testenv.OpenAIOutputTokens), st.Usage.OutputTokens)
		assert.Zero(t, st.Usage.CostUSD, "Codex reports no cost, and no price is set")

		dir, err := latestRunDir(repo)
		require.NoError(t, err)
		log, err := os.ReadFile(filepath.Join(dir, st.Milestones[0].Attempts[0].Log))
		require.NoError(t, err)
		assert.Contains(t, string(log), `"type":"command_execution"`, "the output runr read is the real CLI's")
	})

	t.Run("5xx is a failed attempt, retried", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		api := testenv.NewResponsesAPI(t, func(req testenv.OpenAIRequest) testenv.OpenAIReply {
			// Failing until runr's retry, whose prompt carries the feedback
			// of the failed attempt.
			if req.HasTool("exec_command") && !strings.Contains(req.Text(), "Feedback from the last attempt") {
				return testenv.OpenAIReply{Status: http.StatusInternalServerError, ErrorType: "server_error"}
			}
			return codexWriteHello(req)
		})
		code, out := runrRealCLI(t, "codex", cli, repo, codexHome(t, api), codexEnv, "--prompt", "write hello.txt", "--verify", verifyHello)
		api.Check(t)
		require.Equal(t, 0, code, "runr output:\n%s", out)
		st := readRunState(t, repo)
		require.Len(t, st.Milestones[0].Attempts, 2)
		first, second := st.Milestones[0].Attempts[0], st.Milestones[0].Attempts[1]
		assert.Equal(t, state.OutcomeFailed, first.Outcome)
		assert.NotEmpty(t, first.ErrorSignature)
		assert.Contains(t, first.Error, "high demand")
		assert.Equal(t, state.OutcomeApproved, second.Outcome)
		assert.FileExists(t, filepath.Join(repo, "hello.txt"))
	})

	t.Run("usage limit with its reset", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		resetsAt := time.Now().Add(3 * time.Hour).Truncate(time.Minute)
		api := testenv.NewResponsesAPI(t, func(testenv.OpenAIRequest) testenv.OpenAIReply { return codexUsageLimit(resetsAt) })
		code, out := runrRealCLI(t, "codex", cli, repo, codexHome(t, api), codexEnv, "--prompt", "write hello.txt")
		api.Check(t)
		require.Equal(t, 33, code, "runr output:\n%s", out)
		st := readRunState(t, repo)
		assert.Equal(t, "worker_rate_limited", string(st.StopReason.Code))
		require.NotNil(t, st.StopReason.Details)
		assert.Contains(t, st.StopReason.Details.AgentError, "usage limit")
		got, err := time.Parse(time.RFC3339, st.StopReason.Details.ResetAt)
		require.NoError(t, err, "reset_at %q", st.StopReason.Details.ResetAt)
		// Codex prints the time to the minute.
		assert.Equal(t, resetsAt.UTC(), got.UTC())
	})

	t.Run("429", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		api := testenv.NewResponsesAPI(t, func(testenv.OpenAIRequest) testenv.OpenAIReply { return testenv.RateLimitReply(20 * time.Second) })
		code, out := runrRealCLI(t, "codex", cli, repo, codexHome(t, api), codexEnv, "--prompt", "write hello.txt")
		api.Check(t)
		require.Equal(t, 33, code, "runr output:\n%s", out)
		st := readRunState(t, repo)
		assert.Equal(t, "worker_rate_limited", string(st.StopReason.Code))
		assert.Contains(t, st.StopReason.Details.AgentError, "429")
	})

	t.Run("401", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		api := testenv.NewResponsesAPI(t, func(testenv.OpenAIRequest) testenv.OpenAIReply { return testenv.AuthFailedReply() })
		code, out := runrRealCLI(t, "codex", cli, repo, codexHome(t, api), codexEnv, "--prompt", "write hello.txt")
		api.Check(t)
		require.Equal(t, 34, code, "runr output:\n%s", out)
		st := readRunState(t, repo)
		assert.Equal(t, "worker_auth_failed", string(st.StopReason.Code))
		assert.Greater(t, api.Count(), 0, "the CLI reached the API")
		assert.NoFileExists(t, filepath.Join(repo, "hello.txt"))
	})
}

// cliRecording is one scripted call of a CLI to record into
// internal/agents/testdata/<kind>/<name>.jsonl with its exit code.
type cliRecording struct {
	name   string
	script func(testenv.OpenAIRequest) testenv.OpenAIReply
}

// recordCLIOutput runs argv in a fresh directory with env and writes its stdout,
// scrubbed of the directory and of the ids the CLI made up (session, fixed
// to session), with its exit code.
func recordCLIOutput(t *testing.T, kind, name, dir string, argv, env []string, session func([]byte) string, fixed string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v\n%s", argv[0], err, stderr.String())
	}
	out := stdout.Bytes()
	if id := session(out); id != "" {
		out = bytes.ReplaceAll(out, []byte(id), []byte(fixed))
	}
	out = bytes.ReplaceAll(out, []byte(dir), []byte("/work/repo"))
	target := filepath.Join(repoRoot(), "internal", "agents", "testdata", kind)
	require.NoError(t, os.MkdirAll(target, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(target, name+".jsonl"), out, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(target, name+".exit"), []byte(fmt.Sprintf("%d\n", code)), 0o644))
	t.Logf("recorded %s/%s (exit %d, %d bytes)", kind, name, code, len(out))
}

// jsonFirstString is the value of the first "key":"value" in out.
func jsonFirstString(key string) func([]byte) string {
	return func(out []byte) string {
		k := []byte(`"` + key + `":"`)
		i := bytes.Index(out, k)
		if i < 0 {
			return ""
		}
		rest := out[i+len(k):]
		j := bytes.IndexByte(rest, '"')
		if j < 0 {
			return ""
		}
		return string(rest[:j])
	}
}

// TestRecordCodex re-records internal/agents/testdata/codex from the real
// CLI against the scripted Responses API: RUNR_RECORD=1 with the CLI on
// PATH (make record-agents).
func TestRecordCodex(t *testing.T) {
	if os.Getenv("RUNR_RECORD") != "1" {
		t.Skip("RUNR_RECORD=1 re-records the fixtures of internal/agents/testdata/codex")
	}
	cli := realCLIOnPath(t, "codex", "the Codex CLI", "codex-cli")
	// A reset time the fixture test can name: 2026-11-25 01:21 UTC.
	resetsAt := time.Date(2026, 11, 25, 1, 21, 0, 0, time.UTC)
	for _, r := range []cliRecording{
		{"success", codexWriteHello},
		{"usage_limit", func(testenv.OpenAIRequest) testenv.OpenAIReply { return codexUsageLimit(resetsAt) }},
		{"rate_limit", func(testenv.OpenAIRequest) testenv.OpenAIReply { return testenv.RateLimitReply(20 * time.Second) }},
		{"auth", func(testenv.OpenAIRequest) testenv.OpenAIReply { return testenv.AuthFailedReply() }},
		{"server", func(testenv.OpenAIRequest) testenv.OpenAIReply {
			return testenv.OpenAIReply{Status: http.StatusInternalServerError, ErrorType: "server_error"}
		}},
	} {
		t.Run(r.name, func(t *testing.T) {
			api := testenv.NewResponsesAPI(t, r.script)
			home := codexHome(t, api)
			dir := t.TempDir()
			env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, codexEnv...)
			recordCLIOutput(t, "codex", r.name, dir,
				[]string{cli, "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write", "write hello.txt"},
				env, jsonFirstString("thread_id"), "01a20fa5-0000-7000-8000-000000000001")
			api.Check(t)
		})
	}
}
