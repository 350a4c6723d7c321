package parallel

import (
	"context"
	"os"

	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/supervisor"
)

// finish records the run's stop: state.json, the timeline, report.md and
// stop.json. A completed run's worker worktrees are removed.
func (c *coordinator) finish(sp *stopreasons.Stop) (*state.State, error) {
	st := c.st
	c.mu.Lock()
	sig := c.sig // watchSignals may still be taking one
	c.mu.Unlock()
	if sig != nil && sp.Code != stopreasons.UserStopped && sp.Code != stopreasons.Terminated && sp.Code != stopreasons.Complete {
		bySignal := stopreasons.SignalStop(sig)
		sp = &bySignal
	}
	now := c.o.Now().UTC()
	st.ElapsedMS = c.baseMS + now.Sub(c.start).Milliseconds()
	// A resume goes back to the first milestone not approved.
	st.MilestoneIndex = len(st.Milestones)
	for i, m := range st.Milestones {
		if m.Status != state.MilestoneApproved {
			st.MilestoneIndex = i
			break
		}
	}
	if sp.Code == stopreasons.Complete {
		c.cleanUp()
	}
	err := supervisor.RecordStop(c.store, st, supervisor.StopRecord{Stop: *sp, Now: now,
		Resume: state.ResumeFrom{Milestone: st.MilestoneIndex + 1, Phase: state.PhaseImplement},
		Event:  c.event, Save: c.save})
	c.o.Progress(supervisor.Progress{RunID: st.RunID, Milestones: len(st.Milestones), Msg: supervisor.ProgressStop{Message: sp.Message}})
	return st, err
}

// cleanUp removes the worktrees of a completed run and its milestones'
// branches: the integration branch holds the result.
func (c *coordinator) cleanUp() {
	ctx := context.Background()
	for _, s := range c.slots {
		dir := c.workerDir(s.Worker)
		if _, err := os.Stat(dir); err == nil {
			if err := guard.DiscardWorktree(ctx, c.o.Repo, dir); err != nil {
				c.event(state.WarningEvent{Message: err.Error()})
			}
		}
	}
	for i := range c.st.Milestones {
		_, _ = guard.DeleteBranch(ctx, c.o.Repo, c.milestoneBranch(i+1))
	}
	if err := guard.DiscardWorktree(ctx, c.o.Repo, c.integ); err != nil {
		c.event(state.WarningEvent{Message: err.Error()})
	} else {
		c.st.Worktree = ""
	}
	_ = os.Remove(c.home)
	c.st.Workers = nil
	c.mu.Lock()
	for _, s := range c.slots {
		s.WorkerSlot = state.WorkerSlot{Worker: s.Worker}
	}
	c.mu.Unlock()
}
