package state

// Tally counts the run's statistics from its milestones and counters:
// what state.json's statistics and a stop record, the same for a
// sequential run and a parallel one.
func (st *State) Tally() Statistics {
	stats := Statistics{TotalMilestones: len(st.Milestones), ConsecutiveFails: st.Counters.ConsecutiveFails}
	retried := 0
	for _, m := range st.Milestones {
		if m.Attempted() {
			stats.Attempted++
		}
		// Incomplete iterations are not retries; JudgedAttempts counts
		// the attempts state.json no longer lists too.
		if m.JudgedAttempts() > 1 {
			retried++
		}
		switch m.Status {
		case MilestoneApproved:
			stats.Approved++
		case MilestoneRejected:
			stats.Rejected++
		case MilestoneFailed:
			stats.Failed++
		}
	}
	if stats.Attempted > 0 {
		stats.RetryRate = float64(retried) / float64(stats.Attempted)
		stats.RejectRate = float64(stats.Rejected+stats.Failed) / float64(stats.Attempted)
	}
	return stats
}
