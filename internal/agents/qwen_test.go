package agents

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The qwen recordings are Qwen Code 0.24.4's own output against the
// scripted Chat Completions API (tests/agents_qwen_test.go, TestRecordQwen).
func TestQwenRecordedOutputs(t *testing.T) {
	const session = "5e55a0e1-0000-4000-8000-000000000001"
	tests := []struct {
		name string
		want expect
	}{
		// Two requests of 210 in (64 cached) and 42 out, summed by the
		// result; the tool call wrote the file between them.
		{"success", expect{turns: 2, in: 420, out: 84, cacheR: 128, session: session,
			final: "Wrote hello.txt.\nRUNR_STATUS: done", signal: SignalDone}},
		// After Qwen Code's own retries, honouring Retry-After: 2; "try
		// again in 2s" is the reset, from when the call ended.
		{"rate_limit", expect{isError: true, class: ClassRateLimit, turns: 1, session: session,
			errText: "[API Error: 429 Rate limit reached", resetIn: 2 * time.Second}},
		{"auth", expect{isError: true, class: ClassAuth, turns: 1, session: session,
			errText: "[API Error: 401 Incorrect API key provided"}},
	}
	a := mustLookup(t, "qwen")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, aborted := load(t, "qwen", tt.name, ".jsonl").run(a.NewParser(Request{Prompt: "write hello.txt"}))
			assert.False(t, aborted)
			checkResult(t, tt.want, res)
		})
	}
}

// By hand, from the recorded shapes: what a newer or broken CLI may print.
func TestQwenParserEdges(t *testing.T) {
	const initLine = `{"type":"system","subtype":"init","session_id":"s-1","qwen_code_version":"0.24.4"}`
	tests := []struct {
		name  string
		lines []string
		exit  int
		want  expect
	}{
		{"noise, unknown events and fields, a truncated last line", []string{
			"Loaded cached credentials.", initLine,
			`{"type":"stream_event","event":{"type":"goal_state"},"new_field":1}`,
			`{"type":"assistant","message":{"content":[{"type":"text","text":"Done.\nRUNR_STATUS: done"}]}}`,
			`{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"Done.\nRUNR_STATUS: done","usage":{"input_tokens":10,"output_tokens":5}}`,
			`{"type":"result","subtype":"success","is_error":false,"num_turns":9,"usage":{"input_tok`,
		}, 0, expect{turns: 1, in: 10, out: 5, session: "s-1", final: "Done.\nRUNR_STATUS: done", signal: SignalDone}},
		{"a success result with a failing exit", []string{initLine,
			`{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"ok"}`,
		}, 2, expect{isError: true, class: ClassError, turns: 1, session: "s-1", final: "ok", errText: "exited with code 2 after reporting success"}},
		{"no result: the API error of the last message", []string{initLine,
			`{"type":"assistant","message":{"content":[{"type":"text","text":"[API Error: 500 Internal Server Error]"}]}}`,
		}, 1, expect{isError: true, class: ClassServer, session: "s-1", errText: "without a result: [API Error: 500"}},
		{"an error result whose error is a string", []string{initLine,
			`{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":3,"error":"Reached max session turns for this session."}`,
		}, 53, expect{isError: true, class: ClassMaxTurns, turns: 3, session: "s-1", errText: "Reached max session turns"}},
		{"an error result with exit 0", []string{initLine,
			`{"type":"assistant","message":{"content":[{"type":"text","text":"[API Error: 403 quota exceeded]"}]}}`,
			`{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":1}`,
		}, 0, expect{isError: true, class: ClassAuth, turns: 1, session: "s-1", errText: "[API Error: 403"}},
		{"nothing at all", nil, 1, expect{isError: true, class: ClassError, errText: "qwen exited with code 1 without a result"}},
	}
	a := mustLookup(t, "qwen")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := recorded{out: []byte(strings.Join(tt.lines, "\n")), exit: tt.exit}
			res, _ := r.run(a.NewParser(Request{Prompt: "do it"}))
			checkResult(t, tt.want, res)
		})
	}
}

func TestQwenInvocation(t *testing.T) {
	a := mustLookup(t, "qwen")
	inv, err := a.Invocation(Request{Prompt: "fix it", Model: "qwen3-coder-plus", SessionID: "s-1", MaxTurns: 5, Args: []string{"--debug"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"qwen", "-p", "fix it", "--output-format", "stream-json", "--approval-mode", "yolo",
		"-m", "qwen3-coder-plus", "--max-session-turns", "5", "--resume", "s-1", "--debug"}, inv.Argv)
	assert.False(t, inv.UseStdin)

	for _, prompt := range []string{"- [ ] fix it", strings.Repeat("x", maxArgPrompt+1)} {
		inv, err := a.Invocation(Request{Prompt: prompt})
		require.NoError(t, err)
		assert.Equal(t, []string{"qwen", "-p", stdinPrompt, "--output-format", "stream-json", "--approval-mode", "yolo"}, inv.Argv)
		assert.True(t, inv.UseStdin)
		assert.Equal(t, prompt, inv.Stdin)
	}
	assert.False(t, a.ReportsCost())
	assert.True(t, a.ReportsTokens())
}

// Qwen Code's stream is Claude Code's shape: runr shows its tool calls and
// messages as they stream, paths relative to the work tree.
func TestQwenActivity(t *testing.T) {
	assert.Equal(t, []Activity{
		{Kind: ActivityMessage, Text: "I will write the file."},
		{Kind: ActivityTool, Tool: "write_file", Text: "hello.txt"},
		{Kind: ActivityMessage, Text: "Wrote hello.txt."},
	}, readActivities(t, "qwen", "success.jsonl", "/work/repo"))
}
