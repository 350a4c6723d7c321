package agents

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// geminiSession is the --session-id the recordings were made with.
const geminiSession = "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b"

// The recordings of testdata/gemini are Gemini CLI 0.61.0's stdout against
// the scripted Gemini API of tests/testenv (TestRecordGemini re-records
// them). Its router's request and each main-loop request report 1000
// prompt tokens (200 of them cached) and 40 output tokens.
func TestGeminiRecordedOutputs(t *testing.T) {
	prompt := "Write hello.txt.\nWhen finished, print <promise>COMPLETE</promise> on its own line."
	tests := []struct {
		name string
		want expect
	}{
		{"success", expect{turns: 1, in: 2000, out: 80, cacheR: 400, session: geminiSession,
			final: "Nothing to change.\n<promise>COMPLETE</promise>", signal: SignalDone}},
		{"tool_write", expect{turns: 2, in: 3000, out: 120, cacheR: 600, session: geminiSession,
			final: "Wrote hello.txt.\n<promise>COMPLETE</promise>", signal: SignalDone}},
		// The API's 429 with a RetryInfo of 3600s: the CLI does not wait
		// that long (a TerminalQuotaError), and says when to retry.
		{"rate_limit_429", expect{isError: true, class: ClassRateLimit, session: geminiSession,
			errText: "You exceeded your current quota", resetIn: time.Hour}},
		// The API's 503 UNAVAILABLE after the CLI's own retries
		// (general.maxAttempts 1 for the main loop; its router retries on).
		{"server_503", expect{isError: true, class: ClassServer, session: geminiSession,
			errText: "The model is overloaded"}},
		{"auth_401", expect{isError: true, class: ClassAuth, session: geminiSession,
			errText: "API key not valid"}},
		// maxSessionTurns 1 in settings.json: exit 53.
		{"turn_limit", expect{isError: true, class: ClassMaxTurns, turns: 1, in: 2000, out: 80, cacheR: 400,
			session: geminiSession, errText: "Reached max session turns", final: "Looking around."}},
	}
	a := mustLookup(t, "gemini")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, aborted := load(t, "gemini", tt.name, ".jsonl").run(a.NewParser(Request{Prompt: prompt}))
			assert.False(t, aborted)
			checkResult(t, tt.want, res)
		})
	}
}

// Around a recording: lines that are not JSON, an event type and fields
// runr does not know, and a truncated last line change nothing.
func TestGeminiParserIgnoresNoise(t *testing.T) {
	rec := load(t, "gemini", "tool_write", ".jsonl")
	var out bytes.Buffer
	out.WriteString("Loaded cached credentials.\n")
	for i, line := range bytes.SplitAfter(rec.out, []byte("\n")) {
		if i == 2 {
			out.WriteString(`{"type":"thought","subject":"an event type runr does not know","extra":{"a":[1]}}` + "\n")
		}
		out.Write(line)
	}
	out.WriteString(`{"type":"result","status":"error","stats":{"input_tok`)
	res, _ := recorded{out: out.Bytes(), exit: rec.exit}.run(mustLookup(t, "gemini").NewParser(Request{Prompt: "Write hello.txt."}))
	checkResult(t, expect{turns: 2, in: 3000, out: 120, cacheR: 600, session: geminiSession,
		final: "Wrote hello.txt.\n<promise>COMPLETE</promise>", signal: SignalDone}, res)
}

func TestGeminiResetAt(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		msg  string
		want time.Time
	}{
		{"Please retry in 3600s.\nSuggested retry after 3600s.", now.Add(time.Hour)},
		{"You exceeded your current quota. Please retry in 35.53s.", now.Add(36 * time.Second)},
		{"Please retry in 900ms.", now.Add(time.Second)},
		{"You have exhausted your daily quota on this model.", time.Time{}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, geminiResetAt(tt.msg, now), tt.msg)
	}
}
