package rulestate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
)

// worked is a run at its second milestone of three, with every counter of
// the rules set.
func worked() *state.State {
	return &state.State{
		Tick: 12, Iteration: 7, Phase: state.PhaseVerify,
		Usage:      state.Usage{CostUSD: 1.5, InputTokens: 100, OutputTokens: 20},
		Statistics: state.Statistics{Attempted: 2, Approved: 1, Rejected: 1, ConsecutiveFails: 1},
		Milestones: []state.Milestone{
			{Status: state.MilestoneApproved, Retries: 1, Attempts: []state.Attempt{{Outcome: state.OutcomeFailed}, {Outcome: state.OutcomeApproved}}},
			{Status: state.MilestoneInProgress, Retries: 3, ReviewRounds: 1, Edges: map[string]int{"verify->implement": 2},
				Attempts: []state.Attempt{{Outcome: state.OutcomeIncomplete}, {Outcome: state.OutcomeFailed}}},
			{Status: state.MilestonePending},
		},
		MilestoneIndex: 1,
		Counters: state.Counters{ConsecutiveFails: 1, SameError: 2, Noop: 4, NoProgress: 5, TestFailStreak: 2, Attempts: 9,
			Edges: map[string]int{"verify->implement": 2}},
		LastFailure:     &state.Failure{Phase: state.PhaseImplement},
		ReviewNotesHash: "abc",
		Verify:          []state.CheckResult{{Command: "go test ./...", Passed: true}},
		StartFiles:      []string{"out.txt"},
	}
}

func TestSnapshot(t *testing.T) {
	snap := Snapshot(worked(), 3*time.Minute)
	assert.Equal(t, &stopconditions.Snapshot{
		Tick: 12, Iteration: 7, Elapsed: 3 * time.Minute, CostUSD: 1.5, Tokens: 120, Attempts: 9,
		Checking:        true,
		TotalMilestones: 3, Attempted: 2, Approved: 1, Rejected: 1, Retried: 1,
		MilestoneFailures: 3, LastFailureAgent: true, Milestone: 2,
		ConsecutiveFails: 1, SameError: 2, Noop: 4, NoProgress: 5,
		Edges:        map[string]int{"verify->implement": 2},
		ReviewRounds: 1, TestFailStreak: 2,
		Verify:     []stopconditions.Check{{Command: "go test ./...", Passed: true}},
		StartFiles: map[string]bool{"out.txt": true},
	}, snap)

	st := worked()
	st.MilestoneIndex = 3
	snap = Snapshot(st, 0)
	assert.True(t, snap.Finished)
	assert.Equal(t, 3, snap.Milestone, "a finished run is at its last milestone")
}

// The counter each rule judges in the snapshot is the one of state.json
// that a resume resets for it.
func TestSnapshotReadsTheCountersResetReads(t *testing.T) {
	st := worked()
	m := &st.Milestones[st.MilestoneIndex]
	counters := append(milestoneCounters(m), runCounters(&st.Counters)...)
	for i, c := range counters {
		*c.n = 100 + i
	}
	snap := Snapshot(st, 0)
	for i, c := range counters {
		require.NotNil(t, c.rule.Count, c.rule.Key)
		assert.Equal(t, 100+i, c.rule.Count(snap), c.rule.Key)
	}
}

// Every rule that a resume resets has its counter in state.json known
// here, kept where the rule's scope says: with the milestone or the run.
func TestEveryResetRuleHasItsCounter(t *testing.T) {
	st := worked()
	known := map[*stopconditions.Builtin]bool{stopconditions.MaxEdge: true}
	for _, c := range milestoneCounters(&st.Milestones[0]) {
		known[c.rule] = true
		assert.Equal(t, stopconditions.PerMilestone, c.rule.Scope, c.rule.Key)
	}
	for _, c := range runCounters(&st.Counters) {
		known[c.rule] = true
		assert.Equal(t, stopconditions.PerRun, c.rule.Scope, c.rule.Key)
	}
	for _, b := range stopconditions.Builtins {
		if b.ResetOnResume {
			assert.True(t, known[b], "%s is reset on resume, but its counter is not listed", b.Key)
		}
	}
}

func TestReset(t *testing.T) {
	st := worked()
	resets := Reset(st, 1)
	assert.Equal(t, []string{
		"milestone 2 retries 3 → 0",
		"milestone 2 review rounds 1 → 0",
		"milestone 2 loop edges cleared",
		"same_error 2 → 0",
		"noop 4 → 0",
		"no_progress 5 → 0",
		"consecutive_fails 1 → 0",
		"test_failure_streak 2 → 0",
		"loop edges cleared",
	}, resets)

	m := st.Milestones[1]
	assert.Zero(t, m.Retries)
	assert.Zero(t, m.ReviewRounds)
	assert.Empty(t, m.Edges)
	assert.Equal(t, 1, st.Milestones[0].Retries, "only the resumed milestone's retries reset")
	assert.Equal(t, state.Counters{Attempts: 9, Edges: map[string]int{}}, st.Counters, "the total of attempts carries on")
	assert.Zero(t, st.Statistics.ConsecutiveFails)
	assert.Empty(t, st.ReviewNotesHash)

	assert.Empty(t, Reset(st, 1), "nothing left to reset")
	assert.Empty(t, Reset(&state.State{}, -1))
}

// TestCountsFollowTheRuleTable: doctor and report.md name the run's
// counters as the rules do, the streaks first, in the table's order.
func TestCountsFollowTheRuleTable(t *testing.T) {
	c := state.Counters{ConsecutiveFails: 1, SameError: 2, Noop: 3, NoProgress: 4, Attempts: 5, TestFailStreak: 6}
	assert.Equal(t, []Count{{"consecutive_fails", 1}, {"same_error", 2}, {"noop", 3}, {"no_progress", 4}, {"attempts", 5}}, Counts(c))
}
