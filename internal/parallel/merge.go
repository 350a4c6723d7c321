package parallel

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/supervisor"
)

// feedbackLines bounds the failing output handed to a requeued milestone;
// feedbackBytes its previous diff.
const (
	feedbackLines = 60
	feedbackBytes = 32 << 10
)

// mergeQueued merges the queued milestones in order of approval.
func (c *coordinator) mergeQueued(ctx context.Context, k int) *stopreasons.Stop {
	p := c.st.Parallel
	for len(p.MergeQueue) > 0 {
		n := p.MergeQueue[0]
		sp := c.merge(ctx, k, n)
		p.MergeQueue = p.MergeQueue[1:]
		if err := c.save(); err != nil && sp == nil {
			sp = internalStop(err)
		}
		if sp != nil {
			return sp
		}
	}
	return nil
}

// merge brings milestone n's branch into the integration branch, runs the
// verify commands on the merged tree, and commits it with the milestone's
// trailer; a conflict or a failed check undoes the merge and requeues the
// milestone (merge_conflict after parallel.max_requeues).
func (c *coordinator) merge(ctx context.Context, k, n int) *stopreasons.Stop {
	m := &c.st.Milestones[n-1]
	merged, err := guard.MergedMilestones(ctx, c.integ, c.st.Parallel.Base)
	if err != nil {
		return internalStop(err)
	}
	if sha, ok := merged[n]; ok {
		// A crash after the commit and before state.json said so.
		c.approve(n, sha, k)
		return nil
	}
	head, err := guard.Head(ctx, c.integ)
	if err != nil {
		return internalStop(err)
	}
	branch := c.milestoneBranch(n)
	tip, err := guard.RevParse(ctx, c.integ, branch)
	if err != nil {
		return internalStop(err)
	}
	c.gitMu.Lock()
	// The merge starts from the integration head exactly: the verify
	// commands of the last merge may have written in the tree (a formatter,
	// a lock file, a generated file), which would block the merge or leak
	// into this milestone's commit. Ignored files stay, caches with them.
	err = guard.ResetTo(ctx, c.integ, head)
	var conflicts []string
	if err == nil {
		conflicts, err = guard.SquashMerge(ctx, c.integ, branch)
	}
	c.gitMu.Unlock()
	if err != nil {
		return internalStop(err)
	}
	if len(conflicts) > 0 {
		if err := guard.ResetTo(ctx, c.integ, head); err != nil {
			return internalStop(err)
		}
		c.event(state.MergeEvent{Worker: k, Milestone: n, Outcome: state.MergeConflict, Files: conflicts})
		base, _ := guard.MergeBase(ctx, c.integ, head, tip)
		diff, _ := guard.Diff(ctx, c.integ, base, tip, feedbackBytes)
		feedback := fmt.Sprintf("This milestone was done before other milestones were merged, and its change conflicts with theirs in: %s.\n"+
			"The work tree now holds the merged result of the others; implement the milestone again on top of it, keeping their changes.\n"+
			"Your previous change was:\n\n%s", strings.Join(conflicts, ", "), diff)
		return c.failedMerge(ctx, k, n, job{milestone: n, feedback: feedback}, conflicts, "")
	}
	cmd, out, passed, err := c.verifyMerged(ctx, n)
	if err != nil {
		_ = guard.ResetTo(context.WithoutCancel(ctx), c.integ, head)
		if ctx.Err() != nil {
			return nil // a signal: the loop records the stop; the milestone is merged on resume
		}
		return internalStop(err)
	}
	if !passed {
		if err := guard.ResetTo(ctx, c.integ, head); err != nil {
			return internalStop(err)
		}
		c.event(state.MergeEvent{Worker: k, Milestone: n, Outcome: state.MergeVerifyFailed, Command: cmd})
		feedback := fmt.Sprintf("This milestone passed its checks on its own, but once merged with the milestones merged before it the check `%s` failed. "+
			"Your change is applied on top of their merged result; make the check pass there. The end of its output:\n\n%s", cmd, out)
		return c.failedMerge(ctx, k, n, job{milestone: n, carry: tip, feedback: feedback}, nil, cmd)
	}
	c.gitMu.Lock()
	defer c.gitMu.Unlock()
	sha, err := guard.CommitMilestone(ctx, c.integ, fmt.Sprintf("runr %s: milestone %d/%d: %s", c.st.RunID, n, len(c.st.Milestones), m.Goal), n)
	if err != nil {
		return internalStop(err)
	}
	c.approve(n, sha, k)
	return nil
}

func (c *coordinator) approve(n int, sha string, k int) {
	m := &c.st.Milestones[n-1]
	m.Status, m.Commit = state.MilestoneApproved, sha
	c.st.Counters.ConsecutiveFails = 0
	c.event(state.MergeEvent{Worker: k, Milestone: n, Outcome: state.MergeMerged, Commit: sha})
	if c.o.Milestones != nil {
		_ = c.o.Milestones.MilestoneApproved(c.st.RunID, c.runDir, n, m.Goal)
	}
	c.note(fmt.Sprintf("worker %d: milestone %d merged into %s (%s)", k, n, c.branch, short(sha)))
}

// failedMerge requeues milestone n with its feedback, or stops the run with
// merge_conflict once it was returned parallel.max_requeues times (skip
// mode: the milestone fails).
func (c *coordinator) failedMerge(ctx context.Context, k, n int, j job, files []string, cmd string) *stopreasons.Stop {
	p := c.st.Parallel
	m := &c.st.Milestones[n-1]
	if p.Requeues[n-1] >= c.cfg.Parallel.MaxRequeues {
		what := "verify failed on the merged tree"
		if len(files) > 0 {
			what = "conflict in " + strings.Join(files, ", ")
		}
		sp := &stopreasons.Stop{Code: stopreasons.MergeConflict, Condition: "parallel.max_requeues", Value: p.Requeues[n-1], Threshold: c.cfg.Parallel.MaxRequeues,
			Message: fmt.Sprintf("milestone %d did not merge from %s into %s: %s", n, c.milestoneBranch(n), c.branch, what),
			Details: &stopreasons.StopDetails{Milestone: n, MilestoneGoal: m.Goal, Files: files, Command: cmd}}
		if c.cfg.Stop.OnMilestoneFailure == stopconditions.OnFailureSkip {
			m.Status = state.MilestoneFailed
			c.event(state.MilestoneFailedEvent{Worker: k, Milestone: n, Code: string(stopreasons.MergeConflict), Files: files})
			c.lastFail = sp
			return c.failedInARow(n)
		}
		m.Status = state.MilestonePending
		return sp
	}
	p.Requeues[n-1]++
	head, err := guard.Head(ctx, c.integ)
	if err != nil {
		return internalStop(err)
	}
	j.start = head
	m.Status = state.MilestoneInProgress // in the queue, not to be queued again
	c.queue = append([]job{j}, c.queue...)
	c.event(state.RequeueEvent{Worker: k, Milestone: n, Requeue: p.Requeues[n-1], Files: files, Command: cmd})
	why := "verify failed on the merged tree: " + cmd
	if len(files) > 0 {
		why = "conflict in " + strings.Join(files, ", ")
	}
	c.note(fmt.Sprintf("worker %d: milestone %d did not merge (%s); requeued (%d of %d)", k, n, why, p.Requeues[n-1], c.cfg.Parallel.MaxRequeues))
	return nil
}

// verifyMerged runs the verify commands on the integration worktree. It
// returns the first failing command and the end of its output.
func (c *coordinator) verifyMerged(ctx context.Context, n int) (string, string, bool, error) {
	logPath := filepath.Join(c.runDir, fmt.Sprintf("merge-m%d.log", n))
	env := append(slices.Clone(c.o.Environ), "RUNR_RUN_ID="+c.st.RunID, "RUNR_RUN_DIR="+c.runDir, "RUNR_PHASE=verify", "RUNR_MILESTONE="+strconv.Itoa(n))
	// Verify commands that write coverage profiles find their directory
	// on the merged tree too, though the merge judges only their exits.
	cov, err := supervisor.CoverageEnv(c.runDir)
	if err != nil {
		return "", "", false, err
	}
	env = append(env, cov)
	for _, cmd := range c.cfg.Verify.Commands {
		res, err := proc.Run(ctx, proc.Spec{Argv: []string{"sh", "-c", cmd}, Dir: c.integ, Env: env, LogPath: logPath,
			LogCap: c.cfg.Agent.LogCap, Timeout: c.cfg.Verify.Timeout, KillGrace: c.cfg.Agent.KillGrace})
		if err != nil {
			return cmd, "", false, err
		}
		if res.Canceled && ctx.Err() != nil {
			return cmd, "", false, ctx.Err()
		}
		if res.ExitCode != 0 || res.TimedOut {
			return cmd, proc.Tail(res.Tail, feedbackLines), false, nil
		}
	}
	return "", "", true, nil
}
