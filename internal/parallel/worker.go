package parallel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/supervisor"
)

// work runs milestone j on worker k: its worktree on the milestone's branch
// at the job's start, then one supervised run of the milestone there.
func (c *coordinator) work(ctx context.Context, k int, j job, runID string, signals chan os.Signal) (*state.State, error) {
	dir, branch := c.workerDir(k), c.milestoneBranch(j.milestone)
	if err := c.ensureTree(ctx, dir, branch, j.start, true); err != nil {
		return nil, err
	}
	feedback := j.feedback
	if j.carry != "" {
		c.gitMu.Lock()
		conflicts, err := guard.SquashMerge(ctx, dir, j.carry)
		c.gitMu.Unlock()
		switch {
		case err != nil:
			return nil, err
		case len(conflicts) > 0:
			if err := guard.ResetTo(ctx, dir, j.start); err != nil {
				return nil, err
			}
			feedback += "\n\nYour earlier change could not be carried over onto the new integration head; implement the milestone again from here."
		default:
			if _, err := guard.CommitAll(ctx, dir, fmt.Sprintf("runr %s: milestone %d rebased onto %s", c.st.RunID, j.milestone, short(j.start)), nil); err != nil {
				return nil, err
			}
		}
	}
	store, err := state.Open(filepath.Join(c.runDir, "workers", "w"+strconv.Itoa(k)))
	if err != nil {
		return nil, err
	}
	cfg := *c.cfg
	remaining := time.Duration(c.st.Budget.TimeMS-c.baseMS)*time.Millisecond - c.o.Now().Sub(c.start)
	cfg.Budget.Time = max(remaining, time.Millisecond)
	o := c.o
	o.Config = &cfg
	o.Store = store
	o.RunID = runID
	o.Signals = signals
	o.Milestones = nil
	o.Observer = c.workerObserver(k)
	o.Prompt = withFeedback(c.o.Prompt, feedback)
	o.Flags.Worktree = true
	o.Single = &supervisor.Single{Milestone: j.milestone, Worktree: dir, Branch: branch, RunID: c.st.RunID, RunDir: c.runDir, Worker: k,
		Shared: c.shared(k), Others: c.others(k),
		Process: func(p *state.Process) {
			c.mu.Lock()
			c.slots[k-1].AgentProcess = p
			c.mu.Unlock()
		}}
	o.Progress = func(p supervisor.Progress) {
		p.RunID, p.Worker = c.st.RunID, k
		switch p.Msg.(type) {
		case supervisor.ProgressTick, supervisor.ProgressTickDone:
			// The line speaks of the run, as its budget does: the run's
			// number of the tick, counted over all workers, its time and
			// its time budget. The worker's own run of the milestone
			// counts from the milestone's start.
			c.mu.Lock()
			s := c.slots[k-1]
			s.Phase = p.Phase
			if _, starts := p.Msg.(supervisor.ProgressTick); starts {
				c.ticks++
				s.tick = c.ticks
			}
			p.Tick = s.tick
			c.mu.Unlock()
			p.Elapsed = time.Duration(c.baseMS)*time.Millisecond + c.o.Now().Sub(c.start)
			p.Budget = time.Duration(c.st.Budget.TimeMS) * time.Millisecond
		}
		c.o.Progress(p)
	}
	sup := supervisor.New(o)
	child, err := sup.Start(ctx)
	if l := sup.HeldLock(); l != nil {
		l.Release()
	}
	return child, err
}

// ensureTree makes dir a worktree on branch: moved to start when move is
// set, else as the branch is, with whatever the tree held discarded. A
// worktree that git cannot use (a runr killed while making it) is made
// again.
//
// The worktrees live in the run store, which an agent can write: a
// directory there replaced by a symlink (to the user's checkout, say) is
// never followed, since a checkout and a clean there would discard whatever
// the link's target holds. A link in place of a worktree is removed and the
// worktree made again; one in place of the run's worktrees directory stops
// the run.
func (c *coordinator) ensureTree(ctx context.Context, dir, branch, start string, move bool) error {
	c.gitMu.Lock()
	defer c.gitMu.Unlock()
	for _, p := range []string{filepath.Dir(c.home), c.home} {
		if fi, err := os.Lstat(p); err == nil && !fi.IsDir() {
			return fmt.Errorf("%s is not the directory runr made for the run's worktrees (a symlink or a file put there): remove it, then resume", p)
		}
	}
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		// Only the link or file goes, never what a link points to.
		if err := os.Remove(dir); err != nil {
			return fmt.Errorf("remove %s, which is not the worktree runr made: %w", dir, err)
		}
		_ = guard.DiscardWorktree(ctx, c.o.Repo, dir)
	} else if err == nil {
		// Its .git file may have been pointed at another git dir: then
		// it is made again rather than checked out there.
		err := guard.CheckWorktree(ctx, c.o.Repo, dir)
		if err == nil && move {
			err = guard.SwitchTo(ctx, dir, branch, start)
		} else if err == nil {
			err = guard.ResetTo(ctx, dir, "HEAD")
		}
		if err == nil {
			return nil
		}
		_ = guard.DiscardWorktree(ctx, c.o.Repo, dir)
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove the unusable worktree %s: %w", dir, err)
		}
	}
	return guard.AddWorktreeAt(ctx, c.o.Repo, dir, branch, start)
}

// withFeedback appends what the last failed merge said to the task, in a
// fence no line of it can close, so that it holds no milestone of its own.
func withFeedback(task, feedback string) string {
	if feedback == "" {
		return task
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(task, "\n"))
	b.WriteString("\n\n# Feedback from merging this milestone\n\n~~~~~~~~\n")
	for _, line := range strings.Split(strings.TrimRight(feedback, "\n"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "~~~") || strings.HasPrefix(strings.TrimSpace(line), "```") {
			line = "> " + line
		}
		b.WriteString(line)
		b.WriteString("\n")
	}
	b.WriteString("~~~~~~~~\n")
	return b.String()
}

func (c *coordinator) workerDir(k int) string { return c.store.WorkerWorktree(c.st.RunID, k) }

func (c *coordinator) milestoneBranch(n int) string {
	return guard.MilestoneBranch(c.st.RunID, n)
}
