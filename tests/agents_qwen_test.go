package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/tests/testenv"
)

// qwenHome makes a HOME whose ~/.qwen/settings.json turns off Qwen Code's
// own rate-limit retries on the stream, its auto-update and its usage
// statistics.
func qwenHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".qwen"), 0o755))
	settings := `{
  "general": {"enableAutoUpdate": false},
  "privacy": {"usageStatisticsEnabled": false},
  "model": {"generationConfig": {"maxRetries": 0}}
}
`
	require.NoError(t, os.WriteFile(filepath.Join(home, ".qwen", "settings.json"), []byte(settings), 0o644))
	return home
}

// qwenEnv points Qwen Code at api through its documented OpenAI settings:
// OPENAI_BASE_URL, a dummy OPENAI_API_KEY and OPENAI_MODEL.
func qwenEnv(api *testenv.ChatAPI) []string {
	return []string{"OPENAI_BASE_URL=" + api.URL(), "OPENAI_API_KEY=sk-test-not-a-key", "OPENAI_MODEL=gpt-test", "TZ=UTC"}
}

// qwenWriteHello scripts a model that writes target with Qwen Code's
// write_file tool, then says it did. The main loop's requests offer the
// agent tool besides write_file; any other request (a side task of the
// CLI) gets plain text.
func qwenWriteHello(target string) func(testenv.OpenAIRequest) testenv.OpenAIReply {
	return func(req testenv.OpenAIRequest) testenv.OpenAIReply {
		switch {
		case !req.HasTool("write_file") || !req.HasTool("agent"):
			return testenv.OpenAIReply{Text: "hello"}
		case len(req.ToolOutputs) == 0:
			return testenv.OpenAIReply{Text: "I will write the file.", Calls: []testenv.OpenAICall{
				{Name: "write_file", Args: map[string]any{"file_path": target, "content": "hello from the model\n"}}}}
		default:
			return testenv.OpenAIReply{Text: "Wrote hello.txt.\nRUNR_STATUS: done"}
		}
	}
}

// TestCLIIntegrationQwen runs the real Qwen Code CLI under runr against a
// scripted Chat Completions API: the model's write_file call writes a file
// that verification checks; a 429 with Retry-After stops the run with
// worker_rate_limited and the reset in the stop's details; a 401 stops it
// with worker_auth_failed.
func TestCLIIntegrationQwen(t *testing.T) {
	cli := realCLIOnPath(t, "qwen", "the Qwen Code CLI", "0.")

	t.Run("edit and verify", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		target := filepath.Join(repo, "hello.txt")
		api := testenv.NewChatAPI(t, qwenWriteHello(target))
		code, out := runrRealCLI(t, "qwen", cli, repo, qwenHome(t), qwenEnv(api), "--prompt", "write hello.txt", "--verify", verifyHello)
		api.Check(t)
		require.Equal(t, 0, code, "runr output:\n%s", out)
		assert.FileExists(t, target)

		st := readRunState(t, repo)
		assert.Equal(t, "complete", string(st.StopReason.Code))
		require.Len(t, st.Verify, 1)
		assert.True(t, st.Verify[0].Passed)
		assert.NotEmpty(t, st.Usage.AgentSessionID, "the CLI's session id is kept")
		// The tool call and the answer at least, each with the scripted
		// usage, which Qwen Code sums into its result.
		assert.GreaterOrEqual(t, st.Usage.InputTokens, int64(2*testenv.OpenAIInputTokens))
		assert.GreaterOrEqual(t, st.Usage.OutputTokens, int64(2*testenv.OpenAIOutputTokens))
		assert.Zero(t, st.Usage.CostUSD, "Qwen Code reports no cost, and no price is set")

		dir, err := latestRunDir(repo)
		require.NoError(t, err)
		log, err := os.ReadFile(filepath.Join(dir, st.Milestones[0].Attempts[0].Log))
		require.NoError(t, err)
		assert.Contains(t, string(log), `"qwen_code_version"`, "the output runr read is the real CLI's")
	})

	t.Run("429 with Retry-After", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		api := testenv.NewChatAPI(t, func(testenv.OpenAIRequest) testenv.OpenAIReply { return testenv.RateLimitReply(2 * time.Second) })
		code, out := runrRealCLI(t, "qwen", cli, repo, qwenHome(t), qwenEnv(api), "--prompt", "write hello.txt")
		api.Check(t)
		require.Equal(t, 33, code, "runr output:\n%s", out)
		st := readRunState(t, repo)
		assert.Equal(t, "worker_rate_limited", string(st.StopReason.Code))
		require.NotNil(t, st.StopReason.Details)
		assert.Contains(t, st.StopReason.Details.AgentError, "429")
		// "Please try again in 2s.": the reset is 2s after the CLI gave up,
		// which is before the stop was recorded.
		got, err := time.Parse(time.RFC3339, st.StopReason.Details.ResetAt)
		require.NoError(t, err, "reset_at %q", st.StopReason.Details.ResetAt)
		require.NotNil(t, st.StoppedAt)
		assert.False(t, got.After(st.StoppedAt.Add(3*time.Second)), "reset %v, stopped %v", got, *st.StoppedAt)
		assert.False(t, got.Before(st.CreatedAt.Add(2*time.Second).Truncate(time.Second)), "reset %v, run created %v", got, st.CreatedAt)
	})

	t.Run("401", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		api := testenv.NewChatAPI(t, func(testenv.OpenAIRequest) testenv.OpenAIReply { return testenv.AuthFailedReply() })
		code, out := runrRealCLI(t, "qwen", cli, repo, qwenHome(t), qwenEnv(api), "--prompt", "write hello.txt")
		api.Check(t)
		require.Equal(t, 34, code, "runr output:\n%s", out)
		st := readRunState(t, repo)
		assert.Equal(t, "worker_auth_failed", string(st.StopReason.Code))
		assert.Greater(t, api.Count(), 0, "the CLI reached the API")
		assert.NoFileExists(t, filepath.Join(repo, "hello.txt"))
	})
}

// TestRecordQwen re-records internal/agents/testdata/qwen from the real CLI
// against the scripted Chat Completions API: RUNR_RECORD=1 with the CLI on
// PATH (make record-agents).
func TestRecordQwen(t *testing.T) {
	if os.Getenv("RUNR_RECORD") != "1" {
		t.Skip("RUNR_RECORD=1 re-records the fixtures of internal/agents/testdata/qwen")
	}
	cli := realCLIOnPath(t, "qwen", "the Qwen Code CLI", "0.")
	for _, name := range []string{"success", "rate_limit", "auth"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			script := map[string]func(testenv.OpenAIRequest) testenv.OpenAIReply{
				"success":    qwenWriteHello(filepath.Join(dir, "hello.txt")),
				"rate_limit": func(testenv.OpenAIRequest) testenv.OpenAIReply { return testenv.RateLimitReply(2 * time.Second) },
				"auth":       func(testenv.OpenAIRequest) testenv.OpenAIReply { return testenv.AuthFailedReply() },
			}[name]
			api := testenv.NewChatAPI(t, script)
			env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + qwenHome(t)}, qwenEnv(api)...)
			recordCLIOutput(t, "qwen", name, dir,
				[]string{cli, "-p", "write hello.txt", "--output-format", "stream-json", "--approval-mode", "yolo"},
				env, jsonFirstString("session_id"), "5e55a0e1-0000-4000-8000-000000000001")
			api.Check(t)
		})
	}
}

// TestQwenActivityInProgressAndLogs: a Qwen Code run from a recorded
// session (Claude Code's stream shape) shows its tool calls and messages as
// it goes and records them in the timeline, as a Claude Code run does.
func TestQwenActivityInProgressAndLogs(t *testing.T) {
	repo := newRepo(t)
	fake := t.TempDir()
	data, err := os.ReadFile(filepath.Join(binDir, "fakeagent"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(fake, "qwen"), data, 0o755))
	recorded, err := filepath.Abs(filepath.Join("..", "internal", "agents", "testdata", "qwen", "success.jsonl"))
	require.NoError(t, err)

	cmd := exec.Command(filepath.Join(binDir, "runr"), "run", "--agent", "qwen", "--prompt", "write hello.txt", "--verify", "true")
	cmd.Dir = repo
	cmd.Env = append(testEnv(repo), "PATH="+fake+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"FAKEAGENT_REPLAY="+recorded, "RUNR_BUDGET_TIME=2m")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
	assert.Contains(t, stderr.String(), "runr:   > write_file /work/repo/hello.txt\n", "a path outside the work tree stays absolute")
	assert.Contains(t, stderr.String(), "runr:   \" Wrote hello.txt.\n")

	code, stdout, errOut := runrCmd(t, repo, "logs", "latest", "--tick", "1")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, stdout, "  > write_file /work/repo/hello.txt\n")
	assert.Contains(t, stdout, "  \" Wrote hello.txt.\n")
}
