package parallel

import (
	"context"
	"errors"
	"fmt"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// handle takes a worker's report: an approved milestone goes to the merge
// queue and is merged; anything else is the milestone's failure or the
// run's stop. stopping: the run is stopping, nothing more is merged.
func (c *coordinator) handle(ctx context.Context, f finished, stopping bool) *stopreasons.Stop {
	n := f.job.milestone
	m := &c.st.Milestones[n-1]
	c.mu.Lock()
	delete(c.live, f.worker)
	if ch := f.child; ch != nil {
		c.addChild(ch)
		if len(ch.Milestones) >= n {
			cm := ch.Milestones[n-1]
			m.Attempts = append(m.Attempts, cm.Attempts...)
			m.Retries += cm.Retries
		}
	}
	s := c.slots[f.worker-1]
	s.busy = false
	if stopping {
		// The stop records where each worker was: its milestone, branch
		// and worktree stay in its slot.
		s.Phase, s.AgentProcess = state.PhaseStopped, nil
		if f.child != nil {
			s.RunID = f.child.RunID
		}
	} else {
		s.WorkerSlot = state.WorkerSlot{Worker: f.worker}
	}
	c.mu.Unlock()

	if f.child == nil || f.child.StopReason == nil {
		m.Status = state.MilestonePending
		err := f.err
		if err == nil {
			err = errors.New("the worker's run ended without a stop reason")
		}
		c.event(state.WorkerDoneEvent{Worker: f.worker, Milestone: n, Error: err.Error()})
		if stopping {
			return nil
		}
		return internalStop(fmt.Errorf("worker %d, milestone %d: %w", f.worker, n, err))
	}
	cs := f.child.StopReason.Stop
	c.event(state.WorkerDoneEvent{Worker: f.worker, Milestone: n, Code: string(cs.Code), RunID: f.child.RunID})
	if cs.Code == stopreasons.Complete {
		if stopping {
			// Its branch holds the approved work; a resume merges it.
			m.Status = state.MilestonePending
			return nil
		}
		c.st.Parallel.MergeQueue = append(c.st.Parallel.MergeQueue, n)
		return c.mergeQueued(ctx, f.worker)
	}
	m.Status = state.MilestonePending
	if stopping {
		return nil
	}
	if c.cfg.Stop.OnMilestoneFailure == stopconditions.OnFailureSkip && stopconditions.MilestoneStop(cs.Code) {
		m.Status = state.MilestoneFailed
		c.event(state.MilestoneFailedEvent{Worker: f.worker, Milestone: n, Code: string(cs.Code)})
		failure := cs
		failure.Details = &stopreasons.StopDetails{Milestone: n, MilestoneGoal: m.Goal}
		if cs.Details != nil {
			d := *cs.Details
			d.Milestone, d.MilestoneGoal = n, m.Goal
			failure.Details = &d
		}
		c.lastFail = &failure
		return c.failedInARow(n)
	}
	sp := cs
	if sp.Details == nil {
		sp.Details = &stopreasons.StopDetails{}
	}
	sp.Details.Milestone, sp.Details.MilestoneGoal = n, m.Goal
	sp.Message = fmt.Sprintf("worker %d, milestone %d: %s", f.worker, n, sp.Message)
	return &sp
}

// failedInARow counts milestone n's failure (skip mode) among the run's
// milestones failed in a row, in the order they settled, whichever worker
// had them; at stop.max_consecutive_fails the run stops with
// consecutive_fails, as a sequential run does.
func (c *coordinator) failedInARow(n int) *stopreasons.Stop {
	c.st.Counters.ConsecutiveFails++
	rule := stopconditions.MaxConsecutiveFails
	sp := rule.Judge(&stopconditions.Snapshot{ConsecutiveFails: c.st.Counters.ConsecutiveFails}, c.cfg.Stop)
	if sp == nil {
		return nil
	}
	sp.Message = fmt.Sprintf("%d milestones failed in a row across the workers (stop.%s %d), the last milestone %d", sp.Value, rule.Key, sp.Threshold, n)
	sp.Details = &stopreasons.StopDetails{Milestone: n, MilestoneGoal: c.st.Milestones[n-1].Goal}
	return sp
}
