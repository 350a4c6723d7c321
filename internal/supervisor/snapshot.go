package supervisor

import (
	"context"
	"time"

	"github.com/runr-dev/runr/internal/rulestate"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
)

// snapshot is the run as the stop conditions see it after a step with
// result res: the recorded run with what only the live run knows.
func (s *Supervisor) snapshot(ctx context.Context, res result) *stopconditions.Snapshot {
	st := s.st
	st.Statistics = statistics(st)
	elapsed := s.elapsed()
	if s.started.IsZero() {
		elapsed = time.Duration(st.ElapsedMS) * time.Millisecond
	}
	snap := rulestate.Snapshot(st, elapsed)
	snap.ReviewRepeated = res.reviewRepeated
	snap.LastOutput = s.lastOutput
	snap.LastError = res.errEvent
	snap.StopRequested = s.store.StopRequested(st.RunID)
	snap.RepoDir = s.dir
	snap.Scripts = s.runScripts(ctx)
	if one := s.o.Single; one != nil && one.Shared != nil {
		one.Shared(snap)
	}
	return snap
}

// statistics summarise the milestones (DESIGN §4: a milestone is attempted
// once it has one finished attempt).
func statistics(st *state.State) state.Statistics {
	stats := state.Statistics{TotalMilestones: len(st.Milestones), ConsecutiveFails: st.Counters.ConsecutiveFails}
	for _, m := range st.Milestones {
		if m.Attempted() {
			stats.Attempted++
		}
		switch m.Status {
		case state.MilestoneApproved:
			stats.Approved++
		case state.MilestoneRejected:
			stats.Rejected++
		case state.MilestoneFailed:
			stats.Failed++
		}
	}
	if stats.Attempted > 0 {
		stats.RetryRate = float64(retried(st)) / float64(stats.Attempted)
		stats.RejectRate = float64(stats.Rejected+stats.Failed) / float64(stats.Attempted)
	}
	return stats
}

// retried counts the attempted milestones that needed more than one
// judged attempt; incomplete iterations are not retries. It counts the
// attempts state.json no longer lists too (Milestone.Earlier).
func retried(st *state.State) int {
	n := 0
	for _, m := range st.Milestones {
		if m.JudgedAttempts() > 1 {
			n++
		}
	}
	return n
}

// watchedFiles are the paths of file_created conditions, whose existence at
// the start of the run is recorded.
func watchedFiles(r stopconditions.Rules) []string {
	return stopconditions.FileCreatedPaths(r.Success, r.Failure, r.Conditions)
}
