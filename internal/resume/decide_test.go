package resume

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	policy := config.Resume{MaxAutoResumes: 3, Backoff: []time.Duration{30 * time.Second, 2 * time.Minute}, MaxWait: time.Hour}
	limit := func(kind, reset string) *state.State {
		st := stopped()
		st.StopReason = state.NewStopReason(stopreasons.WorkerRateLimited, 0, "")
		st.StopReason.Details = &stopreasons.StopDetails{LimitKind: kind, ResetAt: reset}
		return st
	}
	other := func(code stopreasons.Code) *state.State {
		st := stopped()
		st.StopReason = state.NewStopReason(code, 0, "")
		return st
	}
	signalled := func(sig os.Signal) *state.State {
		st := stopped()
		st.StopReason = &state.StopReason{Stop: stopreasons.SignalStop(sig)}
		return st
	}
	full := func(limit time.Duration) time.Duration { return limit } // the largest jitter allowed
	for _, tc := range []struct {
		name   string
		st     *state.State
		done   int
		jitter func(time.Duration) time.Duration
		policy *config.Resume
		action Action
		giveUp GiveUp
		wait   time.Duration
		jit    time.Duration
		reset  bool
		whyHas string
	}{
		{name: "usage window waits until its reset", st: limit("usage_window", "2026-01-01T12:10:00Z"),
			action: ActionWait, wait: 10 * time.Minute, reset: true, whyHas: "rate limit (usage_window) resets at"},
		{name: "plus a jitter of at most 5% of the wait", st: limit("usage_window", "2026-01-01T12:10:00Z"), jitter: full,
			action: ActionWait, wait: 10*time.Minute + 30*time.Second, jit: 30 * time.Second, reset: true},
		{name: "the jitter is at most 30s", st: limit("rate", "2026-01-01T12:50:00Z"), jitter: full,
			action: ActionWait, wait: 50*time.Minute + 30*time.Second, jit: 30 * time.Second, reset: true},
		{name: "a small wait gets a small jitter", st: limit("rate", "2026-01-01T12:00:20Z"), jitter: full,
			action: ActionWait, wait: 21 * time.Second, jit: time.Second, reset: true},
		{name: "wait and jitter never pass max_wait", st: limit("usage_window", "2026-01-01T12:59:50Z"), jitter: full,
			action: ActionWait, wait: time.Hour, jit: 10 * time.Second, reset: true},
		{name: "a reset beyond max_wait is not waited for", st: limit("usage_window", "2026-01-01T20:00:00Z"),
			action: ActionGiveUp, giveUp: GiveUpBeyondMaxWait, reset: true, whyHas: "beyond resume.max_wait (1h)"},
		{name: "a spend cap with no reset is not waited for", st: limit("spend_cap", ""),
			action: ActionGiveUp, giveUp: GiveUpSpendCap, whyHas: "spend cap"},
		{name: "a spend cap with a reset is waited for", st: limit("spend_cap", "2026-01-01T12:05:00Z"),
			action: ActionWait, wait: 5 * time.Minute, reset: true},
		{name: "a rate limit without a reset waits its backoff", st: limit("rate", ""), done: 1,
			action: ActionWait, wait: 2 * time.Minute},
		{name: "a reset in the past waits not at all", st: limit("rate", "2026-01-01T11:00:00Z"), jitter: full,
			action: ActionWait, wait: 0, reset: true},
		{name: "max_wait 0 does not cap", st: limit("usage_window", "2026-01-02T12:00:00Z"), policy: &config.Resume{MaxAutoResumes: 1},
			action: ActionWait, wait: 24 * time.Hour, reset: true},
		{name: "stalled waits its backoff", st: other(stopreasons.Stalled), action: ActionWait, wait: 30 * time.Second},
		{name: "automatic resumes used up", st: limit("rate", "2026-01-01T12:10:00Z"), done: 3,
			action: ActionGiveUp, giveUp: GiveUpMaxAutoResumes, whyHas: "max_auto_resumes (3)"},
		{name: "terminated by another process waits its backoff", st: other(stopreasons.Terminated), action: ActionWait, wait: 30 * time.Second},
		{name: "a SIGTERM to this runr ends the loop", st: signalled(syscall.SIGTERM),
			action: ActionGiveUp, giveUp: GiveUpSignal, whyHas: "signal"},
		{name: "a SIGHUP to this runr ends the loop", st: signalled(syscall.SIGHUP), action: ActionGiveUp, giveUp: GiveUpSignal},
		{name: "a SIGINT to this runr ends the loop", st: signalled(os.Interrupt), action: ActionGiveUp, giveUp: GiveUpSignal},
		{name: "a signal ends the loop before the count is looked at", st: signalled(syscall.SIGTERM), done: 3,
			action: ActionGiveUp, giveUp: GiveUpSignal},
		{name: "not auto-resumable", st: other(stopreasons.GuardViolation), action: ActionGiveUp, giveUp: GiveUpNotResumable},
		{name: "no stop", st: nil, action: ActionGiveUp, giveUp: GiveUpNotResumable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := policy
			if tc.policy != nil {
				p = *tc.policy
			}
			d := Decide(tc.st, p, tc.done, now, tc.jitter)
			assert.Equal(t, tc.action, d.Action)
			assert.Equal(t, tc.giveUp, d.GiveUp)
			assert.Equal(t, tc.wait, d.Wait)
			assert.Equal(t, tc.jit, d.Jitter)
			assert.Equal(t, tc.reset, !d.ResetAt.IsZero())
			assert.NotEmpty(t, d.Why)
			if tc.whyHas != "" {
				assert.Contains(t, d.Why, tc.whyHas)
			}
			if tc.st != nil && tc.st.StopReason.Details != nil {
				assert.Equal(t, tc.st.StopReason.Details.LimitKind, d.LimitKind)
			}
		})
	}
}

func TestJitterIsSeededAndBounded(t *testing.T) {
	a, b, c := Jitter(42), Jitter(42), Jitter(43)
	var same, differ bool
	for range 100 {
		x, y, z := a(10*time.Second), b(10*time.Second), c(10*time.Second)
		require.Equal(t, x, y, "the same seed gives the same jitter")
		require.GreaterOrEqual(t, x, time.Duration(0))
		require.LessOrEqual(t, x, 10*time.Second)
		same = same || x == z
		differ = differ || x != z
	}
	assert.True(t, differ, "another seed gives other jitters")
	assert.Equal(t, time.Duration(0), a(0))
	_ = same
}
