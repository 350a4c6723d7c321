package tests

import (
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

	"github.com/runr-dev/runr/tests/testenv"
)

// opencodeCLI finds the real opencode CLI on PATH, or skips the test.
func opencodeCLI(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("opencode")
	if err != nil {
		t.Skip("opencode is not installed: `make test-agents` installs it into .cache/agents and runs this test")
	}
	out, err := exec.Command(path, "run", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "run opencode with a message") {
		t.Skipf("%s is not opencode (%v): `make test-agents` installs it into .cache/agents and runs this test", path, err)
	}
	return path
}

// Prices of the scripted model in opencode.json, USD per million tokens:
// opencode prices each step with them and reports the cost.
const (
	opencodeInputPrice     = 3.0
	opencodeOutputPrice    = 15.0
	opencodeCacheReadPrice = 0.3
)

// opencodeEnv is the environment that points opencode at api: a private
// HOME and XDG directories, with $XDG_CONFIG_HOME/opencode/opencode.json
// declaring an OpenAI-compatible provider (the bundled
// @ai-sdk/openai-compatible) whose baseURL is the scripted API, a dummy
// API key, and the provider's model as the default model.
func opencodeEnv(t *testing.T, cli string, api *testenv.CompatAPI) []string {
	t.Helper()
	home := t.TempDir()
	config := filepath.Join(home, ".config")
	require.NoError(t, os.MkdirAll(filepath.Join(config, "opencode"), 0o755))
	cfg := fmt.Sprintf(`{
  "$schema": "https://opencode.ai/config.json",
  "autoupdate": false,
  "share": "disabled",
  "provider": {
    "local": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Scripted local API",
      "options": {"baseURL": %q, "apiKey": "sk-test-not-a-key"},
      "models": {"test-model": {"name": "Test model", "cost": {"input": %v, "output": %v, "cache_read": %v}}}
    }
  },
  "model": "local/test-model",
  "small_model": "local/test-model"
}`, api.URL(), opencodeInputPrice, opencodeOutputPrice, opencodeCacheReadPrice)
	require.NoError(t, os.WriteFile(filepath.Join(config, "opencode", "opencode.json"), []byte(cfg), 0o644))
	return []string{
		"PATH=" + filepath.Dir(cli) + string(os.PathListSeparator) + binDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + config,
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
	}
}

// opencodeTitles answers opencode's side request for a session title (it
// offers no tools), so that scripts only decide the main loop's replies.
func opencodeTitles(main func(testenv.CompatRequest) testenv.CompatReply) func(testenv.CompatRequest) testenv.CompatReply {
	return func(req testenv.CompatRequest) testenv.CompatReply {
		if !req.HasTool("write") {
			return testenv.CompatReply{Blocks: []testenv.APIBlock{{Text: "Write hello.txt"}}}
		}
		return main(req)
	}
}

// opencodeWriteHello scripts a model that writes target with the write
// tool, then says it did and gives the completion promise.
func opencodeWriteHello(target string) func(testenv.CompatRequest) testenv.CompatReply {
	return opencodeTitles(func(req testenv.CompatRequest) testenv.CompatReply {
		if req.ToolResults() == 0 {
			return testenv.CompatReply{Blocks: []testenv.APIBlock{
				{Text: "I will write the file."},
				{Tool: "write", Input: map[string]any{"filePath": target, "content": "hello from the model\n"}},
			}}
		}
		return testenv.CompatReply{Blocks: []testenv.APIBlock{{Text: "Wrote hello.txt.\n<promise>COMPLETE</promise>"}}}
	})
}

// opencodeRateLimited answers 429 as OpenAI does: Retry-After short enough
// for opencode's own retries (five, each waiting what Retry-After says),
// and the request limit's reset an hour away.
func opencodeRateLimited(testenv.CompatRequest) testenv.CompatReply {
	return testenv.CompatReply{Status: http.StatusTooManyRequests, RetryAfter: 1, ResetIn: "1h0m0s"}
}

// TestCLIIntegrationOpencode runs the real opencode CLI under runr against a
// scripted OpenAI-compatible API: the model's write call makes the CLI
// write a file that verification then checks, with the tokens and the cost
// opencode reports recorded; a 429 whose limit resets in an hour stops the
// run with worker_rate_limited and the reset time; an API that answers 401
// stops it with worker_auth_failed.
func TestCLIIntegrationOpencode(t *testing.T) {
	cli := opencodeCLI(t)

	t.Run("edit and verify", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		target := filepath.Join(repo, "hello.txt")
		api := testenv.NewCompatAPI(t, opencodeWriteHello(target))
		code, out := runrDriving(t, "opencode", repo, opencodeEnv(t, cli, api), "--prompt", "write hello.txt", "--verify", verifyHello)
		api.Check(t)
		require.Equal(t, 0, code, "runr output:\n%s", out)
		assert.FileExists(t, target)

		st := readRunState(t, repo)
		assert.Equal(t, "complete", string(st.StopReason.Code))
		require.Len(t, st.Verify, 1)
		assert.True(t, st.Verify[0].Passed)
		assert.NotEmpty(t, st.Usage.AgentSessionID, "the CLI's session id is kept")
		// Two steps: the tool call and the answer. opencode counts input
		// without the cached tokens.
		in := int64(testenv.CompatPromptTokens - testenv.CompatCachedTokens)
		assert.Equal(t, 2*in, st.Usage.InputTokens)
		assert.Equal(t, int64(2*testenv.CompatCompletionTokens), st.Usage.OutputTokens)
		step := (float64(in)*opencodeInputPrice + testenv.CompatCompletionTokens*opencodeOutputPrice +
			testenv.CompatCachedTokens*opencodeCacheReadPrice) / 1e6
		assert.InDelta(t, 2*step, st.Usage.CostUSD, 1e-9, "the cost opencode reports")
		assert.False(t, st.Usage.CostEstimated)

		dir, err := latestRunDir(repo)
		require.NoError(t, err)
		log, err := os.ReadFile(filepath.Join(dir, st.Milestones[0].Attempts[0].Log))
		require.NoError(t, err)
		assert.Contains(t, string(log), `"tool":"write"`, "the output runr read is the real CLI's")
	})

	t.Run("429 with a reset time", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		api := testenv.NewCompatAPI(t, opencodeRateLimited)
		start := time.Now()
		code, out := runrDriving(t, "opencode", repo, opencodeEnv(t, cli, api), "--prompt", "write hello.txt")
		api.Check(t)
		require.Equal(t, 33, code, "runr output:\n%s", out)
		st := readRunState(t, repo)
		assert.Equal(t, "worker_rate_limited", string(st.StopReason.Code))
		require.NotNil(t, st.StopReason.Details)
		reset, err := time.Parse(time.RFC3339, st.StopReason.Details.ResetAt)
		require.NoError(t, err, "the stop records when the limit resets")
		assert.WithinRange(t, reset, start.Add(time.Hour-time.Second), time.Now().Add(time.Hour+time.Second))
		assert.NoFileExists(t, filepath.Join(repo, "hello.txt"))
	})

	t.Run("401", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		api := testenv.NewCompatAPI(t, func(testenv.CompatRequest) testenv.CompatReply {
			return testenv.CompatReply{Status: http.StatusUnauthorized}
		})
		code, out := runrDriving(t, "opencode", repo, opencodeEnv(t, cli, api), "--prompt", "write hello.txt")
		api.Check(t)
		require.Equal(t, 34, code, "runr output:\n%s", out)
		st := readRunState(t, repo)
		assert.Equal(t, "worker_auth_failed", string(st.StopReason.Code))
		assert.Greater(t, api.Count(), 0, "the CLI reached the API")
		assert.NoFileExists(t, filepath.Join(repo, "hello.txt"))
	})
}

// TestRecordOpencode re-records internal/agents/testdata/opencode from the
// real CLI, run as runr runs it, against the scripted API:
// RUNR_RECORD=1 go test -run '^TestRecordOpencode$' ./tests with the CLI on
// PATH (`make record-agents` does both).
func TestRecordOpencode(t *testing.T) {
	if os.Getenv("RUNR_RECORD") == "" {
		t.Skip("set RUNR_RECORD=1 to re-record the opencode fixtures")
	}
	cli := opencodeCLI(t)
	const prompt = "Write hello.txt.\nWhen finished, print <promise>COMPLETE</promise> on its own line."
	scenarios := []struct {
		name   string
		script func(target string) func(testenv.CompatRequest) testenv.CompatReply
	}{
		{"success", func(string) func(testenv.CompatRequest) testenv.CompatReply {
			return opencodeTitles(func(testenv.CompatRequest) testenv.CompatReply {
				return testenv.CompatReply{Blocks: []testenv.APIBlock{{Text: "Nothing to change.\n<promise>COMPLETE</promise>"}}}
			})
		}},
		{"tool_write", opencodeWriteHello},
		{"rate_limit_429", func(string) func(testenv.CompatRequest) testenv.CompatReply { return opencodeRateLimited }},
		{"auth_401", func(string) func(testenv.CompatRequest) testenv.CompatReply {
			return func(testenv.CompatRequest) testenv.CompatReply {
				return testenv.CompatReply{Status: http.StatusUnauthorized}
			}
		}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			repo := newRepo(t)
			api := testenv.NewCompatAPI(t, sc.script(filepath.Join(repo, "hello.txt")))
			env := append(testEnv(repo), opencodeEnv(t, cli, api)...)
			saveRecordedCall(t, "opencode", sc.name+".jsonl", repo, env, prompt)
			api.Check(t)
		})
	}
}
