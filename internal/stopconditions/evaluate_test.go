package stopconditions

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

func defaultLimits() Limits { return Limits{Time: 30 * time.Minute, MaxTicks: 200} }

// quiet is a run in progress that no rule stops.
func quiet() *Snapshot {
	return &Snapshot{Tick: 3, Iteration: 2, Elapsed: time.Minute, TotalMilestones: 3, Milestone: 1, Attempts: 2, Attempted: 1}
}

func TestEvaluateBuiltinRules(t *testing.T) {
	tests := []struct {
		name   string
		snap   func(*Snapshot)
		rules  func(*Rules)
		limits func(*Limits)
		want   *Stop
	}{
		{name: "quiet run goes on"},
		{
			name: "user stop request",
			snap: func(s *Snapshot) { s.StopRequested = true },
			want: &Stop{Code: stopreasons.UserStopped, Condition: "user_signal", Message: "a stop was requested with runr stop"},
		},
		{
			name: "all milestones approved",
			snap: func(s *Snapshot) { s.Finished, s.Approved, s.Attempted = true, 3, 3 },
			want: &Stop{Code: stopreasons.Complete, Condition: "milestones", Value: 3, Threshold: 3, Message: "3 of 3 milestones approved"},
		},
		{
			name: "circuit breaker at default",
			snap: func(s *Snapshot) { s.Attempts = 50 },
			want: &Stop{Code: stopreasons.CircuitBreaker, Condition: "circuit_breaker", Value: 50, Threshold: 50, Message: "50 attempts in all (limit 50)"},
		},
		{name: "circuit breaker below default", snap: func(s *Snapshot) { s.Attempts = 49 }},
		{
			name:  "circuit breaker custom",
			snap:  func(s *Snapshot) { s.Attempts = 5 },
			rules: func(r *Rules) { r.CircuitBreaker = 5 },
			want:  &Stop{Code: stopreasons.CircuitBreaker, Condition: "circuit_breaker", Value: 5, Threshold: 5, Message: "5 attempts in all (limit 5)"},
		},
		{name: "circuit breaker off", snap: func(s *Snapshot) { s.Attempts = 5000 }, rules: func(r *Rules) { r.CircuitBreaker = 0 }},
		{
			name: "milestone retries used up on a verify failure",
			snap: func(s *Snapshot) { s.MilestoneFailures, s.Milestone = 4, 2 },
			want: &Stop{Code: stopreasons.VerificationFailed, Condition: "max_milestone_retries", Value: 4, Threshold: 3,
				Message: "Milestone 2: 4 failed attempts (max_milestone_retries 3)"},
		},
		{
			name: "milestone retries used up on the agent's failure",
			snap: func(s *Snapshot) { s.MilestoneFailures, s.LastFailureAgent = 4, true },
			want: &Stop{Code: stopreasons.WorkerFailed, Condition: "max_milestone_retries", Value: 4, Threshold: 3,
				Message: "Milestone 1: 4 failed attempts (max_milestone_retries 3)"},
		},
		{
			name: "milestone retries used up on a verify that tested nothing new",
			snap: func(s *Snapshot) { s.MilestoneFailures, s.LastFailureUntested = 4, true },
			want: &Stop{Code: stopreasons.ChangesNotTested, Condition: "max_milestone_retries", Value: 4, Threshold: 3,
				Message: "Milestone 1: 4 failed attempts (max_milestone_retries 3)"},
		},
		{name: "milestone failures equal to the retries go on", snap: func(s *Snapshot) { s.MilestoneFailures = 3 }},
		{
			name:  "milestone retries custom",
			snap:  func(s *Snapshot) { s.MilestoneFailures = 2 },
			rules: func(r *Rules) { r.MaxMilestoneRetries = 1 },
			want: &Stop{Code: stopreasons.VerificationFailed, Condition: "max_milestone_retries", Value: 2, Threshold: 1,
				Message: "Milestone 1: 2 failed attempts (max_milestone_retries 1)"},
		},
		{name: "milestone retries off", snap: func(s *Snapshot) { s.MilestoneFailures = 40 }, rules: func(r *Rules) { r.MaxMilestoneRetries = 0 }},
		{name: "skip mode does not stop on a failed milestone", snap: func(s *Snapshot) { s.MilestoneFailures = 4 }, rules: func(r *Rules) { r.OnMilestoneFailure = OnFailureSkip }},
		{
			name: "skip mode finished with a failed milestone",
			snap: func(s *Snapshot) {
				s.Finished, s.Attempted, s.Approved, s.Failed, s.LastFailureAgent = true, 3, 2, 1, true
			},
			rules: func(r *Rules) { r.OnMilestoneFailure = OnFailureSkip },
			want: &Stop{Code: stopreasons.WorkerFailed, Condition: "on_milestone_failure", Value: 1,
				Message: "The run finished with 1 of 3 milestones failed or rejected"},
		},
		{
			name:  "skip mode finished with a rejected milestone",
			snap:  func(s *Snapshot) { s.Finished, s.Attempted, s.Approved, s.Rejected = true, 3, 2, 1 },
			rules: func(r *Rules) { r.OnMilestoneFailure = OnFailureSkip },
			want: &Stop{Code: stopreasons.VerificationFailed, Condition: "on_milestone_failure", Value: 1,
				Message: "The run finished with 1 of 3 milestones failed or rejected"},
		},
		{
			name: "review repeated itself",
			snap: func(s *Snapshot) { s.ReviewRepeated, s.ReviewRounds = true, 1 },
			want: &Stop{Code: stopreasons.ReviewLoopDetected, Condition: "review_repeated", Value: 1,
				Message: "The review asked for the same changes twice in a row"},
		},
		{
			name: "review rounds at default",
			snap: func(s *Snapshot) { s.ReviewRounds = 2 },
			want: &Stop{Code: stopreasons.ReviewLoopDetected, Condition: "max_review_rounds", Value: 2, Threshold: 2, Message: "2 review rounds (limit 2)"},
		},
		{name: "review rounds off", snap: func(s *Snapshot) { s.ReviewRounds = 9 }, rules: func(r *Rules) { r.MaxReviewRounds = 0 }},
		{
			name: "consecutive fails at default",
			snap: func(s *Snapshot) { s.ConsecutiveFails = 3 },
			want: &Stop{Code: stopreasons.ConsecutiveFails, Condition: "max_consecutive_fails", Value: 3, Threshold: 3,
				Message: "3 consecutive failed milestones (limit 3)"},
		},
		{name: "consecutive fails below", snap: func(s *Snapshot) { s.ConsecutiveFails = 2 }},
		{
			name:  "consecutive fails custom",
			snap:  func(s *Snapshot) { s.ConsecutiveFails = 5 },
			rules: func(r *Rules) { r.MaxConsecutiveFails = 5 },
			want: &Stop{Code: stopreasons.ConsecutiveFails, Condition: "max_consecutive_fails", Value: 5, Threshold: 5,
				Message: "5 consecutive failed milestones (limit 5)"},
		},
		{name: "consecutive fails off", snap: func(s *Snapshot) { s.ConsecutiveFails = 50 }, rules: func(r *Rules) { r.MaxConsecutiveFails = 0 }},
		{
			name: "reject rate above default",
			snap: func(s *Snapshot) { s.TotalMilestones, s.Attempted, s.Failed, s.Rejected = 10, 8, 2, 1 },
			want: &Stop{Code: stopreasons.RejectRateExceeded, Condition: "max_reject_rate", Value: 0.375, Threshold: 0.3,
				Message: "Reject rate 37.5% exceeds 30% threshold"},
		},
		{name: "reject rate at the threshold goes on", snap: func(s *Snapshot) { s.TotalMilestones, s.Attempted, s.Failed = 20, 10, 3 }},
		{name: "reject rate before min attempts", snap: func(s *Snapshot) { s.Attempted, s.Failed = 3, 3 }, rules: func(r *Rules) { r.MaxConsecutiveFails = 0 }},
		{
			name:  "reject rate custom",
			snap:  func(s *Snapshot) { s.TotalMilestones, s.Attempted, s.Failed = 10, 5, 1 },
			rules: func(r *Rules) { r.MaxRejectRate, r.MinAttemptsForRates = 0.1, 5 },
			want: &Stop{Code: stopreasons.RejectRateExceeded, Condition: "max_reject_rate", Value: 0.2, Threshold: 0.1,
				Message: "Reject rate 20% exceeds 10% threshold"},
		},
		{name: "reject rate off", snap: func(s *Snapshot) { s.TotalMilestones, s.Attempted, s.Failed = 10, 10, 10 },
			rules: func(r *Rules) { r.MaxRejectRate, r.MaxConsecutiveFails = 0, 0 }},
		{
			name: "retry rate above default",
			snap: func(s *Snapshot) { s.TotalMilestones, s.Attempted, s.Approved, s.Retried = 10, 6, 6, 4 },
			want: &Stop{Code: stopreasons.RetryRateExceeded, Condition: "max_retry_rate", Value: 4.0 / 6, Threshold: 0.5,
				Message: "Retry rate 66.7% exceeds 50% threshold"},
		},
		{name: "retry rate at the threshold goes on", snap: func(s *Snapshot) { s.TotalMilestones, s.Attempted, s.Approved, s.Retried = 10, 4, 4, 2 }},
		{name: "retry rate off", snap: func(s *Snapshot) { s.TotalMilestones, s.Attempted, s.Approved, s.Retried = 10, 6, 6, 6 },
			rules: func(r *Rules) { r.MaxRetryRate = 0 }},
		{
			name:  "min attempts 0 judges from the first milestone",
			snap:  func(s *Snapshot) { s.Attempted, s.Retried = 1, 1 },
			rules: func(r *Rules) { r.MinAttemptsForRates = 0 },
			want:  &Stop{Code: stopreasons.RetryRateExceeded, Condition: "max_retry_rate", Value: 1.0, Threshold: 0.5, Message: "Retry rate 100% exceeds 50% threshold"},
		},
		{
			name: "same error at default",
			snap: func(s *Snapshot) { s.SameError = 3 },
			want: &Stop{Code: stopreasons.SameErrorRepeated, Condition: "same_error", Value: 3, Threshold: 3,
				Message: "3 failed attempts in a row with the same error (limit 3)"},
		},
		{name: "same error below", snap: func(s *Snapshot) { s.SameError = 2 }},
		{name: "same error off", snap: func(s *Snapshot) { s.SameError = 30 }, rules: func(r *Rules) { r.SameError = 0 }},
		{
			name: "noop at default",
			snap: func(s *Snapshot) { s.Noop = 3 },
			want: &Stop{Code: stopreasons.NoopStreak, Condition: "noop", Value: 3, Threshold: 3, Message: "3 agent calls in a row that changed nothing (limit 3)"},
		},
		{
			name:  "noop custom",
			snap:  func(s *Snapshot) { s.Noop = 1 },
			rules: func(r *Rules) { r.Noop = 1 },
			want:  &Stop{Code: stopreasons.NoopStreak, Condition: "noop", Value: 1, Threshold: 1, Message: "1 agent call in a row that changed nothing (limit 1)"},
		},
		{name: "noop off", snap: func(s *Snapshot) { s.Noop = 30 }, rules: func(r *Rules) { r.Noop = 0 }},
		{
			name: "no progress at default",
			snap: func(s *Snapshot) { s.NoProgress = 5 },
			want: &Stop{Code: stopreasons.NoProgress, Condition: "no_progress", Value: 5, Threshold: 5, Message: "5 iterations without progress (limit 5)"},
		},
		{name: "no progress below", snap: func(s *Snapshot) { s.NoProgress = 4 }},
		{name: "no progress off", snap: func(s *Snapshot) { s.NoProgress = 40 }, rules: func(r *Rules) { r.NoProgress = 0 }},
		{
			name: "phase loop at default",
			snap: func(s *Snapshot) { s.Edges = map[string]int{"verify->implement": 10, "review->implement": 2} },
			want: &Stop{Code: stopreasons.PhaseLoop, Condition: "max_edge", Value: 10, Threshold: 10,
				Message: "Backward edge verify->implement taken 10 times in milestone 1 (limit 10)"},
		},
		{name: "phase loop below", snap: func(s *Snapshot) { s.Edges = map[string]int{"verify->implement": 9, "review->implement": 9} }},
		{
			name:  "phase loop custom",
			snap:  func(s *Snapshot) { s.Edges = map[string]int{"verify->implement": 1, "review->implement": 2} },
			rules: func(r *Rules) { r.MaxEdge = 2 },
			want: &Stop{Code: stopreasons.PhaseLoop, Condition: "max_edge", Value: 2, Threshold: 2,
				Message: "Backward edge review->implement taken 2 times in milestone 1 (limit 2)"},
		},
		{name: "phase loop off", snap: func(s *Snapshot) { s.Edges = map[string]int{"verify->implement": 99} }, rules: func(r *Rules) { r.MaxEdge = 0 }},
		{
			name:   "cost budget",
			snap:   func(s *Snapshot) { s.CostUSD = 5.2 },
			limits: func(l *Limits) { l.MaxCostUSD = 5 },
			want:   &Stop{Code: stopreasons.BudgetExceeded, Condition: "budget.max_cost_usd", Value: 5.2, Threshold: 5.0, Message: "Cost $5.20 reached the $5.00 budget"},
		},
		{name: "cost below budget", snap: func(s *Snapshot) { s.CostUSD = 4.99 }, limits: func(l *Limits) { l.MaxCostUSD = 5 }},
		{name: "cost budget off", snap: func(s *Snapshot) { s.CostUSD = 1e6 }},
		{
			name:   "token budget",
			snap:   func(s *Snapshot) { s.Tokens = 100000 },
			limits: func(l *Limits) { l.MaxTokens = 100000 },
			want:   &Stop{Code: stopreasons.BudgetExceeded, Condition: "budget.max_tokens", Value: int64(100000), Threshold: int64(100000), Message: "100000 tokens (limit 100000)"},
		},
		{name: "token budget off", snap: func(s *Snapshot) { s.Tokens = 1e9 }},
		{
			name:   "max iterations",
			snap:   func(s *Snapshot) { s.Iteration = 20 },
			limits: func(l *Limits) { l.MaxIterations = 20 },
			want:   &Stop{Code: stopreasons.MaxIterations, Condition: "budget.max_iterations", Value: 20, Threshold: 20, Message: "20 iterations (limit 20)"},
		},
		{name: "max iterations off by default", snap: func(s *Snapshot) { s.Iteration = 5000 }, limits: func(l *Limits) { l.MaxTicks = 0 }},
		{
			name: "max ticks at default",
			snap: func(s *Snapshot) { s.Tick = 200 },
			want: &Stop{Code: stopreasons.MaxTicks, Condition: "budget.max_ticks", Value: 200, Threshold: 200, Message: "200 ticks (limit 200)"},
		},
		{name: "max ticks below", snap: func(s *Snapshot) { s.Tick = 199 }},
		{name: "max ticks off", snap: func(s *Snapshot) { s.Tick = 5000 }, limits: func(l *Limits) { l.MaxTicks = 0 }},
		{
			name: "time budget at default",
			snap: func(s *Snapshot) { s.Elapsed = 30*time.Minute + 400*time.Millisecond },
			want: &Stop{Code: stopreasons.Timeout, Condition: "budget.time", Value: "30m", Threshold: "30m", Message: "30m elapsed (limit 30m)"},
		},
		{name: "time budget below", snap: func(s *Snapshot) { s.Elapsed = 29 * time.Minute }},
		{name: "time budget off", snap: func(s *Snapshot) { s.Elapsed = 100 * time.Hour }, limits: func(l *Limits) { l.Time = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, r, l := quiet(), DefaultRules(), defaultLimits()
			if tt.snap != nil {
				tt.snap(s)
			}
			if tt.rules != nil {
				tt.rules(&r)
			}
			if tt.limits != nil {
				tt.limits(&l)
			}
			got := Evaluate(s, r, l)
			if tt.want == nil {
				assert.Nil(t, got.Stop)
				return
			}
			require.NotNil(t, got.Stop)
			if f, ok := tt.want.Value.(float64); ok {
				assert.InDelta(t, f, got.Stop.Value, 1e-9)
				tt.want.Value = got.Stop.Value
			}
			assert.Equal(t, *tt.want, *got.Stop)
		})
	}
}

func TestEvaluatePriority(t *testing.T) {
	success := mustDecode(t, "stop.success", `[{type: output_pattern, pattern: SHIPPED}]`)
	failure := mustDecode(t, "stop.failure", `[{type: never}, {type: on_error, pattern: "panic"}]`)
	conditions := mustDecode(t, "stop.conditions", `[{type: test_failure_streak, count: 2}]`)

	tests := []struct {
		name          string
		snap          func(*Snapshot)
		wantCode      stopreasons.Code
		wantCondition string
	}{
		{"a success condition met and the time used up: complete", func(s *Snapshot) {
			s.LastOutput, s.Elapsed = "SHIPPED", time.Hour
		}, stopreasons.Complete, "stop.success[0]: output_pattern"},
		{"a stop request beats completion", func(s *Snapshot) {
			s.LastOutput, s.StopRequested = "SHIPPED", true
		}, stopreasons.UserStopped, "user_signal"},
		{"completion beats the circuit breaker", func(s *Snapshot) {
			s.Finished, s.Approved, s.Attempts = true, 3, 50
		}, stopreasons.Complete, "milestones"},
		{"the circuit breaker beats a used-up milestone", func(s *Snapshot) {
			s.Attempts, s.MilestoneFailures = 50, 4
		}, stopreasons.CircuitBreaker, "circuit_breaker"},
		{"a used-up milestone beats a review loop", func(s *Snapshot) {
			s.MilestoneFailures, s.ReviewRounds = 4, 2
		}, stopreasons.VerificationFailed, "max_milestone_retries"},
		{"a review loop beats consecutive fails", func(s *Snapshot) {
			s.ReviewRounds, s.ConsecutiveFails = 2, 3
		}, stopreasons.ReviewLoopDetected, "max_review_rounds"},
		{"consecutive fails beat the reject rate", func(s *Snapshot) {
			s.ConsecutiveFails, s.Attempted, s.Failed = 3, 4, 3
		}, stopreasons.ConsecutiveFails, "max_consecutive_fails"},
		{"the reject rate beats the retry rate", func(s *Snapshot) {
			s.Attempted, s.Failed, s.Retried = 4, 2, 4
		}, stopreasons.RejectRateExceeded, "max_reject_rate"},
		{"the retry rate beats the same error", func(s *Snapshot) {
			s.Attempted, s.Retried, s.SameError = 4, 4, 3
		}, stopreasons.RetryRateExceeded, "max_retry_rate"},
		{"the same error beats noop", func(s *Snapshot) { s.SameError, s.Noop = 3, 3 }, stopreasons.SameErrorRepeated, "same_error"},
		{"noop beats no progress", func(s *Snapshot) { s.Noop, s.NoProgress = 3, 5 }, stopreasons.NoopStreak, "noop"},
		{"no progress beats a phase loop", func(s *Snapshot) {
			s.NoProgress, s.Edges = 5, map[string]int{"verify->implement": 10}
		}, stopreasons.NoProgress, "no_progress"},
		{"a phase loop beats a failure condition", func(s *Snapshot) {
			s.Edges, s.LastError = map[string]int{"verify->implement": 10}, &ErrorEvent{Source: SourceAgent, Text: "panic: x"}
		}, stopreasons.PhaseLoop, "max_edge"},
		{"stop.failure beats stop.conditions", func(s *Snapshot) {
			s.TestFailStreak, s.LastError = 2, &ErrorEvent{Source: SourceAgent, Text: "panic: x"}
		}, stopreasons.ConditionFailed, "stop.failure[1]: on_error"},
		{"stop.conditions beats the cost budget", func(s *Snapshot) {
			s.TestFailStreak, s.CostUSD = 2, 10
		}, stopreasons.ConditionFailed, "stop.conditions[0]: test_failure_streak"},
		{"the cost budget beats max iterations", func(s *Snapshot) { s.CostUSD, s.Iteration = 10, 20 }, stopreasons.BudgetExceeded, "budget.max_cost_usd"},
		{"max iterations beats max ticks", func(s *Snapshot) { s.Iteration, s.Tick = 20, 200 }, stopreasons.MaxIterations, "budget.max_iterations"},
		{"max ticks beats the time budget", func(s *Snapshot) { s.Tick, s.Elapsed = 200, time.Hour }, stopreasons.MaxTicks, "budget.max_ticks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := quiet()
			tt.snap(s)
			r := DefaultRules()
			r.Success, r.Failure, r.Conditions = success, failure, conditions
			l := defaultLimits()
			l.MaxCostUSD, l.MaxIterations = 5, 20
			got := Evaluate(s, r, l)
			require.NotNil(t, got.Stop)
			assert.Equal(t, tt.wantCode, got.Stop.Code)
			assert.Equal(t, tt.wantCondition, got.Stop.Condition)
		})
	}
}

func mustDecode(t *testing.T, path, text string) []Condition {
	t.Helper()
	conds, err := decodeYAML(t, path, text)
	require.NoError(t, err)
	return conds
}

func TestEvaluateRatesWaitForMinAttempts(t *testing.T) {
	r := DefaultRules()
	r.MaxConsecutiveFails, r.MaxMilestoneRetries = 0, 0
	for attempted := 1; attempted < r.MinAttemptsForRates; attempted++ {
		s := quiet()
		s.TotalMilestones, s.Attempted, s.Failed, s.Retried = 10, attempted, attempted, attempted
		got := Evaluate(s, r, defaultLimits())
		assert.Nil(t, got.Stop, "attempted %d", attempted)
		reject := progressOf(t, got, "max_reject_rate")
		assert.Zero(t, reject.Progress)
		assert.Contains(t, reject.Message, "judged from 4 attempted milestones")
	}
	s := quiet()
	s.TotalMilestones, s.Attempted, s.Failed = 10, r.MinAttemptsForRates, r.MinAttemptsForRates
	got := Evaluate(s, r, defaultLimits())
	require.NotNil(t, got.Stop)
	assert.Equal(t, stopreasons.RejectRateExceeded, got.Stop.Code)
}

func progressOf(t *testing.T, v Verdict, name string) Progress {
	t.Helper()
	for _, p := range v.Progress {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no progress for %s in %+v", name, v.Progress)
	return Progress{}
}

func TestEvaluateProgress(t *testing.T) {
	r := DefaultRules()
	r.Success = mustDecode(t, "stop.success", `[{type: max_iterations, count: 4}]`)
	r.Failure = mustDecode(t, "stop.failure", `[{type: never}]`)
	r.Conditions = mustDecode(t, "stop.conditions", `[{type: any, conditions: [{type: no_progress, iterations: 8}, {type: never}]}]`)
	l := Limits{Time: 10 * time.Minute, MaxTicks: 100, MaxIterations: 10, MaxCostUSD: 2, MaxTokens: 1000}
	s := &Snapshot{
		Tick: 25, Iteration: 2, Elapsed: 5 * time.Minute, CostUSD: 0.5, Tokens: 100, Attempts: 5,
		TotalMilestones: 8, Attempted: 4, Failed: 1, Retried: 3, Milestone: 5, MilestoneFailures: 2,
		ConsecutiveFails: 1, SameError: 2, Noop: 1, NoProgress: 2, ReviewRounds: 1,
		Edges: map[string]int{"verify->implement": 5},
	}
	got := Evaluate(s, r, l)
	require.NotNil(t, got.Stop, "the retry rate 75% is above 50%")
	assert.Equal(t, stopreasons.RetryRateExceeded, got.Stop.Code)

	want := []Progress{
		{"stop.success[0]", 0.5, "2 iterations (limit 4)"},
		{"circuit_breaker", 0.1, "5 attempts in all (limit 50)"},
		{"max_milestone_retries", 0.5, "Milestone 5: 2 failed attempts (max_milestone_retries 3)"},
		{"max_review_rounds", 0.5, "1 review round (limit 2)"},
		{"max_consecutive_fails", 1.0 / 3, "1 consecutive failed milestone (limit 3)"},
		{"max_reject_rate", 0.25 / 0.3, "Reject rate 25% (threshold 30%)"},
		{"max_retry_rate", 1, "Retry rate 75% exceeds 50% threshold"},
		{"same_error", 2.0 / 3, "2 failed attempts in a row with the same error (limit 3)"},
		{"noop", 1.0 / 3, "1 agent call in a row that changed nothing (limit 3)"},
		{"no_progress", 0.4, "2 iterations without progress (limit 5)"},
		{"max_edge", 0.5, "Backward edge verify->implement taken 5 times in milestone 5 (limit 10)"},
		{"stop.failure[0]", 0, "never met"},
		{"stop.conditions[0]", 0.25, "no_progress: 2 iterations without progress (limit 8)"},
		{"budget.max_cost_usd", 0.25, "Cost $0.50 of the $2.00 budget"},
		{"budget.max_tokens", 0.1, "100 tokens (limit 1000)"},
		{"budget.max_iterations", 0.2, "2 iterations (limit 10)"},
		{"budget.max_ticks", 0.25, "25 ticks (limit 100)"},
		{"budget.time", 0.5, "5m elapsed (limit 10m)"},
	}
	require.Len(t, got.Progress, len(want))
	for i, w := range want {
		assert.Equal(t, w.Name, got.Progress[i].Name)
		assert.InDelta(t, w.Progress, got.Progress[i].Progress, 1e-9, w.Name)
		assert.Equal(t, w.Message, got.Progress[i].Message)
	}

	// A rule switched off is not active and shows no progress.
	r.SameError, r.Noop, r.MaxRetryRate = 0, 0, 0
	l.MaxTokens = 0
	got = Evaluate(s, r, l)
	assert.Nil(t, got.Stop)
	for _, p := range got.Progress {
		assert.NotContains(t, []string{"same_error", "noop", "max_retry_rate", "budget.max_tokens"}, p.Name)
	}
}
