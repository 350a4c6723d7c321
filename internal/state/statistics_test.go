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
