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

func TestCodexRecordedOutputs(t *testing.T) {
	prompt := "Fix the failing test.\nWhen done, print RUNR_STATUS: done"
	tests := []struct {
		name string
		want expect
	}{
		// Also: a noise line, a recovered error event, an unknown event
		// type, unknown fields and a truncated last line.
		{"success", expect{turns: 1, in: 24763, cacheR: 24448, out: 122,
			session: "0199a213-81c0-7800-8aa1-bbab2a035a53",
			final:   "Fixed the off-by-one in Add; tests pass.\nRUNR_STATUS: done", signal: SignalDone}},
		{"usage_limit", expect{isError: true, class: ClassRateLimit, turns: 1,
			errText: "You've hit your usage limit", session: "0199a214-0000-7000-8000-000000000001",
			resetIn: 2*time.Hour + 30*time.Minute}},
		{"auth", expect{isError: true, class: ClassAuth, turns: 1,
			errText: "401 Unauthorized", session: "0199a215-0000-7000-8000-000000000002"}},
		{"server", expect{isError: true, class: ClassServer, turns: 1,
			errText: "503 Service Unavailable", session: "0199a216-0000-7000-8000-000000000003"}},
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
