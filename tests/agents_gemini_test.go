package tests

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/tests/testenv"
)

// geminiCLI finds the real Gemini CLI on PATH, or skips the test.
func geminiCLI(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("gemini")
	if err != nil {
		t.Skip("Gemini CLI is not installed: `make test-agents` installs it into .cache/agents and runs this test")
	}
	out, err := exec.Command(path, "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Gemini CLI") {
		t.Skipf("%s is not Gemini CLI (%v): `make test-agents` installs it into .cache/agents and runs this test", path, err)
	}
	return path
}

// geminiEnv is the environment that points Gemini CLI at api: a private
// HOME whose ~/.gemini/settings.json selects API-key auth (the CLI's
// headless mode accepts no other way to reach a custom base URL) and turns
// off usage statistics, GOOGLE_GEMINI_BASE_URL, a dummy GEMINI_API_KEY,
// and a private TMPDIR (the CLI writes error reports there).
func geminiEnv(t *testing.T, cli string, api *testenv.GeminiAPI) []string {
	return geminiEnvWith(t, cli, api, "")
}

// geminiEnvWith is geminiEnv with more settings, JSON members added to
// settings.json (`"model":{"maxSessionTurns":1}`).
func geminiEnvWith(t *testing.T, cli string, api *testenv.GeminiAPI, more string) []string {
	t.Helper()
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".gemini"), 0o755))
	settings := `{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}`
	if more != "" {
		settings += "," + more
	}
	settings += "}"
	require.NoError(t, os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o644))
	tmp := filepath.Join(home, "tmp")
	require.NoError(t, os.MkdirAll(tmp, 0o755))
	return []string{
		"PATH=" + filepath.Dir(cli) + string(os.PathListSeparator) + binDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home,
		"TMPDIR=" + tmp,
		"GOOGLE_GEMINI_BASE_URL=" + api.URL(),
		"GEMINI_API_KEY=test-not-a-key",
		"NO_COLOR=1",
	}
}

// geminiRouter answers the side requests of Gemini CLI (the model router's
// classifier, which asks for JSON), so that scripts only decide the main
// loop's replies.
func geminiRouter(main func(testenv.GeminiRequest) testenv.GeminiReply) func(testenv.GeminiRequest) testenv.GeminiReply {
	return func(req testenv.GeminiRequest) testenv.GeminiReply {
		if !req.HasTool("write_file") {
			return testenv.GeminiReply{Blocks: []testenv.APIBlock{{Text: `{"complexity_reasoning":"Single file, specific edit.","complexity_score":30}`}}}
		}
		return main(req)
	}
}

// geminiWriteHello scripts a model that writes target with write_file, then
// says it did and gives the completion promise.
func geminiWriteHello(target string) func(testenv.GeminiRequest) testenv.GeminiReply {
	return geminiRouter(func(req testenv.GeminiRequest) testenv.GeminiReply {
		if req.ToolResults() == 0 {
			return testenv.GeminiReply{Blocks: []testenv.APIBlock{
				{Text: "I will write the file."},
				{Tool: "write_file", Input: map[string]any{"file_path": target, "content": "hello from the model\n"}},
			}}
		}
		return testenv.GeminiReply{Blocks: []testenv.APIBlock{{Text: "Wrote hello.txt.\n<promise>COMPLETE</promise>"}}}
	})
}

// TestCLIIntegrationGemini runs the real Gemini CLI under runr against a
// scripted Gemini API: the model's write_file call makes the CLI write a
// file that verification then checks, with the tokens the CLI reports
// recorded; a quota error with a retry delay stops the run with
// worker_rate_limited and its reset time; an API that answers 401 stops it
// with worker_auth_failed.
func TestCLIIntegrationGemini(t *testing.T) {
	cli := geminiCLI(t)

	t.Run("edit and verify", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		target := filepath.Join(repo, "hello.txt")
		api := testenv.NewGeminiAPI(t, geminiWriteHello(target))
		code, out := runrDriving(t, "gemini", repo, geminiEnv(t, cli, api), "--prompt", "write hello.txt", "--verify", verifyHello)
		api.Check(t)
		require.Equal(t, 0, code, "runr output:\n%s", out)
		assert.FileExists(t, target)

		st := readRunState(t, repo)
		assert.Equal(t, "complete", string(st.StopReason.Code))
		require.Len(t, st.Verify, 1)
		assert.True(t, st.Verify[0].Passed)
		assert.NotEmpty(t, st.Usage.AgentSessionID, "the CLI's session id is kept")
		// The router's request and two main-loop requests at least.
		assert.GreaterOrEqual(t, st.Usage.InputTokens, int64(3*testenv.GeminiPromptTokens))
		assert.GreaterOrEqual(t, st.Usage.OutputTokens, int64(3*testenv.GeminiCandidatesTokens))
		assert.Zero(t, st.Usage.CostUSD, "Gemini CLI reports no cost, and no price is set")

		dir, err := latestRunDir(repo)
		require.NoError(t, err)
		log, err := os.ReadFile(filepath.Join(dir, st.Milestones[0].Attempts[0].Log))
		require.NoError(t, err)
		assert.Contains(t, string(log), `"tool_name":"write_file"`, "the output runr read is the real CLI's")
	})

	t.Run("429 with a retry delay", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		api := testenv.NewGeminiAPI(t, func(testenv.GeminiRequest) testenv.GeminiReply {
			return testenv.GeminiReply{Status: http.StatusTooManyRequests, RetryDelay: "3600s"}
		})
		start := time.Now()
		code, out := runrDriving(t, "gemini", repo, geminiEnv(t, cli, api), "--prompt", "write hello.txt")
		api.Check(t)
		require.Equal(t, 33, code, "runr output:\n%s", out)
		st := readRunState(t, repo)
		assert.Equal(t, "worker_rate_limited", string(st.StopReason.Code))
		require.NotNil(t, st.StopReason.Details)
		reset, err := time.Parse(time.RFC3339, st.StopReason.Details.ResetAt)
		require.NoError(t, err, "the stop records when the quota resets")
		assert.WithinRange(t, reset, start.Add(time.Hour-time.Second), time.Now().Add(time.Hour+time.Second))
		assert.NoFileExists(t, filepath.Join(repo, "hello.txt"))
	})

	t.Run("401", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		api := testenv.NewGeminiAPI(t, func(testenv.GeminiRequest) testenv.GeminiReply {
			return testenv.GeminiReply{Status: http.StatusUnauthorized}
		})
		code, out := runrDriving(t, "gemini", repo, geminiEnv(t, cli, api), "--prompt", "write hello.txt")
		api.Check(t)
		require.Equal(t, 34, code, "runr output:\n%s", out)
		st := readRunState(t, repo)
		assert.Equal(t, "worker_auth_failed", string(st.StopReason.Code))
		assert.Greater(t, api.Count(), 0, "the CLI reached the API")
		assert.NoFileExists(t, filepath.Join(repo, "hello.txt"))
	})
}

// geminiRecordSession is the session id of the recordings (--session-id),
// so that re-recording leaves the fixture tests' expectations as they are.
const geminiRecordSession = "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b"

// TestRecordGemini re-records internal/agents/testdata/gemini from the real
// CLI, run as runr runs it, against the scripted API:
// RUNR_RECORD=1 go test -run '^TestRecordGemini$' ./tests (with the CLI on
// PATH: `make record-agents` does both).
func TestRecordGemini(t *testing.T) {
	if os.Getenv("RUNR_RECORD") == "" {
		t.Skip("set RUNR_RECORD=1 to re-record the Gemini CLI fixtures")
	}
	cli := geminiCLI(t)
	const prompt = "Write hello.txt.\nWhen finished, print <promise>COMPLETE</promise> on its own line."
	scenarios := []struct {
		name     string
		settings string
		script   func(target string) func(testenv.GeminiRequest) testenv.GeminiReply
	}{
		{"success", "", func(string) func(testenv.GeminiRequest) testenv.GeminiReply {
			return geminiRouter(func(testenv.GeminiRequest) testenv.GeminiReply {
				return testenv.GeminiReply{Blocks: []testenv.APIBlock{{Text: "Nothing to change.\n<promise>COMPLETE</promise>"}}}
			})
		}},
		{"tool_write", "", geminiWriteHello},
		// A model that keeps calling tools, and a session limit of one turn.
		{"turn_limit", `"model":{"maxSessionTurns":1}`, func(string) func(testenv.GeminiRequest) testenv.GeminiReply {
			return geminiRouter(func(testenv.GeminiRequest) testenv.GeminiReply {
				return testenv.GeminiReply{Blocks: []testenv.APIBlock{
					{Text: "Looking around."},
					{Tool: "run_shell_command", Input: map[string]any{"command": "ls"}},
				}}
			})
		}},
		{"rate_limit_429", "", func(string) func(testenv.GeminiRequest) testenv.GeminiReply {
			return func(testenv.GeminiRequest) testenv.GeminiReply {
				return testenv.GeminiReply{Status: http.StatusTooManyRequests, RetryDelay: "3600s"}
			}
		}},
		// One attempt (general.maxAttempts), else the CLI retries a 503 ten
		// times with a backoff of up to 30s.
		{"server_503", `"general":{"maxAttempts":1}`, func(string) func(testenv.GeminiRequest) testenv.GeminiReply {
			return func(testenv.GeminiRequest) testenv.GeminiReply {
				return testenv.GeminiReply{Status: http.StatusServiceUnavailable}
			}
		}},
		{"auth_401", "", func(string) func(testenv.GeminiRequest) testenv.GeminiReply {
			return func(testenv.GeminiRequest) testenv.GeminiReply {
				return testenv.GeminiReply{Status: http.StatusUnauthorized}
			}
		}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			repo := newRepo(t)
			api := testenv.NewGeminiAPI(t, sc.script(filepath.Join(repo, "hello.txt")))
			env := append(testEnv(repo), geminiEnvWith(t, cli, api, sc.settings)...)
			saveRecordedCall(t, "gemini", sc.name+".jsonl", repo, env, prompt, "--session-id", geminiRecordSession)
			api.Check(t)
		})
	}
}

// runrDriving runs `runr run --agent kind` in repo, with env (the CLI's
// own settings) over the test environment, and returns its exit code and
// output.
func runrDriving(t *testing.T, kind, repo string, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "runr"), append([]string{"run", "--agent", kind}, args...)...)
	cmd.Dir = repo
	cmd.Env = append(append(testEnv(repo), env...),
		"RUNR_BUDGET_TIME=3m",
		"RUNR_AGENT_TIMEOUT=2m",
		"RUNR_AGENT_IDLE_TIMEOUT=90s",
	)
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

// recordedDir stands for the work tree in recorded outputs.
const recordedDir = "/home/dev/repo"

// saveRecordedCall runs the CLI of kind as runr runs it (the adapter's
// argv, stdin and environment) in dir, and writes its stdout and exit code
// to internal/agents/testdata/<kind>/<file> and <name>.exit, the fixtures
// of the adapter's unit tests. The temporary work tree's path becomes
// recordedDir in the output, so that re-recording changes no path.
func saveRecordedCall(t *testing.T, kind, file, dir string, env []string, prompt string, args ...string) {
	t.Helper()
	a, err := agents.Lookup(kind)
	require.NoError(t, err)
	inv, err := a.Invocation(agents.Request{Prompt: prompt, Dir: dir, Args: args})
	require.NoError(t, err)
	cmd := exec.Command(inv.Argv[0], inv.Argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(env, inv.Env...)
	if inv.UseStdin {
		cmd.Stdin = strings.NewReader(inv.Stdin)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	t.Logf("%s exited %d; stderr:\n%s", inv.Argv[0], code, stderr.String())
	out := filepath.Join(repoRoot(), "internal", "agents", "testdata", kind)
	require.NoError(t, os.MkdirAll(out, 0o755))
	text := strings.ReplaceAll(stdout.String(), dir, recordedDir)
	require.NoError(t, os.WriteFile(filepath.Join(out, file), []byte(text), 0o644))
	name := strings.TrimSuffix(file, filepath.Ext(file))
	require.NoError(t, os.WriteFile(filepath.Join(out, name+".exit"), []byte(strconv.Itoa(code)+"\n"), 0o644))
}
