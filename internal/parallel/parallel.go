// Package parallel works the milestones of one `##` group of a task on
// several workers at once, each in a git worktree of its own, and merges the
// approved milestones one at a time into the run's integration branch, where
// the verify commands check the merged tree before the milestone counts
// (DESIGN §11). Only the coordinator writes the run's state.json.
package parallel

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/supervisor"
	"github.com/runr-dev/runr/internal/task"
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

// slot is a worker as the coordinator keeps it.
type slot struct {
	busy    bool
	signals chan os.Signal
	tick    int // the run's number of the worker's tick under way
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
	ticks int             // the ticks the run started, over all workers

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
		home: so.Store.WorktreePath(st.RunID), branch: guard.RunBranch(st.RunID), start: so.Now(), baseMS: st.ElapsedMS,
		done: make(chan finished, n), live: map[int]figures{}}
	c.integ = so.Store.IntegrationWorktree(st.RunID)
	// A resumed run's budget goes on from what it spent before: the
	// workers' stop rules judge that plus their own.
	c.spent = figures{cost: st.Usage.CostUSD, tokens: st.Usage.InputTokens + st.Usage.OutputTokens, iterations: st.Iteration, ticks: st.Tick,
		attempt: st.Counters.Attempts}
	c.ticks = st.Tick
	for k := 1; k <= n; k++ {
		c.slots = append(c.slots, &slot{signals: make(chan os.Signal, 4), WorkerSlot: state.WorkerSlot{Worker: k}})
	}
	return c
}

func internalStop(err error) *stopreasons.Stop {
	sp := supervisor.ErrorStop(err)
	return &sp
}

// prepare makes the integration worktree from the checkout's HEAD.
func (c *coordinator) prepare(ctx context.Context) *stopreasons.Stop {
	head, err := guard.Head(ctx, c.o.Repo)
	if err != nil {
		return internalStop(err)
	}
	if head == "" {
		return supervisor.NoBaseStop(c.o.Repo)
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
