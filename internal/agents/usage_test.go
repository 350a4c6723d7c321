package agents

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// assistantLine is a stream-json assistant event of message id with usage.
func assistantLine(id, model, block string, in, out, cacheRead, cacheWrite int64) string {
	return fmt.Sprintf(`{"type":"assistant","message":{"id":%q,"type":"message","role":"assistant","model":%q,"content":[{"type":%q,"text":"x"}],`+
		`"usage":{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d}},"session_id":"s1"}`,
		id, model, block, in, out, cacheRead, cacheWrite)
}

func feedLines(p Parser, lines ...string) {
	for _, l := range lines {
		p.Line([]byte(l))
	}
}

func TestClaudeUsageCountsEachMessageOnce(t *testing.T) {
	p := mustLookup(t, "claude").NewParser(Request{Prompt: "task"})
	u, ok := UsageSoFar(p)
	require.True(t, ok, "claude reports usage while a call runs")
	assert.Equal(t, Usage{}, u)

	// One API response, printed as three events (thinking, text, tool use):
	// counted once, with the largest figures any of them gave.
	feedLines(p,
		`{"type":"system","subtype":"init","model":"claude-sonnet-4-5","session_id":"s1"}`,
		assistantLine("msg_1", "claude-sonnet-4-5", "thinking", 1000, 1, 200, 300),
		assistantLine("msg_1", "claude-sonnet-4-5", "text", 1000, 5, 200, 300),
		assistantLine("msg_1", "claude-sonnet-4-5", "tool_use", 1000, 40, 200, 300),
	)
	u, _ = UsageSoFar(p)
	assert.Equal(t, Usage{InputTokens: 1000, OutputTokens: 40, CacheReadTokens: 200, CacheWriteTokens: 300, Model: "claude-sonnet-4-5"}, u)

	// A tool result, the next response, then an event of the first one
	// again (it must not count twice).
	feedLines(p,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}`,
		assistantLine("msg_2", "claude-sonnet-4-5", "text", 50, 10, 1200, 0),
		assistantLine("msg_1", "claude-sonnet-4-5", "text", 1000, 99, 200, 300),
	)
	u, _ = UsageSoFar(p)
	assert.Equal(t, Usage{InputTokens: 1050, OutputTokens: 50, CacheReadTokens: 1400, CacheWriteTokens: 300, Model: "claude-sonnet-4-5"}, u)
	assert.False(t, u.CostKnown, "claude reports cost only in its result")

	// A call stopped before its result counts what its messages used.
	res := p.Finish(-1, nil)
	assert.True(t, res.IsError)
	assert.Equal(t, int64(1050), res.InputTokens)
	assert.Equal(t, int64(50), res.OutputTokens)
	assert.Equal(t, int64(1400), res.CacheReadTokens)
	assert.Equal(t, int64(300), res.CacheWriteTokens)
	assert.Equal(t, "claude-sonnet-4-5", res.Model)
	assert.False(t, res.CostKnown)
}

func TestClaudeResultTotalsWin(t *testing.T) {
	p := mustLookup(t, "claude").NewParser(Request{Prompt: "task"})
	feedLines(p,
		assistantLine("msg_1", "claude-opus-4-5", "text", 100, 1, 0, 0),
		`{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"done","session_id":"s1",`+
			`"usage":{"input_tokens":120,"output_tokens":80,"cache_read_input_tokens":7,"cache_creation_input_tokens":9},"total_cost_usd":0.0123}`,
	)
	u, _ := UsageSoFar(p)
	assert.Equal(t, Usage{InputTokens: 120, OutputTokens: 80, CacheReadTokens: 7, CacheWriteTokens: 9, CostUSD: 0.0123, CostKnown: true, Model: "claude-opus-4-5", Final: true}, u)
	res := p.Finish(0, nil)
	assert.False(t, res.IsError)
	u.Final = false
	assert.Equal(t, u, res.Usage())
}

func TestClaudeRecordingUsageMatchesItsResult(t *testing.T) {
	// The recorded tool_write session: two API responses of 100 input
	// tokens each; the result says 200 in all.
	rec := load(t, "claude", "tool_write", ".out")
	p := mustLookup(t, "claude").NewParser(Request{Prompt: "task"})
	lines := strings.Split(string(rec.out), "\n")
	var before Usage
	for _, l := range lines {
		if strings.Contains(l, `"type":"result"`) {
			before, _ = UsageSoFar(p)
		}
		p.Line([]byte(l))
	}
	assert.Equal(t, int64(200), before.InputTokens, "the messages' input before the result")
	assert.False(t, before.CostKnown)
	after, _ := UsageSoFar(p)
	assert.Equal(t, int64(200), after.InputTokens)
	assert.True(t, after.CostKnown)
	assert.InDelta(t, 0.0028, after.CostUSD, 1e-9)
}

func TestParseUsageLine(t *testing.T) {
	good := []struct {
		line string
		want Usage
	}{
		{"RUNR_USAGE: input_tokens=10 output_tokens=2", Usage{InputTokens: 10, OutputTokens: 2}},
		{"  RUNR_USAGE:   output_tokens=2\tinput_tokens=10 \r", Usage{InputTokens: 10, OutputTokens: 2}},
		{"RUNR_USAGE: input_tokens=1000 output_tokens=200 cache_read_tokens=5000 cost_usd=0.125 model=claude-sonnet-4-5",
			Usage{InputTokens: 1000, OutputTokens: 200, CacheReadTokens: 5000, CostUSD: 0.125, CostKnown: true, Model: "claude-sonnet-4-5"}},
		{"RUNR_USAGE: input_tokens=1 output_tokens=1 cache_write_tokens=3 model=openrouter/openai/gpt-5 future_field=x",
			Usage{InputTokens: 1, OutputTokens: 1, CacheWriteTokens: 3, Model: "openrouter/openai/gpt-5"}},
		{"RUNR_USAGE: input_tokens=0 output_tokens=0 cost_usd=0", Usage{CostKnown: true}},
	}
	for _, tc := range good {
		u, ok := ParseUsageLine([]byte(tc.line))
		assert.True(t, ok, tc.line)
		assert.Equal(t, tc.want, u, tc.line)
	}
	bad := []string{
		"",
		"RUNR_USAGE:",
		"RUNR_USAGE: input_tokens=10",  // output missing
		"RUNR_USAGE: output_tokens=10", // input missing
		"runr_usage: input_tokens=1 output_tokens=1",                    // not the prefix
		"echo RUNR_USAGE: input_tokens=1 output_tokens=1",               // not at the start
		"RUNR_USAGE: input_tokens=-1 output_tokens=1",                   // negative
		"RUNR_USAGE: input_tokens=1.5 output_tokens=1",                  // not a count
		"RUNR_USAGE: input_tokens=1 output_tokens=1 cost_usd=-0.5",      // negative cost
		"RUNR_USAGE: input_tokens=1 output_tokens=1 cost_usd=NaN",       // not an amount
		"RUNR_USAGE: input_tokens=1 output_tokens=1 cost_usd=+Inf",      // not an amount
		"RUNR_USAGE: input_tokens=1 output_tokens=1 cost_usd=$1",        // not a number
		"RUNR_USAGE: input_tokens=1 output_tokens=2 output_tokens=3",    // twice
		"RUNR_USAGE: input_tokens=1 output_tokens=1 model=a;rm",         // not a plain name
		"RUNR_USAGE: input_tokens=1 output_tokens=1 garbage",            // not key=value
		"RUNR_USAGE: input_tokens= output_tokens=1",                     // empty value
		"RUNR_USAGE: input_tokens=99999999999999999999 output_tokens=1", // overflow
		"RUNR_USAGE: input_tokens=1 output_tokens=1 model=" + strings.Repeat("m", maxModelName+1),
	}
	for _, line := range bad {
		_, ok := ParseUsageLine([]byte(line))
		assert.False(t, ok, "%q is not a usage line", line)
	}
}

func TestCommandUsageLastLineCounts(t *testing.T) {
	p := mustLookup(t, "command").NewParser(Request{Prompt: "task", Command: []string{"agent"}})
	u, ok := UsageSoFar(p)
	require.True(t, ok, "a command agent may report usage while it runs")
	assert.Equal(t, Usage{}, u)
	feedLines(p,
		"working",
		"RUNR_USAGE: input_tokens=100 output_tokens=10 cost_usd=0.01 model=gpt-5",
		"RUNR_USAGE: input_tokens=300 output_tokens=30 cost_usd=0.05 model=gpt-5",
	)
	u, _ = UsageSoFar(p)
	assert.Equal(t, Usage{InputTokens: 300, OutputTokens: 30, CostUSD: 0.05, CostKnown: true, Model: "gpt-5"}, u)
	// A malformed line later changes nothing: the last good one counts.
	feedLines(p, "RUNR_USAGE: input_tokens=oops output_tokens=1", "RUNR_USAGE: input_tokens=1", "RUNR_STATUS: done")
	u, _ = UsageSoFar(p)
	assert.Equal(t, int64(300), u.InputTokens)

	res := p.Finish(0, nil)
	assert.False(t, res.IsError)
	assert.Equal(t, SignalDone, res.Signal)
	assert.Equal(t, Usage{InputTokens: 300, OutputTokens: 30, CostUSD: 0.05, CostKnown: true, Model: "gpt-5"}, res.Usage())

	// A later line without cost_usd keeps the cost reported so far: a
	// call's spend never goes down (TestCommandUsageNeverGoesDown).
	p = mustLookup(t, "command").NewParser(Request{Prompt: "task", Command: []string{"agent"}})
	feedLines(p, "RUNR_USAGE: input_tokens=1 output_tokens=1 cost_usd=1", "RUNR_USAGE: input_tokens=2 output_tokens=2")
	res = p.Finish(0, nil)
	assert.True(t, res.CostKnown)
	assert.Equal(t, 1.0, res.CostUSD)
	assert.Equal(t, int64(2), res.InputTokens)
}

func TestCommandWithoutUsageLinesCountsNothing(t *testing.T) {
	p := mustLookup(t, "command").NewParser(Request{Prompt: "task", Command: []string{"agent"}})
	feedLines(p, "hello", "RUNR_STATUS: done")
	res := p.Finish(0, nil)
	assert.Equal(t, Usage{}, res.Usage())
}

func TestEveryAdapterReportsRunningUsage(t *testing.T) {
	// Each parser tells its usage so far, as much as its CLI's output
	// carries while the call runs (usage_adapters_test.go).
	for _, kind := range Kinds() {
		_, ok := UsageSoFar(mustLookup(t, kind).NewParser(Request{Prompt: "task", Command: []string{"agent"}}))
		assert.True(t, ok, kind)
	}
}

func FuzzUsageLine(f *testing.F) {
	f.Add([]byte("RUNR_USAGE: input_tokens=1 output_tokens=2 cost_usd=0.5 model=m"))
	f.Add([]byte("RUNR_USAGE: input_tokens=-1 output_tokens=2"))
	f.Add([]byte("RUNR_USAGE: cost_usd=1e308 input_tokens=1 output_tokens=1"))
	f.Fuzz(func(t *testing.T, line []byte) {
		u, ok := ParseUsageLine(line)
		if !ok {
			if u != (Usage{}) {
				t.Fatalf("a refused line gave usage %+v", u)
			}
			return
		}
		if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 || !(u.CostUSD >= 0) || (!u.CostKnown && u.CostUSD != 0) {
			t.Fatalf("usage %+v from %q", u, line)
		}
		if len(u.Model) > maxModelName {
			t.Fatalf("model of %d bytes", len(u.Model))
		}
	})
}

// The spend of a call never goes down while it runs: a RUNR_USAGE line
// with lower totals than an earlier one, or without the cost_usd an
// earlier one gave, does not hand budget back (the agent is untrusted).
func TestCommandUsageNeverGoesDown(t *testing.T) {
	p := mustLookup(t, "command").NewParser(Request{Prompt: "task", Command: []string{"agent"}})
	feedLines(p,
		"RUNR_USAGE: input_tokens=1000 output_tokens=100 cache_read_tokens=50 cost_usd=0.90 model=gpt-5",
		"RUNR_USAGE: input_tokens=1 output_tokens=1 cost_usd=0.01",
	)
	u, _ := UsageSoFar(p)
	assert.Equal(t, Usage{InputTokens: 1000, OutputTokens: 100, CacheReadTokens: 50, CostUSD: 0.90, CostKnown: true, Model: "gpt-5"}, u)

	// A line without cost_usd after one with it keeps the cost reported so
	// far; higher counts count.
	feedLines(p, "RUNR_USAGE: input_tokens=2000 output_tokens=50")
	res := p.Finish(0, nil)
	assert.Equal(t, Usage{InputTokens: 2000, OutputTokens: 100, CacheReadTokens: 50, CostUSD: 0.90, CostKnown: true, Model: "gpt-5"}, res.Usage())
}

// A result event whose usage is smaller than what the call's messages
// used (or a second, smaller result) does not lower the call's usage.
func TestClaudeResultNeverLowersTheUsage(t *testing.T) {
	p := mustLookup(t, "claude").NewParser(Request{Prompt: "task"})
	feedLines(p,
		assistantLine("msg_1", "claude-opus-4-5", "text", 5000, 700, 100, 200),
		`{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"done","session_id":"s1","usage":{},"total_cost_usd":0.5}`,
	)
	u, _ := UsageSoFar(p)
	assert.Equal(t, Usage{InputTokens: 5000, OutputTokens: 700, CacheReadTokens: 100, CacheWriteTokens: 200, CostUSD: 0.5, CostKnown: true,
		Model: "claude-opus-4-5", Final: true}, u)
	feedLines(p, `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"done","session_id":"s1",`+
		`"usage":{"input_tokens":9000,"output_tokens":1},"total_cost_usd":0.1}`)
	res := p.Finish(0, nil)
	assert.Equal(t, Usage{InputTokens: 9000, OutputTokens: 700, CacheReadTokens: 100, CacheWriteTokens: 200, CostUSD: 0.5, CostKnown: true,
		Model: "claude-opus-4-5"}, res.Usage())
}

// Counts and costs too large to add up are kept to amounts that do: two
// counts near the int64 limit would otherwise wrap to a negative total
// that no token budget reaches, and a cost near the float64 limit would
// sum to +Inf, which state.json cannot hold.
func TestUsageTooLargeToAddUpIsBounded(t *testing.T) {
	p := mustLookup(t, "command").NewParser(Request{Prompt: "task", Command: []string{"agent"}})
	feedLines(p, "RUNR_USAGE: input_tokens=9223372036854775807 output_tokens=9223372036854775807 cache_read_tokens=9223372036854775807 cost_usd=1e308")
	u, _ := UsageSoFar(p)
	assert.Equal(t, MaxUsageTokens, u.InputTokens)
	assert.Positive(t, u.Tokens())
	assert.Positive(t, u.Tokens()+u.Tokens()+u.CacheReadTokens, "still positive added to a run's totals")
	assert.Equal(t, MaxUsageCostUSD, u.CostUSD)
	res := p.Finish(0, nil)
	assert.Equal(t, MaxUsageTokens, res.OutputTokens)
	assert.Equal(t, MaxUsageCostUSD, res.CostUSD)
}

// Qwen Code's result, like Claude Code's, never lowers the usage its
// messages added up, nor an earlier result's.
func TestQwenResultNeverLowersTheUsage(t *testing.T) {
	p := mustLookup(t, "qwen").NewParser(Request{Prompt: "task"})
	feedLines(p,
		`{"type":"assistant","session_id":"s1","message":{"id":"m1","model":"qwen3-coder-plus","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":5000,"output_tokens":700,"cache_read_input_tokens":100}}}`,
		`{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"done","session_id":"s1","usage":{}}`,
	)
	u, _ := UsageSoFar(p)
	assert.Equal(t, Usage{InputTokens: 5000, OutputTokens: 700, CacheReadTokens: 100, Model: "qwen3-coder-plus", Final: true}, u)
	feedLines(p, `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"done","session_id":"s1","usage":{"input_tokens":9000,"output_tokens":1}}`)
	feedLines(p, `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"done","session_id":"s1","usage":{"input_tokens":10,"output_tokens":1}}`)
	res := p.Finish(0, nil)
	assert.Equal(t, Usage{InputTokens: 9000, OutputTokens: 700, CacheReadTokens: 100, Model: "qwen3-coder-plus"}, res.Usage())
}

// A command agent's usage stamp moves with each well-formed RUNR_USAGE
// line and with nothing else, so a caller may skip looking at the usage
// after the other lines.
func TestCommandUsageStamp(t *testing.T) {
	p := mustLookup(t, "command").NewParser(Request{Prompt: "task", Command: []string{"agent"}})
	s0, ok := UsageStamp(p)
	require.True(t, ok)
	feedLines(p, "working", "RUNR_USAGE: input_tokens=x", "RUNR_STATUS: done")
	s1, _ := UsageStamp(p)
	assert.Equal(t, s0, s1, "no well-formed usage line")
	feedLines(p, "RUNR_USAGE: input_tokens=10 output_tokens=2")
	s2, _ := UsageStamp(p)
	assert.NotEqual(t, s1, s2)
	_, ok = UsageStamp(mustLookup(t, "claude").NewParser(Request{Prompt: "task"}))
	assert.False(t, ok, "a parser without a stamp is looked at after every line")
}
