package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// claudeLimitRecording writes a Claude Code session that ends on a usage
// limit: the recorded 429 session (rate_limit_429) with its result's text
// replaced by msg and, when reset is set, the CLI's rate_limit_event
// recording the reset before the result (the format of its stream-json).
func claudeLimitRecording(t *testing.T, msg string, reset time.Time) string {
	t.Helper()
	b, err := os.ReadFile(recording(t, "rate_limit_429"))
	require.NoError(t, err)
	const orig = "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit"
	require.Contains(t, string(b), orig)
	text, err := json.Marshal(msg)
	require.NoError(t, err)
	out := strings.ReplaceAll(string(b), `"`+orig+`"`, string(text))
	if !reset.IsZero() {
		lines := strings.SplitAfter(strings.TrimRight(out, "\n"), "\n")
		ev := fmt.Sprintf(`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":%d,"rateLimitType":"five_hour","overageStatus":"rejected","isUsingOverage":false},"uuid":"9d7f1c2e-0000-4000-8000-000000000001","session_id":"c2203fd3-e8e3-4221-8740-08988284357b"}`+"\n", reset.Unix())
		out = strings.Join(lines[:len(lines)-1], "") + ev + lines[len(lines)-1] + "\n"
	}
	p := filepath.Join(t.TempDir(), "usage_limit.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(out), 0o644))
	return p
}

// eventTime is the time of a timeline event.
func eventTime(t *testing.T, ev map[string]any) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, ev["ts"].(string))
	require.NoError(t, err)
	return ts
}

// A recorded usage-limit result with a reset a few seconds ahead makes
// --auto-resume wait until that reset and continue: the run completes
// (0), the wait recorded runs to the reset, and the second call starts
// after it, by the run's own recorded times.
func TestAutoResumeWaitsForTheUsageLimitReset(t *testing.T) {
	repo := newRepo(t)
	reset := time.Now().Add(4 * time.Second).Truncate(time.Second).Add(time.Second)
	limited := claudeLimitRecording(t, fmt.Sprintf("Claude AI usage limit reached|%d", reset.Unix()), reset)
	r := runClaude(t, repo, []string{"IS_SANDBOX=1", "FAKEAGENT_REPLAY=" + limited, "FAKEAGENT_EXIT=1",
		"FAKEAGENT_REPLAY_2=" + recording(t, "success_promise"), "FAKEAGENT_EXIT_2=0"},
		"--prompt", "write hello.txt", "--auto-resume", "--json")
	require.Equal(t, 0, r.exit, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Equal(t, "complete", string(r.st.StopReason.Code))
	var summary map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &summary), "--json: one JSON object on stdout, nothing else: %q", r.stdout)

	require.Len(t, r.st.AutoResume.History, 1)
	h := r.st.AutoResume.History[0]
	assert.Equal(t, "worker_rate_limited", string(h.Reason))
	assert.False(t, h.At.Before(reset), "resumed at %s, before the reset %s", h.At, reset)

	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	var wait map[string]any
	var waitAt time.Time
	var starts []time.Time
	for _, ev := range timelineEvents(t, dir) {
		switch ev["type"] {
		case "auto_resume":
			wait, waitAt = ev["data"].(map[string]any), eventTime(t, ev)
		case "process_started":
			if ev["phase"] == "implement" {
				starts = append(starts, eventTime(t, ev))
			}
		}
	}
	require.NotNil(t, wait, "the wait is recorded")
	assert.Equal(t, reset.UTC().Format(time.RFC3339), wait["reset_at"])
	assert.Equal(t, "usage_window", wait["limit_kind"])
	assert.Contains(t, wait, "jitter_seed")
	// The wait, from when it started, runs to the reset (a small margin
	// for the milliseconds between the event's stamp and the wait's start).
	assert.GreaterOrEqual(t, wait["wait_ms"].(float64), float64(reset.Sub(waitAt).Milliseconds()-100))
	until, err := time.Parse(time.RFC3339Nano, wait["until"].(string))
	require.NoError(t, err)
	assert.False(t, until.Before(reset), "the wait ends at %s, before the reset %s", until, reset)
	require.Len(t, starts, 2, "the limited call and the one after the wait")
	assert.False(t, starts[1].Before(reset), "the second call started at %s, before the reset %s", starts[1], reset)
	assert.Contains(t, r.stderr, "rate limit (usage_window) resets at", "off a terminal, one line when the wait starts")
	assert.Equal(t, 1, strings.Count(r.stderr, "resuming then"))
}

// A limit --auto-resume does not wait for: the stop stands (33), no second
// call is made, and the output says why.
func TestAutoResumeDeclinesSpendCapAndDistantReset(t *testing.T) {
	for _, tc := range []struct {
		name, msg string
		reset     time.Time
		env       []string
		kind, why string
	}{
		{name: "spend cap with no reset", kind: "spend_cap", why: "spend cap",
			msg: "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."},
		{name: "reset beyond max_wait", kind: "usage_window", why: "beyond resume.max_wait (1m)",
			msg: "You've hit your session limit", reset: time.Now().Add(2 * time.Hour).Truncate(time.Second), env: []string{"RUNR_RESUME_MAX_WAIT=1m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t)
			env := append([]string{"IS_SANDBOX=1", "FAKEAGENT_REPLAY=" + claudeLimitRecording(t, tc.msg, tc.reset), "FAKEAGENT_EXIT=1",
				"FAKEAGENT_REPLAY_2=" + recording(t, "success_promise"), "FAKEAGENT_EXIT_2=0"}, tc.env...)
			r := runClaude(t, repo, env, "--prompt", "write hello.txt", "--auto-resume")
			require.Equal(t, 33, r.exit, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			assert.Equal(t, "worker_rate_limited", string(r.st.StopReason.Code))
			require.NotNil(t, r.st.StopReason.Details)
			assert.Equal(t, tc.kind, r.st.StopReason.Details.LimitKind)
			assert.Zero(t, r.st.AutoResume.Count, "not auto-resumed")
			assert.Len(t, r.argv, 1, "no second call")
			assert.Contains(t, r.stderr, "runr: not auto-resuming: ")
			assert.Contains(t, r.stderr, tc.why)
			if !tc.reset.IsZero() {
				assert.Equal(t, tc.reset.UTC().Format(time.RFC3339), r.st.StopReason.Details.ResetAt)
			}
		})
	}
}

// Claude Code names a usage limit's reset to the minute in its text
// ("resets 16:38") and to the second in its rate_limit_event (resetsAt):
// the stop records the more precise one, so --auto-resume does not wake
// before the reset.
func TestUsageLimitResetToTheSecond(t *testing.T) {
	repo := newRepo(t)
	reset := time.Now().UTC().Add(2 * time.Hour).Truncate(time.Minute).Add(30 * time.Second)
	msg := fmt.Sprintf("You've hit your session limit · resets %02d:%02d (UTC)", reset.Hour(), reset.Minute())
	r := runClaude(t, repo, []string{"IS_SANDBOX=1", "FAKEAGENT_REPLAY=" + claudeLimitRecording(t, msg, reset), "FAKEAGENT_EXIT=1"},
		"--prompt", "write hello.txt")
	require.Equal(t, 33, r.exit, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	require.NotNil(t, r.st.StopReason.Details)
	assert.Equal(t, reset.Format(time.RFC3339), r.st.StopReason.Details.ResetAt, "the stream's resetsAt, not the text's %02d:%02d:00", reset.Hour(), reset.Minute())
}
