package supervisor

import (
	"context"
	"time"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
)

// snapshot is the run as the stop conditions see it after a step with
// result res.
func (s *Supervisor) snapshot(ctx context.Context, res result) *stopconditions.Snapshot {
	st := s.st
	stats := statistics(st)
	st.Statistics = stats
	snap := &stopconditions.Snapshot{
		Tick:             st.Tick,
		Iteration:        st.Iteration,
		Checking:         st.Phase == state.PhaseVerify || st.Phase == state.PhaseReview || st.Phase == state.PhaseCheckpoint,
		Elapsed:          s.elapsed(),
		CostUSD:          st.Usage.CostUSD,
		Tokens:           st.Usage.InputTokens + st.Usage.OutputTokens,
		Attempts:         st.Counters.Attempts,
		TotalMilestones:  stats.TotalMilestones,
		Attempted:        stats.Attempted,
		Approved:         stats.Approved,
		Rejected:         stats.Rejected,
		Failed:           stats.Failed,
		Retried:          retried(st),
		Finished:         st.MilestoneIndex >= len(st.Milestones),
		LastFailureAgent: st.LastFailure != nil && st.LastFailure.Phase == state.PhaseImplement,
		Milestone:        min(st.MilestoneIndex+1, len(st.Milestones)),
		ConsecutiveFails: st.Counters.ConsecutiveFails,
		SameError:        st.Counters.SameError,
		Noop:             st.Counters.Noop,
		NoProgress:       st.Counters.NoProgress,
		Edges:            st.Counters.Edges,
		ReviewRepeated:   res.reviewRepeated,
		TestFailStreak:   st.Counters.TestFailStreak,
		LastOutput:       s.lastOutput,
		LastError:        res.errEvent,
		StopRequested:    s.store.StopRequested(st.RunID),
		RepoDir:          s.dir,
		Scripts:          s.runScripts(ctx),
	}
	if s.started.IsZero() {
		snap.Elapsed = time.Duration(st.ElapsedMS) * time.Millisecond
	}
	if st.MilestoneIndex < len(st.Milestones) {
		m := st.Milestones[st.MilestoneIndex]
		snap.MilestoneFailures = m.Retries
		snap.ReviewRounds = m.ReviewRounds
	}
	for _, c := range st.Verify {
		snap.Verify = append(snap.Verify, stopconditions.Check{Command: c.Command, Passed: c.Passed})
	}
	if one := s.o.Single; one != nil && one.Shared != nil {
		one.Shared(snap)
	}
	if len(st.StartFiles) > 0 {
		snap.StartFiles = map[string]bool{}
		for _, p := range st.StartFiles {
			snap.StartFiles[p] = true
		}
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
