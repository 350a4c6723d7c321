// Package parallel works the milestones of one `##` group of a task on
// several workers at once, each in a git worktree of its own, and merges the
// approved milestones one at a time into the run's integration branch, where
// the verify commands check the merged tree before the milestone counts
// (DESIGN §11). Only the coordinator writes the run's state.json.
package parallel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/supervisor"
	"github.com/runr-dev/runr/internal/task"
)

// feedbackLines bounds the failing output handed to a requeued milestone;
// feedbackBytes its previous diff.
const (
	feedbackLines = 60
	feedbackBytes = 32 << 10
)

// Options are the run's settings, as a sequential run takes them; Config's
// parallel.workers says how many workers there are.
type Options struct {
	Supervisor supervisor.Options
}

// job is one milestone handed to a worker.
type job struct {
	milestone int    // 1-based
	start     string // the integration head the milestone starts from
	// carry is a commit whose changes are applied on start before the agent
	// works: the milestone's own work, after verify failed on the merged
	// tree (a rebase).
	carry    string
	feedback string
}

// finished is what a worker reports to the coordinator.
type finished struct {
	worker int
	job    job
	child  *state.State
	err    error
}

// figures are what the stop rules sum over workers: the budget's, the
// circuit breaker's attempts, and the milestones the rates count.
type figures struct {
	cost                       float64
	tokens                     int64
	iterations, ticks, attempt int
	attempted, retried         int
	rejected, failed           int
}

func (f *figures) add(g figures) {
	f.cost += g.cost
	f.tokens += g.tokens
	f.iterations += g.iterations
	f.ticks += g.ticks
	f.attempt += g.attempt
	f.attempted += g.attempted
	f.retried += g.retried
	f.rejected += g.rejected
	f.failed += g.failed
}

// figuresOf are a finished worker run's figures.
func figuresOf(ch *state.State) figures {
	st := ch.Statistics
	return figures{cost: ch.Usage.CostUSD, tokens: ch.Usage.InputTokens + ch.Usage.OutputTokens, iterations: ch.Iteration, ticks: ch.Tick,
		attempt: ch.Counters.Attempts, attempted: st.Attempted, retried: int(st.RetryRate*float64(st.Attempted) + 0.5),
		rejected: st.Rejected, failed: st.Failed}
}

// slot is a worker as the coordinator keeps it.
type slot struct {
	busy    bool
	signals chan os.Signal
	state.WorkerSlot
}

type coordinator struct {
	o      supervisor.Options
	cfg    *config.Config
	store  *state.Store
	st     *state.State
	tl     *state.Timeline
	runDir string
	groups []int
	home   string // the run's worktrees: <store>/worktrees/<run-id>
	integ  string // the integration worktree
	branch string // the integration branch
	start  time.Time
	baseMS int64 // elapsed_ms before this invocation

	done  chan finished
	queue []job // milestones waiting for a worker, requeued ones first

	// gitMu serialises what changes the repository's worktrees and the
	// integration branch: git reads every worktree's admin files while
	// adding one, and fails on one being made beside it.
	gitMu sync.Mutex

	mu    sync.Mutex
	slots []*slot
	spent figures         // of finished worker runs
	live  map[int]figures // of the worker runs under way, by worker
	sig   os.Signal       // the first signal runr received

	// lastFail is the stop of the last milestone that failed in skip mode:
	// a skip-mode run that ends with failed milestones stops with it.
	lastFail *stopreasons.Stop
}

// Run creates a parallel run and works on it until it stops, as
// supervisor.Start does for a sequential one. The returned state holds the
// stop reason; an error means the run could not be created.
func Run(ctx context.Context, o Options) (*state.State, error) {
	so := o.Supervisor
	if so.Now == nil {
		so.Now = time.Now
	}
	if so.Progress == nil {
		so.Progress = func(supervisor.Progress) {}
	}
	cfg := so.Config
	now := so.Now().UTC()
	id := so.RunID
	if id == "" {
		id = state.NewRunID(now)
	}
	n := min(cfg.Parallel.Workers, state.MaxWorkers)
	st := &state.State{
		SchemaVersion: state.SchemaVersion,
		RunID:         id,
		RunStatus:     stopreasons.RunRunning,
		Phase:         state.PhaseImplement,
		Repo:          so.Repo,
		Task:          state.Task{File: so.TaskFile, Prompt: so.Prompt},
		CreatedAt:     now,
		Budget: state.Budget{TimeMS: cfg.Budget.Time.Milliseconds(), MaxTicks: cfg.Budget.MaxTicks, MaxIterations: cfg.Budget.MaxIterations,
			MaxCostUSD: cfg.Budget.MaxCostUSD, MaxTokens: cfg.Budget.MaxTokens},
		Milestones: supervisor.Milestones(so.Prompt),
		Counters:   state.Counters{Edges: map[string]int{}},
		Flags:      so.Flags,
		Resumable:  true,
	}
	st.Parallel = &state.Parallel{Workers: n, Requeues: make([]int, len(st.Milestones))}
	lock, err := so.Store.CreateRunLocked(st, cfg.Raw)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	c := newCoordinator(so, st)
	if c.tl, err = so.Store.OpenTimeline(id); err != nil {
		return c.finish(internalStop(err))
	}
	defer c.tl.Close()
	c.event(state.RunStartedEvent{Repo: so.Repo, Milestones: len(st.Milestones), TaskFile: so.TaskFile, Workers: n})
	if sp := c.prepare(ctx); sp != nil {
		return c.finish(sp)
	}
	return c.finish(c.loop(ctx))
}

// Continue resumes the parallel run st (loaded, planned and locked by the
// caller) until it stops. The process groups the workers of a crashed runr
// left are stopped first; the integration branch is brought back to its
// last milestone commit (a merge under way when runr died is undone, one
// already committed counts by its trailer); each unmerged milestone starts
// again from its branch, its work carried onto the integration head.
func Continue(ctx context.Context, o Options, st *state.State) (*state.State, error) {
	so := o.Supervisor
	if so.Now == nil {
		so.Now = time.Now
	}
	if so.Progress == nil {
		so.Progress = func(supervisor.Progress) {}
	}
	if st.Parallel == nil {
		return st, stopreasons.Errorf(stopreasons.InternalError, "run %s is not a parallel run", st.RunID)
	}
	c := newCoordinator(so, st)
	var err error
	if c.tl, err = so.Store.OpenTimeline(st.RunID); err != nil {
		return c.finish(internalStop(err))
	}
	defer c.tl.Close()
	st.RunStatus, st.StopReason, st.StoppedAt, st.ResumeFrom = stopreasons.RunRunning, nil, nil, nil
	st.Phase = state.PhaseImplement
	if sp := c.recover(ctx); sp != nil {
		return c.finish(sp)
	}
	c.event(state.RunResumedEvent{Milestone: st.MilestoneIndex + 1, Workers: len(c.slots)})
	if err := c.save(); err != nil {
		return c.finish(internalStop(err))
	}
	return c.finish(c.loop(ctx))
}

func newCoordinator(so supervisor.Options, st *state.State) *coordinator {
	n := max(1, min(st.Parallel.Workers, state.MaxWorkers))
	if len(st.Parallel.Requeues) != len(st.Milestones) {
		st.Parallel.Requeues = make([]int, len(st.Milestones))
	}
	c := &coordinator{o: so, cfg: so.Config, store: so.Store, st: st, runDir: so.Store.RunDir(st.RunID), groups: task.Groups(st.Task.Prompt),
		home: filepath.Join(so.Store.Home, "worktrees", st.RunID), branch: guard.RunBranch(st.RunID), start: so.Now(), baseMS: st.ElapsedMS,
		done: make(chan finished, n), live: map[int]figures{}}
	c.integ = filepath.Join(c.home, "main")
	// A resumed run's budget goes on from what it spent before: the
	// workers' stop rules judge that plus their own.
	c.spent = figures{cost: st.Usage.CostUSD, tokens: st.Usage.InputTokens + st.Usage.OutputTokens, iterations: st.Iteration, ticks: st.Tick,
		attempt: st.Counters.Attempts}
	for k := 1; k <= n; k++ {
		c.slots = append(c.slots, &slot{signals: make(chan os.Signal, 4), WorkerSlot: state.WorkerSlot{Worker: k}})
	}
	return c
}

// recover brings a stopped or crashed run back to a state the loop can go
// on from: no worker process alive, the integration worktree at its last
// commit, every milestone merged by its trailer approved, the others
// pending with their branches' work to carry.
func (c *coordinator) recover(ctx context.Context) *stopreasons.Stop {
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

func internalStop(err error) *stopreasons.Stop {
	code := stopreasons.CodeOf(err)
	if code == "" || code == stopreasons.Complete {
		code = stopreasons.InternalError
	}
	return &stopreasons.Stop{Code: code, Message: err.Error()}
}

// prepare makes the integration worktree from the checkout's HEAD.
func (c *coordinator) prepare(ctx context.Context) *stopreasons.Stop {
	head, err := guard.Head(ctx, c.o.Repo)
	if err != nil {
		return internalStop(err)
	}
	if head == "" {
		return &stopreasons.Stop{Code: stopreasons.EnvironmentInvalid, Message: fmt.Sprintf("%s has no commit to start the integration branch from: commit once, then run again", c.o.Repo)}
	}
	if err := os.MkdirAll(c.home, 0o755); err != nil {
		return internalStop(stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "worktrees of run %s", c.st.RunID))
	}
	if err := guard.AddWorktreeAt(ctx, c.o.Repo, c.integ, c.branch, head); err != nil {
		return &stopreasons.Stop{Code: stopreasons.EnvironmentInvalid, Message: err.Error()}
	}
	p := c.st.Parallel
	p.Base, p.Integration, p.Branch = head, c.integ, c.branch
	c.st.Worktree, c.st.Branch = c.integ, c.branch
	c.st.Fingerprint = state.Fingerprint{RunrVersion: c.o.Version, GitHead: head, ConfigHash: c.cfg.Hash()}
	c.event(state.WorktreeCreatedEvent{Path: c.integ, Branch: c.branch})
	if err := c.save(); err != nil {
		return internalStop(err)
	}
	return nil
}

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
				code, name := stopreasons.ForSignal(sig)
				sp = &stopreasons.Stop{Code: code, Condition: "signal", Message: name}
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
		sp.Message = fmt.Sprintf("the run finished with %d of %d milestone(s) failed (last: %s); the others are merged on %s",
			failed, len(c.st.Milestones), sp.Message, c.branch)
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

func (c *coordinator) workerDir(k int) string { return filepath.Join(c.home, "w"+strconv.Itoa(k)) }

func (c *coordinator) milestoneBranch(n int) string {
	return guard.MilestoneBranch(c.st.RunID, n)
}

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
			c.mu.Lock()
			c.slots[k-1].Phase = p.Phase
			c.mu.Unlock()
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

// shared makes worker k's snapshot the run's: its own figures are recorded
// and the other workers' added.
func (c *coordinator) shared(k int) func(*stopconditions.Snapshot) {
	return func(snap *stopconditions.Snapshot) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.live[k] = figures{cost: snap.CostUSD, tokens: snap.Tokens, iterations: snap.Iteration, ticks: snap.Tick, attempt: snap.Attempts,
			attempted: snap.Attempted, retried: snap.Retried, rejected: snap.Rejected, failed: snap.Failed}
		total := c.spent
		for _, f := range c.live {
			total.add(f)
		}
		snap.CostUSD, snap.Tokens, snap.Iteration, snap.Tick, snap.Attempts = total.cost, total.tokens, total.iterations, total.ticks, total.attempt
		// The rates judge every milestone attempted so far; whether this
		// worker's milestone is done stays its own (Finished, Approved).
		snap.Attempted, snap.Retried, snap.Rejected, snap.Failed = total.attempted, total.retried, total.rejected, total.failed
	}
}

// addChild adds what a worker's run of a milestone spent to the run's:
// its usage (the totals and each model's), ticks, agent calls and
// attempts, and to the figures the stop rules judge.
func (c *coordinator) addChild(ch *state.State) {
	c.st.Usage.Merge(ch.Usage)
	c.st.Tick += ch.Tick
	c.st.Iteration += ch.Iteration
	c.st.Counters.Attempts += ch.Counters.Attempts
	c.spent.add(figuresOf(ch))
}

// others is what the run has spent but worker k's own figures: the
// finished workers' and the live ones' as their last step left them. A
// worker's budget check inside a call adds it to its own spend.
func (c *coordinator) others(k int) func() (float64, int64) {
	return func() (float64, int64) {
		c.mu.Lock()
		defer c.mu.Unlock()
		total := c.spent
		for w, f := range c.live {
			if w != k {
				total.add(f)
			}
		}
		return total.cost, total.tokens
	}
}

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
	if c.cfg.Stop.OnMilestoneFailure == stopconditions.OnFailureSkip && milestoneFailure(cs.Code) {
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

// milestoneFailure reports whether a worker's stop is its milestone's
// failure, which skip mode passes over, rather than the run's.
func milestoneFailure(code stopreasons.Code) bool {
	switch code {
	case stopreasons.VerificationFailed, stopreasons.VerificationTimeout, stopreasons.ReviewLoopDetected, stopreasons.ReviewRejected,
		stopreasons.WorkerBlocked, stopreasons.WorkerFailed, stopreasons.NoProgress, stopreasons.SameErrorRepeated,
		stopreasons.NoopStreak, stopreasons.PhaseLoop:
		return true
	}
	return false
}

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

// failedInARow counts milestone n's failure (skip mode) among the run's
// milestones failed in a row, in the order they settled, whichever worker
// had them; at stop.max_consecutive_fails the run stops with
// consecutive_fails, as a sequential run does.
func (c *coordinator) failedInARow(n int) *stopreasons.Stop {
	c.st.Counters.ConsecutiveFails++
	limit := c.cfg.Stop.MaxConsecutiveFails
	if limit <= 0 || c.st.Counters.ConsecutiveFails < limit {
		return nil
	}
	m := c.st.Milestones[n-1]
	rule := stopconditions.MaxConsecutiveFails
	return &stopreasons.Stop{Code: rule.Code, Condition: rule.Key,
		Value: c.st.Counters.ConsecutiveFails, Threshold: limit,
		Message: fmt.Sprintf("%d milestones failed in a row across the workers (stop.%s %d), the last milestone %d", c.st.Counters.ConsecutiveFails, rule.Key, limit, n),
		Details: &stopreasons.StopDetails{Milestone: n, MilestoneGoal: m.Goal}}
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
	for _, cmd := range c.cfg.Verify.Commands {
		res, err := proc.Run(ctx, proc.Spec{Argv: []string{"sh", "-c", cmd}, Dir: c.integ, Env: env, LogPath: logPath,
			Timeout: c.cfg.Verify.Timeout, KillGrace: c.cfg.Agent.KillGrace})
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

// finish records the run's stop: state.json, the timeline, report.md and
// stop.json. A completed run's worker worktrees are removed.
func (c *coordinator) finish(sp *stopreasons.Stop) (*state.State, error) {
	st := c.st
	c.mu.Lock()
	sig := c.sig // watchSignals may still be taking one
	c.mu.Unlock()
	if sig != nil && sp.Code != stopreasons.UserStopped && sp.Code != stopreasons.Terminated && sp.Code != stopreasons.Complete {
		code, name := stopreasons.ForSignal(sig)
		sp = &stopreasons.Stop{Code: code, Condition: "signal", Message: name}
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

// save writes state.json with the worker slots as they are now.
func (c *coordinator) save() error {
	c.mu.Lock()
	slots := make([]state.WorkerSlot, 0, len(c.slots))
	for _, s := range c.slots {
		slots = append(slots, s.WorkerSlot)
	}
	c.mu.Unlock()
	if c.st.StopReason == nil || c.st.StopReason.Code != stopreasons.Complete {
		c.st.Workers = slots
	}
	c.st.ElapsedMS = c.baseMS + c.o.Now().Sub(c.start).Milliseconds()
	c.st.Statistics = c.st.Tally()
	return c.store.Save(c.st)
}

// note tells whoever watches the run of a merge or a requeue.
func (c *coordinator) note(msg string) {
	c.o.Progress(supervisor.Progress{RunID: c.st.RunID, Milestones: len(c.st.Milestones), Msg: supervisor.ProgressNote{Message: msg}})
}

// event appends to the run's timeline.
func (c *coordinator) event(data state.EventData) {
	c.observe(data)
	if c.tl == nil {
		return
	}
	_ = c.tl.Append(c.st.Tick, c.st.Phase, data)
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
