package agents

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordedSession is the sessionID of a recording's first event, read
// without the parser: opencode makes up a new one every time it is
// re-recorded.
func recordedSession(t *testing.T, rec recorded) string {
	t.Helper()
	var ev struct {
		SessionID string `json:"sessionID"`
	}
	first, _, _ := bytes.Cut(rec.out, []byte("\n"))
	require.NoError(t, json.Unmarshal(first, &ev))
	require.NotEmpty(t, ev.SessionID)
	return ev.SessionID
}

// The recordings of testdata/opencode are opencode 1.18.33's stdout against
// the scripted OpenAI-compatible API of tests/testenv (TestRecordOpencode
// re-records them). Each completion reports 900 prompt tokens, 100 of them
// cached, and 25 output tokens; opencode.json prices the model at 3, 15
// and 0.3 USD per million input, output and cache-read tokens, so a step
// costs 0.002805 USD.
func TestOpencodeRecordedOutputs(t *testing.T) {
	const step = 0.002805
	tests := []struct {
		name string
		want expect
	}{
		{"success", expect{turns: 1, in: 800, out: 25, cacheR: 100, cost: step, costKnown: true,
			final: "Nothing to change.\n<promise>COMPLETE</promise>", signal: SignalDone}},
		{"tool_write", expect{turns: 2, in: 1600, out: 50, cacheR: 200, cost: 2 * step, costKnown: true,
			final: "Wrote hello.txt.\n<promise>COMPLETE</promise>", signal: SignalDone}},
		// After its own five retries: the reset of the provider's
		// x-ratelimit-reset-requests header (1h0m0s), not Retry-After's 1s.
		{"rate_limit_429", expect{isError: true, class: ClassRateLimit, errText: "Rate limit reached for requests",
			resetIn: time.Hour}},
		{"auth_401", expect{isError: true, class: ClassAuth, errText: "Incorrect API key provided"}},
	}
	a := mustLookup(t, "opencode")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := load(t, "opencode", tt.name, ".jsonl")
			tt.want.session = recordedSession(t, rec)
			res, aborted := rec.run(a.NewParser(Request{Prompt: "Write hello.txt."}))
			assert.False(t, aborted)
			checkResult(t, tt.want, res)
		})
	}
}

// Around a recording: lines that are not JSON, an event type and fields
// runr does not know, and a truncated last line (whose cost must not
// count) change nothing.
func TestOpencodeParserIgnoresNoise(t *testing.T) {
	rec := load(t, "opencode", "tool_write", ".jsonl")
	var out bytes.Buffer
	for i, line := range bytes.SplitAfter(rec.out, []byte("\n")) {
		if i == 1 {
			out.WriteString("opencode: some log line that is not JSON\n")
			out.WriteString(`{"type":"reasoning","part":{"type":"reasoning","text":"thinking","novel":{"a":[1,2]}}}` + "\n")
		}
		out.Write(line)
	}
	out.WriteString(`{"type":"step_finish","part":{"type":"step-finish","cost":1.0,"tok`)
	res, _ := recorded{out: out.Bytes(), exit: rec.exit}.run(mustLookup(t, "opencode").NewParser(Request{Prompt: "Write hello.txt."}))
	checkResult(t, expect{turns: 2, in: 1600, out: 50, cacheR: 200, cost: 2 * 0.002805, costKnown: true,
		session: recordedSession(t, rec), final: "Wrote hello.txt.\n<promise>COMPLETE</promise>", signal: SignalDone}, res)
}

func TestOpencodeHeaderResetAt(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		h    map[string]string
		want time.Time
	}{
		{"retry-after seconds", map[string]string{"retry-after": "30"}, now.Add(30 * time.Second)},
		{"retry-after date", map[string]string{"retry-after": "Tue, 24 Nov 2026 13:00:00 GMT"}, now.Add(time.Hour)},
		{"retry-after-ms", map[string]string{"retry-after-ms": "1500"}, now.Add(2 * time.Second)},
		{"the latest of all", map[string]string{"retry-after": "1", "x-ratelimit-reset-requests": "1h0m0s",
			"x-ratelimit-reset-tokens": "6m0s"}, now.Add(time.Hour)},
		{"anthropic", map[string]string{"anthropic-ratelimit-tokens-reset": "2026-11-24T12:05:00Z"}, now.Add(5 * time.Minute)},
		{"none", map[string]string{"content-type": "application/json", "x-ratelimit-reset-requests": "soon"}, time.Time{}},
		{"past or absurd", map[string]string{"retry-after": "-5", "anthropic-ratelimit-requests-reset": "2020-01-01T00:00:00Z",
			"x-ratelimit-reset-tokens": "100000h"}, time.Time{}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, headerResetAt(tt.h, now), tt.name)
	}
}
