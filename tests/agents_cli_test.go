package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
)

// maxAPIRequests bounds what one scenario may ask of the fake API: a CLI
// that loops gets errors and the test fails, it never spins.
const maxAPIRequests = 30

// apiRequest is what the fake API reads of a Messages API request.
type apiRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// hasTool says whether the request offers the tool name.
func (r apiRequest) hasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// text is all the text of the conversation.
func (r apiRequest) text() string {
	var b strings.Builder
	for _, m := range r.Messages {
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			b.WriteString(s + "\n")
			continue
		}
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		json.Unmarshal(m.Content, &blocks)
		for _, bl := range blocks {
			b.WriteString(bl.Text + "\n")
		}
	}
	return b.String()
}

// toolResults counts the tool_result blocks of the conversation: how many
// tool calls the CLI has already carried out.
func (r apiRequest) toolResults() int {
	n := 0
	for _, m := range r.Messages {
		var blocks []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue // a plain string
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				n++
			}
		}
	}
	return n
}

// apiBlock is one content block of a scripted answer: text, or a tool call.
type apiBlock struct {
	Text  string
	Tool  string
	Input map[string]any
}

// apiReply is the fake API's answer: an error status with its body, or a
// streamed message of blocks.
type apiReply struct {
	Status    int
	ErrorType string
	Blocks    []apiBlock
}

// fakeMessagesAPI is a scripted Anthropic Messages API on 127.0.0.1: each
// POST /v1/messages is answered by script, streamed as server-sent events
// the way the real API streams them.
type fakeMessagesAPI struct {
	t      *testing.T
	srv    *httptest.Server
	script func(apiRequest) apiReply

	scriptMu sync.Mutex // one script call at a time, so scripts may keep state
	mu       sync.Mutex
	requests int
	paths    []string
	problems []string
}

func newFakeMessagesAPI(t *testing.T, script func(apiRequest) apiReply) *fakeMessagesAPI {
	t.Helper()
	api := &fakeMessagesAPI{t: t, script: script}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	api.srv = httptest.NewUnstartedServer(http.HandlerFunc(api.serve))
	api.srv.Listener.Close()
	api.srv.Listener = l
	api.srv.Start()
	t.Cleanup(api.srv.Close)
	return api
}

func (api *fakeMessagesAPI) URL() string { return api.srv.URL }

func (api *fakeMessagesAPI) serve(w http.ResponseWriter, r *http.Request) {
	api.mu.Lock()
	api.requests++
	n := api.requests
	api.paths = append(api.paths, r.Method+" "+r.URL.Path)
	api.mu.Unlock()
	if n > maxAPIRequests {
		api.problem("more than %d requests", maxAPIRequests)
		writeAPIError(w, http.StatusInternalServerError, "api_error", "the test's request budget is spent")
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"input_tokens":100}`)
		return
	case r.Method != http.MethodPost || r.URL.Path != "/v1/messages":
		http.NotFound(w, r)
		return
	}
	var req apiRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20)).Decode(&req); err != nil {
		api.problem("request %d does not decode: %v", n, err)
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	api.scriptMu.Lock()
	reply := api.script(req)
	api.scriptMu.Unlock()
	if reply.Status != 0 {
		writeAPIError(w, reply.Status, reply.ErrorType, "scripted failure")
		return
	}
	if !req.Stream {
		api.problem("request %d is not streamed", n)
	}
	streamMessage(w, req.Model, n, reply.Blocks)
}

func (api *fakeMessagesAPI) problem(format string, args ...any) {
	api.mu.Lock()
	defer api.mu.Unlock()
	api.problems = append(api.problems, fmt.Sprintf(format, args...))
}

// check fails the test on anything the API found wrong, and shows the
// requests it saw.
func (api *fakeMessagesAPI) check(t *testing.T) {
	t.Helper()
	api.mu.Lock()
	defer api.mu.Unlock()
	t.Logf("the fake API got %d requests: %v", api.requests, api.paths)
	assert.Empty(t, api.problems, "requests: %v", api.paths)
}

func (api *fakeMessagesAPI) count() int {
	api.mu.Lock()
	defer api.mu.Unlock()
	return api.requests
}

func writeAPIError(w http.ResponseWriter, status int, typ, msg string) {
	body, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_test")
	w.WriteHeader(status)
	w.Write(body)
}

// Usage the fake API reports for every message.
const (
	apiInputTokens  = 120
	apiOutputTokens = 30
)

// streamMessage writes one assistant message as the API streams it:
// message_start, each block's start, deltas and stop, message_delta with the
// stop reason and usage, message_stop.
func streamMessage(w http.ResponseWriter, model string, n int, blocks []apiBlock) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(event string, data map[string]any) {
		data["type"] = event
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	if model == "" {
		model = "claude-sonnet-4-5"
	}
	send("message_start", map[string]any{"message": map[string]any{
		"id": fmt.Sprintf("msg_test_%d", n), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": apiInputTokens, "output_tokens": 1},
	}})
	stop := "end_turn"
	for i, b := range blocks {
		if b.Tool != "" {
			stop = "tool_use"
			send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{
				"type": "tool_use", "id": fmt.Sprintf("toolu_test_%d_%d", n, i), "name": b.Tool, "input": map[string]any{}}})
			input, _ := json.Marshal(b.Input)
			// Split the arguments in two deltas, as the API streams them.
			half := len(input) / 2
			for _, part := range []string{string(input[:half]), string(input[half:])} {
				send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
		} else {
			send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": b.Text}})
		}
		send("content_block_stop", map[string]any{"index": i})
	}
	send("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": apiOutputTokens}})
	send("message_stop", map[string]any{})
}

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
func runrWithCLI(t *testing.T, cli, repo string, api *fakeMessagesAPI, args ...string) (int, string) {
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
func writeHello(target string) func(apiRequest) apiReply {
	return func(req apiRequest) apiReply {
		switch {
		case !req.hasTool("Write"):
			// A side request of the CLI (a title, a summary): plain text.
			return apiReply{Blocks: []apiBlock{{Text: "hello"}}}
		case req.toolResults() == 0:
			return apiReply{Blocks: []apiBlock{
				{Text: "I will write the file."},
				{Tool: "Write", Input: map[string]any{"file_path": target, "content": "hello from the model\n"}},
			}}
		default:
			return apiReply{Blocks: []apiBlock{{Text: "Wrote hello.txt."}}}
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
		api := newFakeMessagesAPI(t, writeHello(target))
		code, out := runrWithCLI(t, cli, repo, api, "--prompt", "write hello.txt", "--verify", verifyHello)
		api.check(t)
		require.Equal(t, 0, code, "runr output:\n%s", out)
		assert.FileExists(t, target)

		st := readRunState(t, repo)
		assert.Equal(t, "complete", string(st.StopReason.Code))
		require.Len(t, st.Verify, 1)
		assert.True(t, st.Verify[0].Passed)
		assert.NotEmpty(t, st.Usage.AgentSessionID, "the CLI's session id is kept")
		// Two main-loop messages at least: the tool call and the answer.
		assert.GreaterOrEqual(t, st.Usage.InputTokens, int64(2*apiInputTokens))
		assert.GreaterOrEqual(t, st.Usage.OutputTokens, int64(2*apiOutputTokens))
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
		api := newFakeMessagesAPI(t, func(req apiRequest) apiReply {
			// Overloaded until runr's retry, whose prompt carries the
			// feedback of the failed attempt.
			if req.hasTool("Write") && !strings.Contains(req.text(), "Feedback from the last attempt") {
				return apiReply{Status: 529, ErrorType: "overloaded_error"}
			}
			return write(req)
		})
		code, out := runrWithCLI(t, cli, repo, api, "--prompt", "write hello.txt", "--verify", verifyHello)
		api.check(t)
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
		api := newFakeMessagesAPI(t, func(apiRequest) apiReply {
			return apiReply{Status: http.StatusUnauthorized, ErrorType: "authentication_error"}
		})
		code, out := runrWithCLI(t, cli, repo, api, "--prompt", "write hello.txt")
		api.check(t)
		require.Equal(t, 34, code, "runr output:\n%s", out)
		st := readRunState(t, repo)
		assert.Equal(t, "worker_auth_failed", string(st.StopReason.Code))
		assert.Greater(t, api.count(), 0, "the CLI reached the API")
		assert.NoFileExists(t, filepath.Join(repo, "hello.txt"))
	})
}
