// Package rulestate is where the stop rules meet state.json: the one
// Snapshot of a recorded run that the evaluator judges, for the supervisor
// after each tick and for `status` and `watch`, and the counters a resume
// sets back. It knows which field of state.json holds each rule's counter;
// what the rules are is stopconditions' table.
package rulestate

import (
	"fmt"
	"time"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
)

// Snapshot is the run st as the stop rules judge it, from what state.json
// records, with elapsed as its working time so far. The supervisor adds
// what only the live run knows (the last call's output and error, a stop
// request, the custom scripts' results); `status` and `watch` judge the
// recorded run as it stands.
func Snapshot(st *state.State, elapsed time.Duration) *stopconditions.Snapshot {
	snap := &stopconditions.Snapshot{
		Tick:                st.Tick,
		Iteration:           st.Iteration,
		Checking:            st.Phase == state.PhaseVerify || st.Phase == state.PhaseReview || st.Phase == state.PhaseCheckpoint,
		Elapsed:             elapsed,
		CostUSD:             st.Usage.CostUSD,
		Tokens:              st.Usage.InputTokens + st.Usage.OutputTokens,
		Attempts:            st.Counters.Attempts,
		TotalMilestones:     len(st.Milestones),
		Attempted:           st.Statistics.Attempted,
		Approved:            st.Statistics.Approved,
		Rejected:            st.Statistics.Rejected,
		Failed:              st.Statistics.Failed,
		Finished:            st.MilestoneIndex >= len(st.Milestones),
		LastFailureAgent:    st.LastFailure != nil && st.LastFailure.Phase == state.PhaseImplement,
		LastFailureUntested: st.LastFailure != nil && st.LastFailure.Untested != nil,
		Milestone:           min(st.MilestoneIndex+1, len(st.Milestones)),
		ConsecutiveFails:    st.Counters.ConsecutiveFails,
		SameError:           st.Counters.SameError,
		Noop:                st.Counters.Noop,
		NoProgress:          st.Counters.NoProgress,
		Edges:               st.Counters.Edges,
		TestFailStreak:      st.Counters.TestFailStreak,
	}
	// Incomplete iterations are not retries: a milestone is retried when
	// more than one of its attempts was judged, those state.json no longer
	// lists included.
	for _, m := range st.Milestones {
		if m.JudgedAttempts() > 1 {
			snap.Retried++
		}
	}
	if st.MilestoneIndex < len(st.Milestones) {
		m := st.Milestones[st.MilestoneIndex]
		snap.MilestoneFailures = m.Retries
		snap.ReviewRounds = m.ReviewRounds
	}
	for _, c := range st.Verify {
		snap.Verify = append(snap.Verify, stopconditions.Check{Command: c.Command, Passed: c.Passed})
	}
	if len(st.StartFiles) > 0 {
		snap.StartFiles = map[string]bool{}
		for _, p := range st.StartFiles {
			snap.StartFiles[p] = true
		}
	}
	return snap
}

// Limits are the budget rules of a run, from its budget as granted so far.
func Limits(b state.Budget) stopconditions.Limits {
	return stopconditions.Limits{
		Time:          time.Duration(b.TimeMS) * time.Millisecond,
		MaxTicks:      b.MaxTicks,
		MaxIterations: b.MaxIterations,
		MaxCostUSD:    b.MaxCostUSD,
		MaxTokens:     b.MaxTokens,
	}
}

// counter is a counter of state.json with the built-in rule that judges it.
type counter struct {
	rule *stopconditions.Builtin
	n    *int
}

// milestoneCounters are milestone m's own counters.
func milestoneCounters(m *state.Milestone) []counter {
	return []counter{
		{stopconditions.MaxMilestoneRetries, &m.Retries},
		{stopconditions.MaxReviewRounds, &m.ReviewRounds},
	}
}

// runCounters are the run's counters, in the order a resume plan lists
// them when it resets them.
func runCounters(c *state.Counters) []counter {
	return []counter{
		{stopconditions.SameError, &c.SameError},
		{stopconditions.Noop, &c.Noop},
		{stopconditions.NoProgress, &c.NoProgress},
		{stopconditions.MaxConsecutiveFails, &c.ConsecutiveFails},
		{stopconditions.CircuitBreaker, &c.Attempts},
	}
}

// Reset sets back what a resume resets, the counters of the rules that
// say so (DESIGN §7: the retries of milestone idx, the resume's milestone,
// and the streaks), and describes each change, e.g. "same_error 3 → 0".
// Totals (attempts, cost, rates) carry on.
func Reset(st *state.State, idx int) []string {
	var out []string
	zero := func(name string, v *int) {
		if *v != 0 {
			out = append(out, fmt.Sprintf("%s %d → 0", name, *v))
			*v = 0
		}
	}
	edges := stopconditions.MaxEdge
	if idx >= 0 && idx < len(st.Milestones) {
		m := &st.Milestones[idx]
		for _, c := range milestoneCounters(m) {
			if c.rule.ResetOnResume {
				zero(fmt.Sprintf("milestone %d %s", idx+1, c.rule.Counter), c.n)
			}
		}
		if edges.ResetOnResume && len(m.Edges) > 0 {
			out = append(out, fmt.Sprintf("milestone %d %s cleared", idx+1, edges.Counter))
			m.Edges = nil
		}
	}
	c := &st.Counters
	for _, rc := range runCounters(c) {
		if rc.rule.ResetOnResume {
			zero(rc.rule.Counter, rc.n)
		}
	}
	// The failed verify runs in a row that test_failure_streak conditions
	// judge are a streak like the rules' own.
	zero(stopconditions.TypeTestFailureStreak, &c.TestFailStreak)
	if edges.ResetOnResume {
		if len(c.Edges) > 0 {
			out = append(out, edges.Counter+" cleared")
		}
		c.Edges = map[string]int{}
	}
	// The review's last notes: the same changes asked for once before and
	// once after the resume are not a loop.
	st.ReviewNotesHash = ""
	st.Statistics.ConsecutiveFails = c.ConsecutiveFails
	return out
}

// Count is one of the run's counters, named as the rules name it.
type Count struct {
	Name  string
	Value int
}

// Counts are the run's own counters as doctor and report.md show them: the
// streaks a resume resets, in the order of the rule table, then the
// counters that carry on (the attempts the circuit breaker counts).
func Counts(c state.Counters) []Count {
	values := map[*stopconditions.Builtin]int{}
	for _, rc := range runCounters(&c) {
		values[rc.rule] = *rc.n
	}
	var streaks, totals []Count
	for _, b := range stopconditions.Builtins {
		v, ok := values[b]
		switch {
		case !ok:
		case b.ResetOnResume:
			streaks = append(streaks, Count{b.Counter, v})
		default:
			totals = append(totals, Count{b.Counter, v})
		}
	}
	return append(streaks, totals...)
}
