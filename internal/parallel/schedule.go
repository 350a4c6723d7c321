package parallel

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// loop hands milestones to free workers, merges what they approve, and
// returns the run's stop.
func (c *coordinator) loop(ctx context.Context) *stopreasons.Stop {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan os.Signal, 1)
	if c.o.Signals != nil {
		stopWatch := make(chan struct{})
		defer close(stopWatch)
		go c.watchSignals(stopWatch, sigs, cancel)
	}
	var sp *stopreasons.Stop
	for {
		if sp == nil {
			var begun bool
			sp, begun = c.schedule(runCtx)
			if sp == nil && begun {
				// The new workers' runs are in state.json before they
				// spend: a resume adds the spend of the runs of busy slots.
				if err := c.save(); err != nil {
					sp = internalStop(err)
				}
			}
			if sp != nil {
				c.stopAll(os.Interrupt)
			}
		}
		if c.busy() == 0 {
			if sp == nil {
				sp = c.check()
			}
			if sp != nil {
				return sp
			}
		}
		select {
		case f := <-c.done:
			if s := c.handle(runCtx, f, sp != nil); s != nil && sp == nil {
				sp = s
				c.stopAll(os.Interrupt)
			}
		case sig := <-sigs:
			if sp == nil {
				bySignal := stopreasons.SignalStop(sig)
				sp = &bySignal
			}
		}
		if err := c.save(); err != nil && sp == nil {
			sp = internalStop(err)
			c.stopAll(os.Interrupt)
		}
	}
}

// watchSignals passes every signal runr gets on to each busy worker's run
// (a second Ctrl+C kills their groups at once there) and tells the loop.
func (c *coordinator) watchSignals(stop <-chan struct{}, loop chan<- os.Signal, cancel context.CancelFunc) {
	for {
		select {
		case <-stop:
			return
		case sig := <-c.o.Signals:
			c.mu.Lock()
			if c.sig == nil {
				c.sig = sig
			}
			c.mu.Unlock()
			cancel()
			c.stopAll(sig)
			select {
			case loop <- sig:
			default:
			}
		}
	}
}

// stopAll asks every busy worker's run to stop: its agent's group gets
// SIGTERM, then SIGKILL after agent.kill_grace.
func (c *coordinator) stopAll(sig os.Signal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.slots {
		if s.busy {
			select {
			case s.signals <- sig:
			default:
			}
		}
	}
}

func (c *coordinator) busy() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.slots {
		if s.busy {
			n++
		}
	}
	return n
}

// group is the group the run works on: the first with a milestone neither
// approved nor failed; -1 when every milestone is settled.
func (c *coordinator) group() int {
	for i, m := range c.st.Milestones {
		if m.Status != state.MilestoneApproved && m.Status != state.MilestoneFailed {
			return c.groupOf(i + 1)
		}
	}
	return -1
}

func (c *coordinator) groupOf(milestone int) int {
	if milestone-1 < len(c.groups) {
		return c.groups[milestone-1]
	}
	return 0
}

// schedule hands waiting milestones of the current group to free workers.
func (c *coordinator) schedule(ctx context.Context) (sp *stopreasons.Stop, begun bool) {
	g := c.group()
	if g < 0 {
		return nil, false
	}
	for i, m := range c.st.Milestones {
		if m.Status == state.MilestonePending && c.groupOf(i+1) == g && !c.queued(i+1) {
			c.queue = append(c.queue, job{milestone: i + 1})
		}
	}
	for len(c.queue) > 0 {
		k := c.freeWorker()
		if k == 0 {
			return nil, begun
		}
		j := c.queue[0]
		c.queue = c.queue[1:]
		if j.start == "" {
			head, err := guard.Head(ctx, c.integ)
			if err != nil {
				return internalStop(err), begun
			}
			j.start = head
		}
		c.begin(ctx, k, j)
		begun = true
	}
	return nil, begun
}

func (c *coordinator) queued(milestone int) bool {
	return slices.ContainsFunc(c.queue, func(j job) bool { return j.milestone == milestone })
}

func (c *coordinator) freeWorker() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.slots {
		if !s.busy {
			return s.Worker
		}
	}
	return 0
}

// check is the stop of a run with no worker busy and nothing to hand out:
// complete when every milestone merged, else the skip-mode end.
func (c *coordinator) check() *stopreasons.Stop {
	if g := c.group(); g >= 0 {
		for i, m := range c.st.Milestones {
			if c.groupOf(i+1) == g && m.Status == state.MilestonePending {
				return nil // more to hand out
			}
		}
		return &stopreasons.Stop{Code: stopreasons.InternalError, Message: fmt.Sprintf("group %d has no milestone left to work and none settled", g+1)}
	}
	failed := 0
	for _, m := range c.st.Milestones {
		if m.Status == state.MilestoneFailed {
			failed++
		}
	}
	if failed > 0 {
		sp := stopreasons.Stop{Code: stopreasons.VerificationFailed, Details: &stopreasons.StopDetails{}}
		if c.lastFail != nil {
			sp = *c.lastFail
		}
		d := *sp.Details
		d.Unapproved = failed
		sp.Details, sp.Condition = &d, stopconditions.RuleFinishedFailed
		sp.Message = fmt.Sprintf("the run finished with %d of %s failed (last: %s); the others are merged on %s",
			failed, stopreasons.Plural(len(c.st.Milestones), "milestone"), sp.Message, c.branch)
		return &sp
	}
	return &stopreasons.Stop{Code: stopreasons.Complete, Condition: stopconditions.RuleMilestones,
		Message: fmt.Sprintf("all milestones merged into %s and verified there; take the result with: git merge %s", c.branch, c.branch)}
}

// begin starts worker k on job j.
func (c *coordinator) begin(ctx context.Context, k int, j job) {
	m := &c.st.Milestones[j.milestone-1]
	m.Status = state.MilestoneInProgress
	c.mu.Lock()
	s := c.slots[k-1]
	s.busy = true
	for len(s.signals) > 0 {
		<-s.signals
	}
	// The worker's run is named now, so that state.json says where its
	// process is recorded from the start.
	runID := state.NewRunID(c.o.Now().UTC())
	s.WorkerSlot = state.WorkerSlot{Worker: k, Milestone: j.milestone, Worktree: c.workerDir(k), Branch: c.milestoneBranch(j.milestone),
		Phase: state.PhaseImplement, RunID: runID, StartedAt: c.o.Now().UTC().Format(time.RFC3339), Requeues: c.st.Parallel.Requeues[j.milestone-1]}
	c.mu.Unlock()
	c.event(state.WorkerStartedEvent{Worker: k, Milestone: j.milestone, Branch: c.milestoneBranch(j.milestone),
		Start: j.start, Requeue: c.st.Parallel.Requeues[j.milestone-1]})
	go func() {
		child, err := c.work(ctx, k, j, runID, s.signals)
		c.done <- finished{worker: k, job: j, child: child, err: err}
	}()
}
