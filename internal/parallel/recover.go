package parallel

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/supervisor"
)

// recover brings a stopped or crashed run back to a state the loop can go
// on from: no worker process alive, the integration worktree at its last
// commit, every milestone merged by its trailer approved, the others
// pending with their branches' work to carry.
func (c *coordinator) recover(ctx context.Context) *stopreasons.Stop {
	if sp := c.settleWorkerRuns(); sp != nil {
		return sp
	}
	if c.st.Parallel.Base == "" {
		// Killed before the integration branch was made.
		head, err := guard.Head(ctx, c.o.Repo)
		if err != nil {
			return internalStop(err)
		}
		c.st.Parallel.Base, c.st.Parallel.Integration, c.st.Parallel.Branch = head, c.integ, c.branch
		c.st.Worktree, c.st.Branch = c.integ, c.branch
	}
	start := c.st.Parallel.Base
	if tip, err := guard.RevParse(ctx, c.o.Repo, c.branch); err == nil {
		start = tip
	}
	if err := c.ensureTree(ctx, c.integ, c.branch, start, false); err != nil {
		return &stopreasons.Stop{Code: stopreasons.EnvironmentInvalid, Message: err.Error()}
	}
	merged, err := guard.MergedMilestones(ctx, c.integ, c.st.Parallel.Base)
	if err != nil {
		return internalStop(err)
	}
	head, err := guard.Head(ctx, c.integ)
	if err != nil {
		return internalStop(err)
	}
	queued := c.st.Parallel.MergeQueue
	c.st.Parallel.MergeQueue = nil
	for i := range c.st.Milestones {
		n, m := i+1, &c.st.Milestones[i]
		if sha, ok := merged[n]; ok {
			m.Status, m.Commit = state.MilestoneApproved, sha
			continue
		}
		if m.Status == state.MilestoneFailed {
			continue // skip mode let it fail; the run went on
		}
		m.Status = state.MilestonePending
		tip, err := guard.RevParse(ctx, c.o.Repo, c.milestoneBranch(n))
		if err != nil || tip == head {
			continue // no branch: the milestone starts afresh
		}
		j := job{milestone: n, start: head, carry: tip,
			feedback: "The run was interrupted while this milestone was worked on; the work done so far is in the tree. Finish the milestone."}
		m.Status = state.MilestoneInProgress // queued
		if slices.Contains(queued, n) {
			c.queue = append([]job{j}, c.queue...)
		} else {
			c.queue = append(c.queue, j)
		}
	}
	c.st.Workers = nil
	return nil
}

// settleWorkerRuns stops what the worker runs of a crashed runr left alive
// and records them stopped, and adds to the run's spend that of every
// worker run whose report the coordinator never took.
func (c *coordinator) settleWorkerRuns() *stopreasons.Stop {
	// The worker runs whose spend the saved state does not hold yet: those
	// of the slots still busy there. A report taken clears its slot (or, at
	// a stop, marks it stopped) before the next save.
	untaken := map[string]bool{}
	for _, s := range c.st.Workers {
		if s.Milestone > 0 && s.RunID != "" && s.Phase != state.PhaseStopped {
			untaken[s.RunID] = true
		}
	}
	children, _ := filepath.Glob(filepath.Join(c.runDir, "workers", "w*", "runs", "*", "state.json"))
	for _, path := range children {
		home := filepath.Dir(filepath.Dir(filepath.Dir(path)))
		store, err := state.Open(home)
		if err != nil {
			return internalStop(err)
		}
		child, err := store.Load(filepath.Base(filepath.Dir(path)))
		if err != nil {
			continue // unreadable: it holds no live process
		}
		if child.StopReason == nil {
			// The worker's processes carry the run's id and their worker's
			// number (workers/w<k>), which is how the recovery finds the
			// ones its state.json did not record.
			k, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(home), "w"))
			sup := supervisor.New(supervisor.Options{Config: c.cfg, Store: store, Now: c.o.Now,
				Single: &supervisor.Single{RunID: c.st.RunID, RunDir: c.runDir, Worker: k}})
			if _, err := sup.RecoverCrash(child); err != nil {
				return internalStop(err)
			}
			child.RunStatus = stopreasons.RunStopped
			now := c.o.Now().UTC()
			child.StoppedAt = &now
			child.StopReason = state.NewStopReason(stopreasons.Terminated, 0, "the parallel run's runr died; the milestone starts again from its branch")
			_ = store.Save(child)
		}
		// A worker run that finished, or whose runr died, before the
		// coordinator took its report: its spend was never added to the
		// run's. The slot's record goes on the next save, so never twice.
		if untaken[child.RunID] {
			c.addChild(child)
		}
	}
	return nil
}
