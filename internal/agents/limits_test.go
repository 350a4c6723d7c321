package agents

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLimitKindRecorded classifies the limits of the outputs recorded from
// the real CLIs.
func TestLimitKindRecorded(t *testing.T) {
	tests := []struct {
		kind, name, ext string
		class           Class
		limit           LimitKind
		reset           bool
	}{
		{"claude", "rate_limit_429", ".out", ClassRateLimit, LimitRate, false},
		{"claude", "overloaded_529", ".out", ClassServer, LimitOverloaded, false},
		{"claude", "server_500", ".out", ClassServer, LimitNone, false},
		{"claude", "auth_401", ".out", ClassAuth, LimitNone, false},
		{"codex", "usage_limit", ".jsonl", ClassRateLimit, LimitUsageWindow, true},
		{"codex", "rate_limit", ".jsonl", ClassRateLimit, LimitRate, false},
		{"codex", "server", ".jsonl", ClassServer, LimitOverloaded, false},
		{"gemini", "rate_limit_429", ".jsonl", ClassRateLimit, LimitUsageWindow, true}, // a quota with its retry time
		{"gemini", "server_503", ".jsonl", ClassServer, LimitOverloaded, false},
		{"opencode", "rate_limit_429", ".jsonl", ClassRateLimit, LimitRate, true},
		{"qwen", "rate_limit", ".jsonl", ClassRateLimit, LimitRate, true},
		{"aider", "rate_limit", ".txt", ClassRateLimit, LimitSpendCap, false}, // insufficient_quota: billing, no reset
		{"claude", "success_promise", ".out", ClassNone, LimitNone, false},
	}
	for _, tt := range tests {
		t.Run(tt.kind+"/"+tt.name, func(t *testing.T) {
			res, _ := load(t, tt.kind, tt.name, tt.ext).run(mustLookup(t, tt.kind).NewParser(Request{Prompt: "do it"}))
			assert.Equal(t, tt.class, res.Class)
			assert.Equal(t, tt.limit, res.Limit)
			assert.Equal(t, tt.reset, !res.ResetAt.IsZero(), "reset %v", res.ResetAt)
		})
	}
}

// claudeLimitOutput is the recorded 429 output of Claude Code with its
// result's text replaced by msg and, when event is set, a rate_limit_event
// (the CLI's structured record of a subscription limit) before the result.
func claudeLimitOutput(t *testing.T, msg, event string) recorded {
	t.Helper()
	rec := load(t, "claude", "rate_limit_429", ".out")
	const orig = "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit"
	require.Contains(t, string(rec.out), orig)
	out := strings.ReplaceAll(string(rec.out), orig, msg)
	if event != "" {
		i := strings.LastIndex(strings.TrimRight(out, "\n"), "\n")
		out = out[:i+1] + event + "\n" + out[i+1:]
	}
	return recorded{out: []byte(out), exit: rec.exit}
}

func TestClaudeUsageLimit(t *testing.T) {
	reset := time.Now().Add(3 * time.Hour).Truncate(time.Second).UTC()
	a := mustLookup(t, "claude")

	t.Run("result text with its epoch", func(t *testing.T) {
		rec := claudeLimitOutput(t, fmt.Sprintf("Claude AI usage limit reached|%d", reset.Unix()), "")
		res, _ := rec.run(a.NewParser(Request{}))
		assert.Equal(t, ClassRateLimit, res.Class)
		assert.Equal(t, LimitUsageWindow, res.Limit)
		assert.Equal(t, reset, res.ResetAt.UTC())
	})
	t.Run("rate_limit_event gives the reset", func(t *testing.T) {
		ev := fmt.Sprintf(`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":%d,"rateLimitType":"five_hour","isUsingOverage":false},"uuid":"u","session_id":"s"}`, reset.Unix())
		rec := claudeLimitOutput(t, "You've hit your session limit", ev)
		res, _ := rec.run(a.NewParser(Request{}))
		assert.Equal(t, ClassRateLimit, res.Class)
		assert.Equal(t, LimitUsageWindow, res.Limit)
		assert.Equal(t, reset, res.ResetAt.UTC())
	})
	t.Run("an allowed warning is no limit", func(t *testing.T) {
		ev := fmt.Sprintf(`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":%d,"rateLimitType":"five_hour"}}`, reset.Unix())
		rec := load(t, "claude", "success_promise", ".out")
		rec.out = append([]byte(ev+"\n"), rec.out...)
		res, _ := rec.run(a.NewParser(Request{}))
		assert.False(t, res.IsError)
		assert.Equal(t, LimitNone, res.Limit)
		assert.True(t, res.ResetAt.IsZero())
	})
	t.Run("credit balance is a spend cap", func(t *testing.T) {
		rec := claudeLimitOutput(t, "Credit balance is too low", "")
		res, _ := rec.run(a.NewParser(Request{}))
		assert.Equal(t, ClassRateLimit, res.Class)
		assert.Equal(t, LimitSpendCap, res.Limit)
		assert.True(t, res.ResetAt.IsZero())
	})
}

func TestLimitKindOf(t *testing.T) {
	at := time.Now().Add(time.Hour)
	tests := []struct {
		class Class
		text  string
		reset time.Time
		want  LimitKind
	}{
		{ClassRateLimit, "429 Too Many Requests", time.Time{}, LimitRate},
		{ClassRateLimit, "Rate limit reached for requests per min (RPM)", at, LimitRate},
		{ClassRateLimit, "Claude AI usage limit reached|1763776800", at, LimitUsageWindow},
		{ClassRateLimit, "You've hit your weekly limit", time.Time{}, LimitUsageWindow},
		{ClassRateLimit, "usage_limit_reached", at, LimitUsageWindow},
		{ClassRateLimit, "Your credit balance is too low to access the Anthropic API", time.Time{}, LimitSpendCap},
		{ClassRateLimit, "insufficient_quota: You exceeded your current quota", time.Time{}, LimitSpendCap},
		{ClassRateLimit, "You exceeded your current quota. Please retry in 3600s", at, LimitUsageWindow},
		{ClassServer, "API Error: 529 Overloaded", time.Time{}, LimitOverloaded},
		{ClassServer, "503 Service Unavailable", time.Time{}, LimitOverloaded},
		{ClassServer, "500 Internal server error", time.Time{}, LimitNone},
		{ClassError, "overloaded", time.Time{}, LimitNone},
		{ClassAuth, "credit balance", time.Time{}, LimitNone},
	}
	for _, tt := range tests {
		got := limitKindOf(Result{Class: tt.class, ErrorText: tt.text, ResetAt: tt.reset})
		assert.Equal(t, tt.want, got, "%s %q", tt.class, tt.text)
	}
	// Every adapter's result goes through the classification.
	for _, k := range Kinds() {
		p := mustLookup(t, k).NewParser(Request{Command: []string{"x"}})
		res := p.Finish(1, []byte("Error: 429 Too Many Requests: rate limit\n"))
		if res.Class == ClassRateLimit {
			assert.NotEqual(t, LimitNone, res.Limit, k)
		}
	}
}

func TestWithoutNestedSession(t *testing.T) {
	env := []string{"PATH=/bin", "CLAUDECODE=1", "CLAUDE_CODE_ENTRYPOINT=cli", "HOME=/h", "CLAUDE_CODE_SSE_PORT=1234",
		"GEMINI_CLI=1", "QWEN_CODE_NO_RELAUNCH=true", "OPENCODE=1", "CODEX_SANDBOX=seatbelt", "CLAUDECODEX=keep",
		"ANTHROPIC_API_KEY=k", "CLAUDE_CODE_USE_BEDROCK=1", "RUNR_TICK=3"}
	orig := append([]string(nil), env...)
	got := WithoutNestedSession(env)
	assert.Equal(t, []string{"PATH=/bin", "HOME=/h", "CLAUDECODEX=keep", "ANTHROPIC_API_KEY=k", "CLAUDE_CODE_USE_BEDROCK=1", "RUNR_TICK=3"}, got)
	assert.Equal(t, orig, env, "the input is not changed")
	for _, k := range NestedSessionEnv {
		assert.Empty(t, WithoutNestedSession([]string{k + "=x"}), k)
		assert.Equal(t, strings.ToUpper(k), k)
	}
	assert.NotContains(t, NestedSessionEnv, "ANTHROPIC_API_KEY")
}

type resetParser struct{ at time.Time }

func (resetParser) Line([]byte) bool { return false }
func (p resetParser) Finish(int, []byte) Result {
	return Result{IsError: true, Class: ClassRateLimit, ErrorText: "rate limited", ResetAt: p.at}
}

// A reset is recorded to the second, rounded up: a wait for it never ends
// before it (retry-after-ms, "try again in 1.5s").
func TestResetRoundsUpToTheSecond(t *testing.T) {
	base := time.Date(2026, 11, 28, 4, 38, 30, 0, time.UTC)
	for _, tt := range []struct{ at, want time.Time }{
		{base, base},
		{base.Add(time.Millisecond), base.Add(time.Second)},
		{base.Add(999 * time.Millisecond), base.Add(time.Second)},
	} {
		got := usageGuard{resetParser{tt.at}}.Finish(1, nil).ResetAt
		assert.True(t, got.Equal(tt.want), "%v: got %v, want %v", tt.at, got, tt.want)
	}
	assert.True(t, usageGuard{resetParser{}}.Finish(1, nil).ResetAt.IsZero())
}
