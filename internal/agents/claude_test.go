package agents

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const claudePrompt = "do the task\nWhen the task is complete, print <promise>COMPLETE</promise> on a line of its own."

func TestClaudeRecordedOutputs(t *testing.T) {
	tests := []struct {
		name      string
		isError   bool
		class     Class
		cost      float64
		in, out   int64
		turns     int
		session   string
		final     string
		errText   string
		signal    Signal
		wantAbort bool
	}{
		{name: "success_promise", cost: 0.0014, in: 100, out: 50, turns: 1,
			session: "db5fa216-ec81-4cb4-bbbf-87ff2531cbf0",
			final:   "All done.\n<promise>COMPLETE</promise>", signal: SignalDone},
		{name: "tool_write", cost: 0.0028, in: 200, out: 100, turns: 2,
			session: "09c0718c-06f5-48f5-9a73-192868179973", final: "Wrote hello.txt"},
		{name: "tool_bash_fail", cost: 0.0028, in: 200, out: 100, turns: 2,
			session: "a61349bf-df0c-4621-bb85-a7d3b6e80cf7", final: "The command failed."},
		{name: "max_turns", isError: true, class: ClassMaxTurns, cost: 0.0014, in: 100, out: 50, turns: 2,
			session: "9a8bbac0-bf74-4c38-950c-015f4dc6bdb9", errText: "Reached maximum number of turns (1)"},
		{name: "auth_401", isError: true, class: ClassAuth, turns: 0, wantAbort: true,
			session: "094860d7-fdb6-4a63-bd8c-4a75ae0f418a", errText: "API error authentication_failed (HTTP 401)"},
		{name: "rate_limit_429", isError: true, class: ClassRateLimit, turns: 1,
			session: "c2203fd3-e8e3-4221-8740-08988284357b",
			final:   "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit",
			errText: "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit"},
		{name: "overloaded_529", isError: true, class: ClassServer, turns: 1,
			session: "6b7e9b50-8621-4fd9-93e6-f34ca0c13f5e", errText: "API Error: 529 Overloaded."},
		{name: "server_500", isError: true, class: ClassServer, turns: 1,
			session: "bd134fce-ffe9-45e3-9ff7-af04602fca31", errText: "API Error: 500 Internal server error."},
		{name: "json_success", cost: 0.0014, in: 100, out: 50, turns: 1,
			session: "9cfc3d04-ff2d-49a7-a9d9-1dcb2c829483", final: "Fixed it."},
		{name: "json_auth_401", isError: true, class: ClassAuth, turns: 1,
			session: "815c9443-7407-4629-94b4-82f53750f1cb", final: "Invalid API key · Fix external API key",
			errText: "Invalid API key · Fix external API key"},
	}
	a := mustLookup(t, "claude")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := load(t, "claude", tt.name, ".out")
			res, aborted := rec.run(a.NewParser(Request{Prompt: claudePrompt}))
			assert.Equal(t, tt.wantAbort, aborted, "abort")
			assert.Equal(t, tt.isError, res.IsError, "IsError")
			assert.Equal(t, tt.class, res.Class, "Class")
			assert.InDelta(t, tt.cost, res.CostUSD, 1e-9, "CostUSD")
			assert.Equal(t, tt.in, res.InputTokens, "InputTokens")
			assert.Equal(t, tt.out, res.OutputTokens, "OutputTokens")
			assert.Equal(t, tt.turns, res.Turns, "Turns")
			assert.Equal(t, tt.session, res.SessionID, "SessionID")
			if tt.final != "" || !tt.isError {
				assert.Equal(t, tt.final, res.FinalText, "FinalText")
			}
			assert.Contains(t, res.ErrorText, tt.errText, "ErrorText")
			if !tt.isError {
				assert.Empty(t, res.ErrorText)
			}
			assert.Equal(t, tt.signal, res.Signal, "Signal")
			assert.True(t, res.ResetAt.IsZero(), "these recordings name no reset time")
		})
	}
}

func TestClaudeAbortsOnlyOnAuthRetry(t *testing.T) {
	p := mustLookup(t, "claude").NewParser(Request{})
	assert.False(t, p.Line([]byte(`{"type":"system","subtype":"api_retry","attempt":1,"error_status":429,"error":"rate_limit"}`)))
	assert.False(t, p.Line([]byte(`{"type":"system","subtype":"api_retry","attempt":1,"error_status":529,"error":"overloaded"}`)))
	assert.True(t, p.Line([]byte(`{"type":"system","subtype":"api_retry","attempt":1,"error_status":401,"error":"authentication_failed"}`)))
	res := p.Finish(-1, nil)
	assert.True(t, res.IsError)
	assert.Equal(t, ClassAuth, res.Class)
}

func TestClaudeSyntheticResults(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	tests := []struct {
		name    string
		lines   []string
		exit    int
		isError bool
		class   Class
		check   func(t *testing.T, r Result)
	}{
		{
			name:  "usage limit with epoch reset",
			lines: []string{`{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1763776800","session_id":"s1","total_cost_usd":0,"num_turns":1}`},
			exit:  1, isError: true, class: ClassRateLimit,
			check: func(t *testing.T, r Result) {
				assert.Equal(t, time.Unix(1763776800, 0).UTC(), r.ResetAt)
			},
		},
		{
			name:  "usage limit with a clock time in a zone",
			lines: []string{`{"type":"result","subtype":"success","is_error":true,"result":"You've hit your limit · resets 3pm (Europe/Berlin)","session_id":"s2"}`},
			exit:  1, isError: true, class: ClassRateLimit,
			check: func(t *testing.T, r Result) {
				require.False(t, r.ResetAt.IsZero())
				local := r.ResetAt.In(berlin)
				assert.Equal(t, 15, local.Hour())
				assert.Equal(t, 0, local.Minute())
				assert.WithinDuration(t, time.Now().Add(12*time.Hour), r.ResetAt, 12*time.Hour+time.Minute)
			},
		},
		{
			name:  "budget cap",
			lines: []string{`{"type":"result","subtype":"error_max_budget_usd","is_error":true,"total_cost_usd":0.51,"num_turns":7,"session_id":"s3","errors":["Reached maximum budget ($0.5)"]}`},
			exit:  1, isError: true, class: ClassBudget,
			check: func(t *testing.T, r Result) {
				assert.InDelta(t, 0.51, r.CostUSD, 1e-9)
				assert.True(t, r.CostKnown)
				assert.Equal(t, "Reached maximum budget ($0.5)", r.ErrorText)
			},
		},
		{
			name:  "is_error with exit 0 is an error",
			lines: []string{`{"type":"result","subtype":"success","is_error":true,"result":"Something went wrong","session_id":"s4"}`},
			exit:  0, isError: true, class: ClassError,
		},
		{
			name:  "success result but a failing exit",
			lines: []string{`{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s5"}`},
			exit:  2, isError: true, class: ClassError,
			check: func(t *testing.T, r Result) { assert.Contains(t, r.ErrorText, "exited with code 2") },
		},
		{
			name: "no result, truncated last line and noise",
			lines: []string{
				"node: warning: something",
				`{"type":"system","subtype":"init","session_id":"s6"}`,
				`{"type":"assistant","message":{"content":[{"type":"text","text":"halfway"}]},"session_id":"s6"}`,
				`{"type":"result","subtype":"succ`,
			},
			exit: 1, isError: true, class: ClassError,
			check: func(t *testing.T, r Result) {
				assert.Equal(t, "s6", r.SessionID)
				assert.Equal(t, "halfway", r.FinalText)
				assert.Contains(t, r.ErrorText, "node: warning: something")
			},
		},
		{
			name:  "blocked signal in the final message",
			lines: []string{`{"type":"result","subtype":"success","is_error":false,"result":"I cannot go on.\nRUNR_STATUS: blocked: need the staging DB password","session_id":"s7","total_cost_usd":0.2}`},
			exit:  0,
			check: func(t *testing.T, r Result) {
				assert.Equal(t, SignalBlocked, r.Signal)
				assert.Equal(t, "need the staging DB password", r.SignalText)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := recorded{out: []byte(strings.Join(tt.lines, "\n")), exit: tt.exit}
			res, _ := rec.run(mustLookup(t, "claude").NewParser(Request{Prompt: claudePrompt}))
			assert.Equal(t, tt.isError, res.IsError)
			assert.Equal(t, tt.class, res.Class)
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
}

func TestClaudeInvocation(t *testing.T) {
	a := mustLookup(t, "claude")
	base := []string{"claude", "-p", "--output-format", "stream-json", "--verbose"}
	tests := []struct {
		name string
		req  Request
		want []string
	}{
		{"defaults", Request{Prompt: "p"}, append(base[:5:5], "--permission-mode", "bypassPermissions")},
		{"everything", Request{Prompt: "p", PermissionMode: "acceptEdits", Model: "opus", MaxTurns: 30,
			MaxBudgetUSD: 1.23456789, SessionID: "sid-1", Args: []string{"--add-dir", "../lib"}},
			append(base[:5:5], "--permission-mode", "acceptEdits", "--model", "opus", "--max-turns", "30",
				"--max-budget-usd", "1.2345", "--resume", "sid-1", "--add-dir", "../lib")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv, err := a.Invocation(tt.req)
			require.NoError(t, err)
			assert.Equal(t, tt.want, inv.Argv)
			assert.True(t, inv.UseStdin)
			assert.Equal(t, tt.req.Prompt, inv.Stdin)
		})
	}
}
