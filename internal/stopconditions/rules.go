// Package stopconditions decides when a run must stop.
//
// It holds the table of built-in rules (Builtins), decodes the custom
// conditions of `stop.success`, `stop.failure` and `stop.conditions`, and
// evaluates them all with the budgets against a Snapshot of the run in the
// priority order of the design contract. Evaluation is pure except for the
// conditions that must look outside: file_created and file_contains read a
// file. It never starts a process: a custom_script is run by the supervisor
// (see Scripts) and its result handed in through the Snapshot.
package stopconditions

import (
	"slices"
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

// Rules are the values of the built-in rules under `stop:` (0 turns a
// count or rate rule off), one field per entry of Builtins, named as its
// key is (max_edge is MaxEdge), and the decoded custom conditions.
type Rules struct {
	MaxMilestoneRetries int
	OnMilestoneFailure  string
	MaxConsecutiveFails int
	MaxRetryRate        float64
	MaxRejectRate       float64
	MinAttemptsForRates int
	CircuitBreaker      int
	SameError           int
	Noop                int
	NoProgress          int
	MaxEdge             int
	MaxReviewRounds     int

	// Success conditions complete the run; Failure and Conditions stop it
	// with condition_failed.
	Success, Failure, Conditions []Condition
}

// Kind says how a built-in rule's value is written and checked.
type Kind int

const (
	// KindCount is a whole number, 0 or more; a count rule fires when its
	// counter reaches it.
	KindCount Kind = iota
	// KindRate is a fraction from 0 to 1; a rate rule fires above it.
	KindRate
	// KindMode is one of a few words (on_milestone_failure: stop or skip).
	KindMode
)

// Scope says where a rule's counter counts: within the current milestone
// (it starts over with the next one) or over the whole run.
type Scope int

const (
	PerRun       Scope = iota // kept in state.json's counters
	PerMilestone              // kept with the milestone, or cleared when the next one starts
)

// Builtin is one built-in rule under `stop:` (DESIGN §4). The config's
// keys, defaults and validation, the dry-run plan, the progress `status`
// and `watch` show, the evaluator and a resume's resets all read the rules
// from Builtins, so a rule is defined here and nowhere else.
type Builtin struct {
	Key     string // under `stop:`, e.g. "noop"; the stop's condition when it fires
	Kind    Kind
	Default any // an int (KindCount), a float64 (KindRate) or a string (KindMode)
	// Zero says what 0 means, as the dry-run plan shows it: "off" for a rule
	// that 0 turns off, "unlimited" for a limit that 0 lifts, "" for a
	// setting for which 0 is a number like any other.
	Zero string
	// Code is the stop the rule fires; "" for a setting of other rules.
	Code  stopreasons.Code
	Scope Scope
	// AllWorkers says that in a parallel run the rule judges the attempts
	// of every worker together (DESIGN §11: the rates, consecutive_fails and
	// the circuit breaker); every other rule judges one worker's run, which
	// holds one milestone, so it judges that milestone alone.
	AllWorkers bool
	// ResetOnResume says a resume sets the rule's counter back to 0
	// (DESIGN §7): resuming is a person's decision to try again.
	ResetOnResume bool
	// Counter names the counter the rule judges, as the resume plan names it
	// when it resets it ("noop 3 → 0", "milestone 2 retries 3 → 0"); "" for a
	// rule that has no counter of its own.
	Counter string
	// Count reads the counter a count rule judges from a snapshot; nil for
	// the rules that judge something else (rates, settings, max_edge's
	// busiest edge).
	Count func(*Snapshot) int

	field func(*Rules) any // the rule's field of Rules: *int, *float64 or *string
	// judge evaluates the rule; nil for a setting, which fires nothing.
	judge func(*evaluation, *Builtin, *Snapshot, Rules)
	label string // what a count counts, or a rate's name, for its message
	one   string // what a count of one counts
}

// The built-in rules.
var (
	MaxMilestoneRetries = &Builtin{
		Key: "max_milestone_retries", Kind: KindCount, Default: 3, Zero: "unlimited",
		// worker_failed instead when the last failure was the agent's own,
		// changes_not_tested when it was a verify that tested nothing new.
		Code:  stopreasons.VerificationFailed,
		Scope: PerMilestone, ResetOnResume: true, Counter: "retries",
		Count: func(s *Snapshot) int { return s.MilestoneFailures },
		field: func(r *Rules) any { return &r.MaxMilestoneRetries },
		judge: judgeRetries,
	}
	OnMilestoneFailure = &Builtin{
		Key: "on_milestone_failure", Kind: KindMode, Default: OnFailureStop,
		// In skip mode: a run that finished with failed milestones stops
		// with the failure of the last of them.
		Code:  stopreasons.VerificationFailed,
		field: func(r *Rules) any { return &r.OnMilestoneFailure },
		judge: judgeFinishedFailed,
	}
	MaxConsecutiveFails = &Builtin{
		Key: "max_consecutive_fails", Kind: KindCount, Default: 3, Zero: "off",
		Code:  stopreasons.ConsecutiveFails,
		Scope: PerRun, AllWorkers: true, ResetOnResume: true, Counter: "consecutive_fails",
		Count: func(s *Snapshot) int { return s.ConsecutiveFails },
		field: func(r *Rules) any { return &r.MaxConsecutiveFails },
		judge: judgeCount, label: "consecutive failed milestones", one: "consecutive failed milestone",
	}
	MaxRetryRate = &Builtin{
		Key: "max_retry_rate", Kind: KindRate, Default: 0.5, Zero: "off",
		Code: stopreasons.RetryRateExceeded, AllWorkers: true,
		field: func(r *Rules) any { return &r.MaxRetryRate },
		judge: rateJudge(func(s *Snapshot) (int, int) { return s.Retried, s.Attempted }), label: "Retry rate",
	}
	MaxRejectRate = &Builtin{
		Key: "max_reject_rate", Kind: KindRate, Default: 0.3, Zero: "off",
		Code: stopreasons.RejectRateExceeded, AllWorkers: true,
		field: func(r *Rules) any { return &r.MaxRejectRate },
		judge: rateJudge(func(s *Snapshot) (int, int) { return s.Failed + s.Rejected, s.Attempted }), label: "Reject rate",
	}
	MinAttemptsForRates = &Builtin{
		Key: "min_attempts_for_rates", Kind: KindCount, Default: 4, AllWorkers: true,
		field: func(r *Rules) any { return &r.MinAttemptsForRates },
	}
	CircuitBreaker = &Builtin{
		Key: "circuit_breaker", Kind: KindCount, Default: 50, Zero: "off",
		Code:  stopreasons.CircuitBreaker,
		Scope: PerRun, AllWorkers: true, Counter: "attempts",
		Count: func(s *Snapshot) int { return s.Attempts },
		field: func(r *Rules) any { return &r.CircuitBreaker },
		judge: judgeCount, label: "attempts in all", one: "attempt in all",
	}
	SameError = &Builtin{
		Key: "same_error", Kind: KindCount, Default: 3, Zero: "off",
		Code:  stopreasons.SameErrorRepeated,
		Scope: PerRun, ResetOnResume: true, Counter: "same_error",
		Count: func(s *Snapshot) int { return s.SameError },
		field: func(r *Rules) any { return &r.SameError },
		judge: judgeCount, label: "failed attempts in a row with the same error", one: "failed attempt in a row with the same error",
	}
	Noop = &Builtin{
		Key: "noop", Kind: KindCount, Default: 3, Zero: "off",
		Code:  stopreasons.NoopStreak,
		Scope: PerRun, ResetOnResume: true, Counter: "noop",
		Count: func(s *Snapshot) int { return s.Noop },
		field: func(r *Rules) any { return &r.Noop },
		judge: judgeCount, label: "agent calls in a row that changed nothing", one: "agent call in a row that changed nothing",
	}
	NoProgress = &Builtin{
		Key: "no_progress", Kind: KindCount, Default: 5, Zero: "off",
		Code:  stopreasons.NoProgress,
		Scope: PerRun, ResetOnResume: true, Counter: "no_progress",
		Count: func(s *Snapshot) int { return s.NoProgress },
		field: func(r *Rules) any { return &r.NoProgress },
		judge: judgeCount, label: "iterations without progress", one: "iteration without progress",
	}
	MaxEdge = &Builtin{
		Key: "max_edge", Kind: KindCount, Default: 10, Zero: "off",
		Code:  stopreasons.PhaseLoop,
		Scope: PerMilestone, ResetOnResume: true, Counter: "loop edges",
		field: func(r *Rules) any { return &r.MaxEdge },
		judge: judgeEdges,
	}
	MaxReviewRounds = &Builtin{
		Key: "max_review_rounds", Kind: KindCount, Default: 2, Zero: "off",
		Code:  stopreasons.ReviewLoopDetected,
		Scope: PerMilestone, ResetOnResume: true, Counter: "review rounds",
		Count: func(s *Snapshot) int { return s.ReviewRounds },
		field: func(r *Rules) any { return &r.MaxReviewRounds },
		judge: judgeReviewRounds, label: "review rounds", one: "review round",
	}
)

// Builtins are the built-in rules in the order of DESIGN §4, which is the
// order of their config keys and of the dry-run plan.
var Builtins = []*Builtin{
	MaxMilestoneRetries, OnMilestoneFailure, MaxConsecutiveFails, MaxRetryRate, MaxRejectRate, MinAttemptsForRates,
	CircuitBreaker, SameError, Noop, NoProgress, MaxEdge, MaxReviewRounds,
}

// stopOrder is the order in which the built-in rules are judged, DESIGN
// §4's order of stops: when several are due after one tick, the first
// wins. Every rule that fires a stop is in it once.
var stopOrder = []*Builtin{
	CircuitBreaker, MaxMilestoneRetries, OnMilestoneFailure, MaxReviewRounds, MaxConsecutiveFails,
	MaxRejectRate, MaxRetryRate, SameError, Noop, NoProgress, MaxEdge,
}

// endsMilestone are the stops of a milestone that ended without approval,
// which skip mode passes over (DESIGN §2): its retries used up (failCode)
// or the review's rejection.
var endsMilestone = []stopreasons.Code{stopreasons.VerificationFailed, stopreasons.WorkerFailed, stopreasons.ChangesNotTested, stopreasons.ReviewRejected}

// MilestoneStop reports whether a parallel run's worker stopped on its
// milestone alone, which skip mode marks failed while the run goes on,
// rather than on the run: a milestone that ended unapproved, or a built-in
// rule that judges one worker's milestone (not AllWorkers): its retries,
// same_error, noop, no_progress, max_edge and the review's rounds (DESIGN
// §11). Every other stop, those of the outcome table such as
// worker_blocked or verification_timeout, a budget or a signal, stops the
// run, as in a sequential run.
func MilestoneStop(code stopreasons.Code) bool {
	if slices.Contains(endsMilestone, code) {
		return true
	}
	return slices.ContainsFunc(Builtins, func(b *Builtin) bool { return b.Code != "" && b.Code == code && !b.AllWorkers })
}

// RuleFinishedFailed is the condition of the stop of a skip-mode run that
// finished with failed or rejected milestones: on_milestone_failure's own.
var RuleFinishedFailed = OnMilestoneFailure.Key

// Value is the rule's value in r: an int, a float64 or a string, as Kind says.
func (b *Builtin) Value(r Rules) any {
	switch p := b.field(&r).(type) {
	case *int:
		return *p
	case *float64:
		return *p
	case *string:
		return *p
	}
	return nil
}

// Judge evaluates the rule alone on s: its stop when it is due, else nil.
// A caller that keeps a rule's counter itself (a parallel run counts the
// milestones its workers failed in a row) asks the rule here rather than
// repeating its threshold.
func (b *Builtin) Judge(s *Snapshot, r Rules) *Stop {
	if b.judge == nil {
		return nil
	}
	var e evaluation
	b.judge(&e, b, s, r)
	return e.verdict.Stop
}

// limit is a count rule's value in r.
func (b *Builtin) limit(r Rules) int { return *b.field(&r).(*int) }

// set gives the rule the value v in r, when v is of the rule's type.
func (b *Builtin) set(r *Rules, v any) {
	switch p := b.field(r).(type) {
	case *int:
		if n, ok := v.(int); ok {
			*p = n
		}
	case *float64:
		if f, ok := v.(float64); ok {
			*p = f
		}
	case *string:
		if s, ok := v.(string); ok {
			*p = s
		}
	}
}

// DefaultRules are the rules of a run whose config sets none.
func DefaultRules() Rules {
	var r Rules
	for _, b := range Builtins {
		b.set(&r, b.Default)
	}
	return r
}

// RulesFrom reads the built-in rules from the `stop:` section of a run's
// recorded config (config.json, as encoding/json decodes it). A key that
// is missing, of the wrong type or negative keeps its default; the custom
// conditions are not read.
func RulesFrom(stop map[string]any) Rules {
	r := DefaultRules()
	for _, b := range Builtins {
		switch v := stop[b.Key].(type) {
		case float64:
			switch {
			case v < 0:
			case b.Kind == KindCount:
				b.set(&r, int(v))
			case b.Kind == KindRate:
				b.set(&r, v)
			}
		case string:
			if b.Kind == KindMode {
				b.set(&r, v)
			}
		}
	}
	return r
}

// Validate checks the built-in rules: counts not negative, rates within
// 0..1, on_milestone_failure stop or skip. The error is config_invalid and
// names the key as "stop.<key>".
func (r Rules) Validate() error {
	for _, b := range Builtins {
		switch v := b.Value(r).(type) {
		case int:
			if v < 0 {
				return stopreasons.Errorf(stopreasons.ConfigInvalid,
					"stop.%s: %d is negative; use a count of 0 or more (0 turns the rule off)", b.Key, v)
			}
		case float64:
			// The negated test also refuses NaN.
			if !(v >= 0 && v <= 1) {
				return stopreasons.Errorf(stopreasons.ConfigInvalid,
					"stop.%s: %v is not a rate; use a fraction from 0 to 1, e.g. 0.3 (0 turns the rule off)", b.Key, v)
			}
		case string:
			if v != OnFailureStop && v != OnFailureSkip {
				return stopreasons.Errorf(stopreasons.ConfigInvalid,
					"stop.%s: %q is not a mode; use stop or skip", b.Key, v)
			}
		}
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
		return stopreasons.Errorf(stopreasons.ConfigInvalid, "budget.time: %s is negative; use a duration greater than 0, such as 30m", l.Time)
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
