package agents

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replayUsage feeds the recording testdata/<kind>/<name><ext> to a new
// parser of kind line by line and returns the usage so far after each line
// (at[0] before any line, at[i] after line i), and the result of the whole
// recording.
func replayUsage(t *testing.T, kind, name, ext string) (at []Usage, res Result) {
	t.Helper()
	rec := load(t, kind, name, ext)
	p := mustLookup(t, kind).NewParser(Request{Prompt: "Write hello.txt."})
	u, ok := UsageSoFar(p)
	require.True(t, ok, "%s reports usage while a call runs", kind)
	at = append(at, u)
	for _, line := range bytes.Split(bytes.TrimSuffix(rec.out, []byte("\n")), []byte("\n")) {
		require.False(t, p.Line(line), "the recording %s/%s is not cut short", kind, name)
		u, _ = UsageSoFar(p)
		at = append(at, u)
	}
	return at, p.Finish(rec.exit, lastTail(rec.out))
}

// lineOf is the number (1-based) of the n-th line of the recording that
// holds substr: the index of the usage after it in replayUsage's at.
func lineOf(t *testing.T, kind, name, ext, substr string, n int) int {
	t.Helper()
	rec := load(t, kind, name, ext)
	for i, line := range bytes.Split(rec.out, []byte("\n")) {
		if bytes.Contains(line, []byte(substr)) {
			if n--; n == 0 {
				return i + 1
			}
		}
	}
	t.Fatalf("%s/%s has no line %d with %q", kind, name, n, substr)
	return 0
}

// finalUsage is the usage a finished call's result holds, compared with the
// usage so far once the call's work is over.
func finalUsage(u Usage) Usage {
	u.Final = false
	return u
}

// opencode prints each step's tokens and cost in its step_finish: after the
// first of the two steps the call has spent one step's worth, before the
// second starts; the step that finished with reason "stop" makes the
// figures final, and they are the result's.
func TestOpencodeUsageSoFarFromTheRecording(t *testing.T) {
	const step = 0.002805 // see TestOpencodeRecordedOutputs
	at, res := replayUsage(t, "opencode", "tool_write", ".jsonl")
	first := lineOf(t, "opencode", "tool_write", ".jsonl", `"type":"step_finish"`, 1)
	assert.Equal(t, Usage{}, at[first-1], "nothing before the first step finished")
	assert.Equal(t, Usage{InputTokens: 800, OutputTokens: 25, CacheReadTokens: 100, CostUSD: step, CostKnown: true}, at[first],
		"the first step (reason tool-calls), not final")
	assert.Equal(t, at[first], at[first+1], "the second step's start adds nothing")

	last := at[len(at)-1]
	assert.True(t, last.Final, "the step that finished with reason stop is the last")
	assert.Equal(t, int64(1600), last.InputTokens)
	assert.Equal(t, int64(50), last.OutputTokens)
	assert.Equal(t, int64(200), last.CacheReadTokens)
	assert.InDelta(t, 2*step, last.CostUSD, 1e-12)
	assert.Equal(t, finalUsage(last), res.Usage(), "the result's totals are the steps' sum")
	assert.False(t, res.IsError)
	assert.Equal(t, 2, res.Turns)

	// A step that starts after a "stop" step (opencode's loop never does,
	// but the output is untrusted) makes the figures provisional again.
	p := mustLookup(t, "opencode").NewParser(Request{Prompt: "x"})
	feedLines(p,
		`{"type":"step_finish","part":{"reason":"stop","tokens":{"input":10,"output":1,"cache":{"read":0,"write":0}},"cost":0.5}}`,
		`{"type":"step_start","part":{}}`)
	u, _ := UsageSoFar(p)
	assert.Equal(t, Usage{InputTokens: 10, OutputTokens: 1, CostUSD: 0.5, CostKnown: true}, u)
}

// Codex 0.169 reports usage only in turn.completed (summed over the turn's
// requests), and codex exec runs one turn: before it there is nothing, and
// with it the call's totals, final.
func TestCodexUsageSoFarFromTheRecording(t *testing.T) {
	at, res := replayUsage(t, "codex", "success", ".jsonl")
	done := lineOf(t, "codex", "success", ".jsonl", `"type":"turn.completed"`, 1)
	for i := range done {
		assert.Equal(t, Usage{}, at[i], "no usage before turn.completed (line %d)", i)
	}
	want := Usage{InputTokens: 420, OutputTokens: 84, CacheReadTokens: 128, Final: true}
	assert.Equal(t, want, at[done])
	assert.Equal(t, finalUsage(want), res.Usage())
	assert.Empty(t, res.Model, "codex's events name no model")
}

// Gemini CLI 0.61 reports usage only in its final result event: nothing
// before it, the call's totals with it, and the model that used the most
// tokens of the result's stats.models as the call's model (its init event
// says "auto" when the router picks the model).
func TestGeminiUsageSoFarFromTheRecording(t *testing.T) {
	at, res := replayUsage(t, "gemini", "tool_write", ".jsonl")
	result := lineOf(t, "gemini", "tool_write", ".jsonl", `"type":"result"`, 1)
	require.Equal(t, len(at)-1, result, "the result is the last line")
	for i := range result {
		assert.Equal(t, Usage{}, at[i], "no usage before the result (line %d)", i)
	}
	want := Usage{InputTokens: 3000, OutputTokens: 120, CacheReadTokens: 600, Model: "gemini-3.8-flash", Final: true}
	assert.Equal(t, want, at[result])
	assert.Equal(t, finalUsage(want), res.Usage())

	// A model given with -m is named by the init event, before any usage;
	// a router setting is not a model.
	p := mustLookup(t, "gemini").NewParser(Request{Prompt: "x"})
	feedLines(p, `{"type":"init","session_id":"s","model":"gemini-2.5-pro"}`)
	u, _ := UsageSoFar(p)
	assert.Equal(t, Usage{Model: "gemini-2.5-pro"}, u)
	p = mustLookup(t, "gemini").NewParser(Request{Prompt: "x"})
	feedLines(p, `{"type":"init","session_id":"s","model":"auto-gemini-2.5"}`)
	u, _ = UsageSoFar(p)
	assert.Empty(t, u.Model)
}

// Qwen Code prints each API response's usage with its assistant message:
// after the first response (its text and its tool call, two messages, the
// usage on the second) the call has used one request's tokens; the result's
// totals count once it came.
func TestQwenUsageSoFarFromTheRecording(t *testing.T) {
	at, res := replayUsage(t, "qwen", "success", ".jsonl")
	toolUse := lineOf(t, "qwen", "success", ".jsonl", `"stop_reason":"tool_use"`, 1)
	assert.Equal(t, Usage{Model: "gpt-test"}, at[toolUse-1], "the init event and the text message name the model, no tokens yet")
	assert.Equal(t, Usage{InputTokens: 210, OutputTokens: 42, CacheReadTokens: 64, Model: "gpt-test"}, at[toolUse])
	result := lineOf(t, "qwen", "success", ".jsonl", `"type":"result"`, 1)
	assert.Equal(t, Usage{InputTokens: 420, OutputTokens: 84, CacheReadTokens: 128, Model: "gpt-test"}, at[result-1],
		"both responses before the result")
	want := Usage{InputTokens: 420, OutputTokens: 84, CacheReadTokens: 128, Model: "gpt-test", Final: true}
	assert.Equal(t, want, at[result])
	assert.Equal(t, finalUsage(want), res.Usage())
	assert.Equal(t, 2, res.Turns)
}

// The result's totals win over the messages' sum; a call cut off before its
// result counts what its messages used.
func TestQwenResultTotalsWin(t *testing.T) {
	msg := `{"type":"assistant","session_id":"s","message":{"id":"m1","model":"qwen3-coder-plus","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":100,"output_tokens":10,"cache_read_input_tokens":5}}}`
	p := mustLookup(t, "qwen").NewParser(Request{Prompt: "x"})
	feedLines(p, msg, msg) // the same message twice counts once
	u, _ := UsageSoFar(p)
	assert.Equal(t, Usage{InputTokens: 100, OutputTokens: 10, CacheReadTokens: 5, Model: "qwen3-coder-plus"}, u)
	cut := p.Finish(-1, nil)
	assert.True(t, cut.IsError)
	assert.Equal(t, finalUsage(u), cut.Usage())

	p = mustLookup(t, "qwen").NewParser(Request{Prompt: "x"})
	feedLines(p, msg, `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"done","session_id":"s",`+
		`"usage":{"input_tokens":150,"output_tokens":12,"cache_read_input_tokens":7}}`)
	u, _ = UsageSoFar(p)
	want := Usage{InputTokens: 150, OutputTokens: 12, CacheReadTokens: 7, Model: "qwen3-coder-plus", Final: true}
	assert.Equal(t, want, u)
	assert.Equal(t, finalUsage(want), p.Finish(0, nil).Usage())
}

// aider prints a Tokens line after each LLM call: before it nothing but the
// model it announced, after it the tokens and the session's cost so far,
// never final (nothing marks aider's last line).
func TestAiderUsageSoFarFromTheRecording(t *testing.T) {
	at, res := replayUsage(t, "aider", "rate_recovered", ".txt")
	tokens := lineOf(t, "aider", "rate_recovered", ".txt", "Tokens:", 1)
	assert.Equal(t, Usage{Model: "openai/gpt-5"}, at[tokens-1])
	want := Usage{InputTokens: 12345, OutputTokens: 456, CacheReadTokens: 1024, CostUSD: 0.0123, CostKnown: true, Model: "openai/gpt-5"}
	assert.Equal(t, want, at[tokens])
	assert.Equal(t, want, at[len(at)-1])
	assert.Equal(t, want, res.Usage())

	// Two LLM calls add up; the session cost is the last line's. A
	// "Main model:" line of the model's answer, after the first call,
	// names no model.
	p := mustLookup(t, "aider").NewParser(Request{Prompt: "x"})
	feedLines(p,
		"Model: anthropic/claude-sonnet-4-5 with diff edit format",
		"Tokens: 1.0k sent, 100 received. Cost: $0.01 message, $0.01 session.",
		"Main model: gpt-5-nano with whole edit format",
		"Tokens: 2.0k sent, 200 received. Cost: $0.02 message, $0.03 session.")
	u, _ := UsageSoFar(p)
	assert.Equal(t, Usage{InputTokens: 3000, OutputTokens: 300, CostUSD: 0.03, CostKnown: true, Model: "anthropic/claude-sonnet-4-5"}, u)
}
