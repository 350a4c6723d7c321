// Package stopconditions decides when a run must stop.
//
// It decodes the custom conditions of `stop.success`, `stop.failure` and
// `stop.conditions`, holds the built-in rules and budgets, and evaluates them
// all against a Snapshot of the run in the priority order of the design
// contract. Evaluation is pure except for the conditions that must look
// outside: file_created and file_contains read a file. It never starts a
// process: a custom_script is run by the supervisor (see Scripts) and its
// result handed in through the Snapshot.
package stopconditions

import (
	"time"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// On-milestone-failure modes.
const (
	// OnFailureStop stops the run when a milestone uses up its retries.
	OnFailureStop = "stop"
	// OnFailureSkip marks the milestone failed and goes on with the next one.
	OnFailureSkip = "skip"
)

// Rules are the built-in rules under `stop:` (0 turns a count or rate rule off).
type Rules struct {
	MaxMilestoneRetries int     // default 3; 0: retry without limit
	OnMilestoneFailure  string  // "stop" | "skip"
	MaxConsecutiveFails int     // 3
	MaxRetryRate        float64 // 0.5
	MaxRejectRate       float64 // 0.3
	MinAttemptsForRates int     // 4
	CircuitBreaker      int     // 50
	SameError           int     // 3
	Noop                int     // 3
	NoProgress          int     // 5
	MaxEdge             int     // 10
	MaxReviewRounds     int     // 2

	// Success conditions complete the run; Failure and Conditions stop it
	// with condition_failed.
	Success, Failure, Conditions []Condition
}

// DefaultRules are the rules of a run whose config sets none.
func DefaultRules() Rules {
	return Rules{
		MaxMilestoneRetries: 3,
		OnMilestoneFailure:  OnFailureStop,
		MaxConsecutiveFails: 3,
		MaxRetryRate:        0.5,
		MaxRejectRate:       0.3,
		MinAttemptsForRates: 4,
		CircuitBreaker:      50,
		SameError:           3,
		Noop:                3,
		NoProgress:          5,
		MaxEdge:             10,
		MaxReviewRounds:     2,
	}
}

// Validate checks the built-in rules: rates within 0..1, counts not negative,
// on_milestone_failure stop or skip. The error is config_invalid and names
// the key as "stop.<key>".
func (r Rules) Validate() error {
	counts := []struct {
		key string
		v   int
	}{
		{"max_milestone_retries", r.MaxMilestoneRetries},
		{"max_consecutive_fails", r.MaxConsecutiveFails},
		{"min_attempts_for_rates", r.MinAttemptsForRates},
		{"circuit_breaker", r.CircuitBreaker},
		{"same_error", r.SameError},
		{"noop", r.Noop},
		{"no_progress", r.NoProgress},
		{"max_edge", r.MaxEdge},
		{"max_review_rounds", r.MaxReviewRounds},
	}
	for _, c := range counts {
		if c.v < 0 {
			return stopreasons.Errorf(stopreasons.ConfigInvalid,
				"stop.%s: %d is negative; use a count of 0 or more (0 turns the rule off)", c.key, c.v)
		}
	}
	rates := []struct {
		key string
		v   float64
	}{
		{"max_retry_rate", r.MaxRetryRate},
		{"max_reject_rate", r.MaxRejectRate},
	}
	for _, c := range rates {
		// The negated test also refuses NaN.
		if !(c.v >= 0 && c.v <= 1) {
			return stopreasons.Errorf(stopreasons.ConfigInvalid,
				"stop.%s: %v is not a rate; use a fraction from 0 to 1, e.g. 0.3 (0 turns the rule off)", c.key, c.v)
		}
	}
	if r.OnMilestoneFailure != OnFailureStop && r.OnMilestoneFailure != OnFailureSkip {
		return stopreasons.Errorf(stopreasons.ConfigInvalid,
			"stop.on_milestone_failure: %q is not a mode; use stop or skip", r.OnMilestoneFailure)
	}
	return nil
}

// Limits are the budget rules under `budget:`; a zero value turns its limit off.
type Limits struct {
	Time          time.Duration
	MaxTicks      int
	MaxIterations int
	MaxCostUSD    float64
	MaxTokens     int64
}

// Validate refuses negative budgets; the error is config_invalid and names
// the key as "budget.<key>".
func (l Limits) Validate() error {
	switch {
	case l.Time < 0:
		return stopreasons.Errorf(stopreasons.ConfigInvalid, "budget.time: %s is negative; use a duration such as 30m (0 turns it off)", l.Time)
	case l.MaxTicks < 0:
		return stopreasons.Errorf(stopreasons.ConfigInvalid, "budget.max_ticks: %d is negative; use a count of 0 or more (0 turns it off)", l.MaxTicks)
	case l.MaxIterations < 0:
		return stopreasons.Errorf(stopreasons.ConfigInvalid, "budget.max_iterations: %d is negative; use a count of 0 or more (0 turns it off)", l.MaxIterations)
	case !(l.MaxCostUSD >= 0):
		return stopreasons.Errorf(stopreasons.ConfigInvalid, "budget.max_cost_usd: %v is not a cost; use an amount in USD of 0 or more (0 turns it off)", l.MaxCostUSD)
	case l.MaxTokens < 0:
		return stopreasons.Errorf(stopreasons.ConfigInvalid, "budget.max_tokens: %d is negative; use a count of 0 or more (0 turns it off)", l.MaxTokens)
	}
	return nil
}
