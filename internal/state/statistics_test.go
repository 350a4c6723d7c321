package state

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTallyCountsEveryKindOfMilestone: rejected milestones count, the rates
// are figured, and the counters' consecutive fails are carried, whichever
// coordinator ran the milestones.
func TestTallyCountsEveryKindOfMilestone(t *testing.T) {
	st := &State{Counters: Counters{ConsecutiveFails: 2}, Milestones: []Milestone{
		{Status: MilestoneApproved, Attempts: []Attempt{{Outcome: OutcomeApproved}}},
		{Status: MilestoneRejected, Attempts: []Attempt{{Outcome: OutcomeRejected}}},
		{Status: MilestoneFailed, Attempts: []Attempt{{Outcome: OutcomeFailed}, {Outcome: OutcomeFailed}}},
		{Status: MilestonePending},
	}}
	s := st.Tally()
	assert.Equal(t, Statistics{TotalMilestones: 4, Attempted: 3, Approved: 1, Rejected: 1, Failed: 1,
		ConsecutiveFails: 2, RetryRate: 1.0 / 3, RejectRate: 2.0 / 3}, s)
}

func TestStatisticsJudgeFinishedAttemptsOnly(t *testing.T) {
	st := &State{Milestones: []Milestone{
		{Status: MilestoneApproved, Attempts: []Attempt{{Outcome: OutcomeFailed}, {Outcome: OutcomeApproved}}},
		{Status: MilestoneApproved, Attempts: []Attempt{{Outcome: OutcomeIncomplete}, {Outcome: OutcomeApproved}}},
		{Status: MilestoneFailed, Attempts: []Attempt{{Outcome: OutcomeFailed}, {Outcome: OutcomeFailed}}},
		{Status: MilestoneInProgress, Attempts: []Attempt{{Outcome: OutcomeStopped}}},
		{Status: MilestonePending},
	}}
	s := st.Tally()
	assert.Equal(t, 5, s.TotalMilestones)
	assert.Equal(t, 3, s.Attempted, "a milestone whose only attempt was cut short is not attempted")
	assert.Equal(t, 2, s.Approved)
	assert.Equal(t, 1, s.Failed)
	assert.InDelta(t, 2.0/3, s.RetryRate, 1e-9, "an incomplete iteration is not a retry")
	assert.InDelta(t, 1.0/3, s.RejectRate, 1e-9)
}
