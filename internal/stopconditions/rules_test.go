package stopconditions

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// TestBuiltinsAreDesignTable holds the table of DESIGN §4 (key, default,
// stop) and §7 (what a resume resets), in its order.
func TestBuiltinsAreDesignTable(t *testing.T) {
	want := []struct {
		key   string
		def   any
		code  stopreasons.Code
		reset bool
	}{
		{"max_milestone_retries", 3, stopreasons.VerificationFailed, true},
		{"on_milestone_failure", "stop", stopreasons.VerificationFailed, false},
		{"max_consecutive_fails", 3, stopreasons.ConsecutiveFails, true},
		{"max_retry_rate", 0.5, stopreasons.RetryRateExceeded, false},
		{"max_reject_rate", 0.3, stopreasons.RejectRateExceeded, false},
		{"min_attempts_for_rates", 4, "", false},
		{"circuit_breaker", 50, stopreasons.CircuitBreaker, false},
		{"same_error", 3, stopreasons.SameErrorRepeated, true},
		{"noop", 3, stopreasons.NoopStreak, true},
		{"no_progress", 5, stopreasons.NoProgress, true},
		{"max_edge", 10, stopreasons.PhaseLoop, true},
		{"max_review_rounds", 2, stopreasons.ReviewLoopDetected, true},
	}
	require.Len(t, Builtins, len(want))
	for i, w := range want {
		b := Builtins[i]
		assert.Equal(t, w.key, b.Key)
		assert.Equal(t, w.def, b.Default, w.key)
		assert.Equal(t, w.code, b.Code, w.key)
		assert.Equal(t, w.reset, b.ResetOnResume, w.key)
	}
}

// Each rule's kind, default and field of Rules agree, so that the config,
// the plan and validation, which go by the kind, read the right value.
func TestBuiltinsAreConsistent(t *testing.T) {
	defaults := DefaultRules()
	keys := map[string]bool{}
	for _, b := range Builtins {
		assert.False(t, keys[b.Key], "%s defined twice", b.Key)
		keys[b.Key] = true
		assert.Equal(t, b.Default, b.Value(defaults), "%s: DefaultRules holds its default", b.Key)
		switch b.Kind {
		case KindCount:
			assert.IsType(t, 0, b.Default, b.Key)
		case KindRate:
			assert.IsType(t, 0.0, b.Default, b.Key)
		case KindMode:
			assert.IsType(t, "", b.Default, b.Key)
		}
		if b.Code != "" {
			assert.True(t, stopreasons.Known(b.Code), "%s fires %s, which the registry does not know", b.Key, b.Code)
		}
		if b.ResetOnResume {
			assert.NotEmpty(t, b.Counter, "%s is reset on resume: the plan names its counter", b.Key)
		}
		if b.Kind == KindCount && b.Code != "" {
			assert.NotEmpty(t, b.Zero, "%s: the plan says what 0 means", b.Key)
		}
		if b.Kind == KindCount && b.label != "" {
			assert.NotEmpty(t, b.one, "%s: its message says what a count of one counts", b.Key)
		}
	}
}

// Every rule that fires a stop is judged once, in DESIGN §4's order of stops.
func TestStopOrderHasEveryRuleThatFires(t *testing.T) {
	seen := map[*Builtin]int{}
	for _, b := range stopOrder {
		seen[b]++
		assert.NotNil(t, b.judge, "%s is in the order but has nothing to judge", b.Key)
	}
	for _, b := range Builtins {
		want := 0
		if b.Code != "" {
			want = 1
		}
		assert.Equal(t, want, seen[b], "%s in the order of stops", b.Key)
	}
	assert.Len(t, stopOrder, len(seen))
}

func TestRulesFrom(t *testing.T) {
	assert.Equal(t, DefaultRules(), RulesFrom(nil), "no stop section keeps the defaults")

	r := RulesFrom(map[string]any{
		"noop":                 float64(7),
		"max_reject_rate":      0.6,
		"on_milestone_failure": "skip",
		"same_error":           float64(0),
		"max_edge":             float64(-1), // negative: kept
		"circuit_breaker":      "many",      // not a number: kept
		"max_retry_rate":       "half",
		"success":              []any{map[string]any{"type": "never"}},
	})
	want := DefaultRules()
	want.Noop, want.MaxRejectRate, want.OnMilestoneFailure, want.SameError = 7, 0.6, OnFailureSkip, 0
	assert.Equal(t, want, r)
}

// DESIGN §11: in a parallel run the rates, consecutive_fails and the
// circuit breaker count every worker's attempts; retries, same_error, noop,
// no_progress and phase_loop (and the review's rounds) are per milestone,
// so their stops end a worker's milestone, as the milestone's own failure
// and the review's rejection do. Every other stop is the run's.
func TestMilestoneStopIsAParallelRunsMilestoneFailure(t *testing.T) {
	var across []string
	for _, b := range Builtins {
		if b.AllWorkers {
			across = append(across, b.Key)
		}
	}
	assert.Equal(t, []string{"max_consecutive_fails", "max_retry_rate", "max_reject_rate", "min_attempts_for_rates", "circuit_breaker"}, across)

	milestone := map[stopreasons.Code]bool{
		stopreasons.VerificationFailed: true, stopreasons.WorkerFailed: true, stopreasons.ChangesNotTested: true, stopreasons.ReviewRejected: true,
		stopreasons.ReviewLoopDetected: true, stopreasons.SameErrorRepeated: true, stopreasons.NoopStreak: true,
		stopreasons.NoProgress: true, stopreasons.PhaseLoop: true,
	}
	for _, r := range stopreasons.All() {
		assert.Equal(t, milestone[r.Code], MilestoneStop(r.Code), r.Code)
	}
	assert.False(t, MilestoneStop(""))
}

// Judge evaluates one rule as Evaluate does, for a caller that keeps the
// rule's counter itself.
func TestJudgeOneRule(t *testing.T) {
	r := DefaultRules()
	assert.Nil(t, MaxConsecutiveFails.Judge(&Snapshot{ConsecutiveFails: 2}, r))
	sp := MaxConsecutiveFails.Judge(&Snapshot{ConsecutiveFails: 3}, r)
	require.NotNil(t, sp)
	assert.Equal(t, Stop{Code: stopreasons.ConsecutiveFails, Condition: "max_consecutive_fails", Value: 3, Threshold: 3,
		Message: "3 consecutive failed milestones (limit 3)"}, *sp)
	r.MaxConsecutiveFails = 0
	assert.Nil(t, MaxConsecutiveFails.Judge(&Snapshot{ConsecutiveFails: 9}, r), "0 turns the rule off")
	assert.Nil(t, MinAttemptsForRates.Judge(&Snapshot{}, r), "a setting fires nothing")
}
