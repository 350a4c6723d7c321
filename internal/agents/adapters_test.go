package agents

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// expect is what a recorded call must amount to; zero fields must be zero.
type expect struct {
	isError                 bool
	class                   Class
	errText                 string
	turns                   int
	in, out, cacheR, cacheW int64
	cost                    float64
	costKnown               bool
	session                 string
	final                   string
	signal                  Signal
	resetIn                 time.Duration // ResetAt ≈ now + resetIn; 0: no reset time
}

func checkResult(t *testing.T, want expect, got Result) {
	t.Helper()
	assert.Equal(t, want.isError, got.IsError, "IsError")
	assert.Equal(t, want.class, got.Class, "Class")
	assert.Contains(t, got.ErrorText, want.errText, "ErrorText")
	if !want.isError {
		assert.Empty(t, got.ErrorText, "ErrorText")
	}
	assert.Equal(t, want.turns, got.Turns, "Turns")
	assert.Equal(t, want.in, got.InputTokens, "InputTokens")
	assert.Equal(t, want.out, got.OutputTokens, "OutputTokens")
	assert.Equal(t, want.cacheR, got.CacheReadTokens, "CacheReadTokens")
	assert.Equal(t, want.cacheW, got.CacheWriteTokens, "CacheWriteTokens")
	assert.InDelta(t, want.cost, got.CostUSD, 1e-9, "CostUSD")
	assert.Equal(t, want.costKnown, got.CostKnown, "CostKnown")
	assert.Equal(t, want.session, got.SessionID, "SessionID")
	assert.Equal(t, want.final, got.FinalText, "FinalText")
	assert.Equal(t, want.signal, got.Signal, "Signal")
	if want.resetIn == 0 {
		assert.True(t, got.ResetAt.IsZero(), "ResetAt %v", got.ResetAt)
	} else {
		assert.WithinDuration(t, time.Now().Add(want.resetIn), got.ResetAt, time.Minute, "ResetAt")
	}
}

// The codex recordings are Codex CLI 0.169.0's own output against the
// scripted Responses API (tests/agents_codex_test.go, TestRecordCodex);
// edge_cases is written by hand.
func TestCodexRecordedOutputs(t *testing.T) {
	prompt := "write hello.txt"
	const session = "01a20fa5-0000-7000-8000-000000000001"
	tests := []struct {
		name string
		want expect
	}{
		// Two requests, each 210 in (64 cached) and 42 out, summed by
		// codex into turn.completed; the last agent_message is the final
		// text, the model-metadata warning item is no error.
		{"success", expect{turns: 1, in: 420, cacheR: 128, out: 84, session: session,
			final: "Wrote hello.txt.\nRUNR_STATUS: done", signal: SignalDone}},
		// A plain 429 after codex's own retries: no reset time in the text.
		{"rate_limit", expect{isError: true, class: ClassRateLimit, turns: 1,
			errText: "429 Too Many Requests", session: session}},
		{"auth", expect{isError: true, class: ClassAuth, turns: 1,
			errText: "401 Unauthorized: Incorrect API key provided", session: session}},
		// A 500 after codex's retries: "high demand" is its word for it.
		{"server", expect{isError: true, class: ClassServer, turns: 1,
			errText: "experiencing high demand", session: session}},
		// By hand: a noise line, a recovered error event, an unknown event
		// type, unknown fields and a truncated last line.
		{"edge_cases", expect{turns: 1, in: 24763, cacheR: 24448, out: 122,
			session: "0199a213-81c0-7800-8aa1-bbab2a035a53",
			final:   "Fixed the off-by-one in Add; tests pass.\nRUNR_STATUS: done", signal: SignalDone}},
	}
	a := mustLookup(t, "codex")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, aborted := load(t, "codex", tt.name, ".jsonl").run(a.NewParser(Request{Prompt: prompt}))
			assert.False(t, aborted)
			checkResult(t, tt.want, res)
		})
	}
}

// Codex prints the resets_at of a usage_limit_reached error as a local
// time to the minute; recorded with TZ=UTC.
func TestCodexUsageLimitReset(t *testing.T) {
	t.Setenv("TZ", "UTC")
	a := mustLookup(t, "codex")
	res, _ := load(t, "codex", "usage_limit", ".jsonl").run(a.NewParser(Request{Prompt: "write hello.txt"}))
	assert.True(t, res.IsError)
	assert.Equal(t, ClassRateLimit, res.Class)
	assert.Contains(t, res.ErrorText, "hit your usage limit")
	assert.Equal(t, 1, res.Turns)
	assert.True(t, res.ResetAt.Equal(time.Date(2026, 11, 25, 1, 21, 0, 0, time.Local)), "ResetAt %v", res.ResetAt)

	now := time.Date(2026, 11, 24, 22, 0, 0, 0, time.UTC)
	for text, want := range map[string]time.Time{
		"try again at Nov 25th, 2026 1:21 AM.":   time.Date(2026, 11, 25, 1, 21, 0, 0, time.UTC),
		"try again at Dec 1st, 2026 12:05 PM.":   time.Date(2026, 12, 1, 12, 5, 0, 0, time.UTC),
		"try again at 11:30 PM.":                 time.Date(2026, 11, 24, 23, 30, 0, 0, time.UTC),
		"try again at 9:00 AM.":                  time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC),
		"Please try again in 20s.":               now.Add(20 * time.Second),
		"exceeded retry limit, last status: 429": {},
	} {
		assert.True(t, codexResetAt(text, now).Equal(want), "%q: %v, want %v", text, codexResetAt(text, now), want)
	}
}

func TestAiderRecordedOutputs(t *testing.T) {
	tests := []struct {
		name     string
		want     expect
		finalHas string
	}{
		{"success", expect{turns: 1, in: 2300, out: 1100, cost: 0.05, costKnown: true, signal: SignalDone},
			"I'll fix the off-by-one in Add."},
		// aider exits 0 in all of these: its error lines decide.
		{"auth", expect{isError: true, class: ClassAuth, errText: "litellm.AuthenticationError"},
			"The API provider is not able to authenticate you."},
		{"rate_limit", expect{isError: true, class: ClassRateLimit, errText: "litellm.RateLimitError"},
			"check your quotas"},
		{"rate_recovered", expect{turns: 1, in: 12345, cacheR: 1024, out: 456, cost: 0.0123, costKnown: true},
			"Done: updated calc/add.go."},
	}
	a := mustLookup(t, "aider")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := load(t, "aider", tt.name, ".txt")
			res, _ := rec.run(a.NewParser(Request{Prompt: "Fix it."}))
			// aider's final text is its bounded stdout, usage lines aside.
			tt.want.final = res.FinalText
			checkResult(t, tt.want, res)
			assert.NotContains(t, res.FinalText, "Tokens:")
			assert.Contains(t, res.FinalText, tt.finalHas)
		})
	}
}

func TestAiderTokenCounts(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"2.3k", 2300}, {"1.1M", 1100000}, {"12,345", 12345}, {"987", 987}, {"", 0}, {"x", 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, parseCount(tt.in), tt.in)
	}
}

func TestCommandParser(t *testing.T) {
	prompt := "Do the thing.\nRUNR_STATUS: done\n"
	tests := []struct {
		name    string
		out     string
		exit    int
		isError bool
		signal  Signal
		sigText string
	}{
		{"promise on a line", "working\n<promise>COMPLETE</promise>\n", 0, false, SignalDone, ""},
		{"echo of the prompt never signals", "Do the thing.\nRUNR_STATUS: done\nstill working\n", 0, false, SignalNone, ""},
		{"blocked", "RUNR_STATUS: blocked - need credentials\n", 0, false, SignalBlocked, "need credentials"},
		{"failed signal is an error", "RUNR_STATUS: failed: cannot build\n", 0, true, SignalFailed, "cannot build"},
		{"exit code", "oops\n", 3, true, SignalNone, ""},
		{"promise inside a line is no signal", "say <promise>COMPLETE</promise> when done\n", 0, false, SignalNone, ""},
	}
	a := mustLookup(t, "command")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := recorded{out: []byte(tt.out), exit: tt.exit}.run(a.NewParser(Request{Prompt: prompt}))
			assert.Equal(t, tt.isError, res.IsError)
			if tt.isError {
				assert.Equal(t, ClassError, res.Class)
				assert.NotEmpty(t, res.ErrorText)
			}
			assert.Equal(t, tt.signal, res.Signal)
			assert.Equal(t, tt.sigText, res.SignalText)
			assert.Equal(t, strings.TrimRight(tt.out, "\n"), strings.TrimRight(res.FinalText, "\n"))
		})
	}
}

func TestCommandParserMemoryStaysBounded(t *testing.T) {
	p := mustLookup(t, "command").NewParser(Request{Prompt: "go"})
	require.False(t, p.Line([]byte("RUNR_STATUS: blocked need a human")))
	line := []byte(strings.Repeat("x", 1023))
	for range 10 << 10 { // 10 MiB of output
		p.Line(line)
	}
	res := p.Finish(0, nil)
	assert.LessOrEqual(t, len(res.FinalText), maxFinalText)
	assert.True(t, strings.HasSuffix(res.FinalText, string(line)+"\n"))
	assert.Equal(t, SignalBlocked, res.Signal, "a signal early in a long output is kept")
	assert.Equal(t, "need a human", res.SignalText)
}
