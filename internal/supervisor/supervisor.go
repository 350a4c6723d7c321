// Package supervisor runs the tick loop of a run: implement, verify,
// review, checkpoint, finalize. It enforces budgets inside a tick, reacts to
// signals, and after every tick updates the counters, evaluates the stop
// conditions, writes state.json atomically and appends to the timeline, in
// that order.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// Options configure a supervisor.
type Options struct {
	Config  *config.Config
	Store   *state.Store
	Repo    string   // the user's checkout (repository top level)
	Environ []string // runr's environment, handed to the processes it starts
	Version string   // runr's version, for the fingerprint
	Flags   state.Flags
	// TaskFile is the task file relative to Repo ("" for --prompt); the dirty
	// check ignores it and the config file.
	TaskFile string
	Prompt   string // the task text
	// Signals delivers SIGINT, SIGTERM and SIGHUP; nil for none.
	Signals <-chan os.Signal
	// Progress is called at the start and the end of every tick, and for
	// each thing the agent is seen doing.
	Progress func(Progress)
	// LiveOutput shows an agent's latest output line as its activity when
	// its output is not a stream of events (a command agent): set it when a
	// person watches.
	LiveOutput bool
	Now        func() time.Time
	// RunID is the id of the run Start creates (runr run --run-id); ""
	// makes a fresh one (state.NewRunID).
	RunID string
	// Milestones is told of each approved milestone (notify.on milestone);
	// nil for nobody. It returns within its own timeout.
	Milestones MilestoneNotifier
	// SandboxHelper is the executable re-run as the sandbox helper in
	// front of a confined agent call; "" is runr's own (os.Executable).
	SandboxHelper string
	// Observer is told of each event of the run (telemetry); nil for none.
	Observer Observer
	// Single, when set, makes Start work on one milestone of the task in a
	// worktree made for it: a worker of a parallel run (DESIGN §11).
	Single *Single
}

// Single is one milestone of a parallel run, worked as a run of its own in
// the worker's worktree: the task's other milestones count as approved, and
// an approved milestone is committed on the worktree's branch.
type Single struct {
	Milestone        int // 1-based, of Milestones(Prompt)
	Worktree, Branch string
	// RunID and RunDir name the parallel run the worker works for, and
	// Worker its slot (1-based): the agent's RUNR_RUN_ID, RUNR_RUN_DIR
	// and RUNR_WORKER, so that `runr status "$RUNR_RUN_ID"` from inside
	// the agent finds the run a user knows, not the worker's own record.
	RunID, RunDir string
	Worker        int
	// Shared, when set, turns the snapshot the stop rules judge after each
	// step into the parallel run's: it adds what the other workers spent
	// (cost, tokens, iterations, ticks, attempts) to this worker's figures.
	Shared func(*stopconditions.Snapshot)
	// Others, when set, is what the run's other workers have spent so far
	// (cost in USD, tokens): a budget binds inside this worker's call on
	// the run's sum, not on this worker's spend alone.
	Others func() (costUSD float64, tokens int64)
	// Process, when set, is told of each process the worker starts once
	// its record is on disk in the worker's own state.json (before the
	// process runs), and of its end (nil): the run's slot of the worker
	// shows it.
	Process func(*state.Process)
}

// MilestoneNotifier is told when a milestone is approved; an error is
// logged and changes nothing in the run.
type MilestoneNotifier interface {
	MilestoneApproved(runID, runDir string, milestone int, goal string) error
}

// Supervisor runs one run.
type Supervisor struct {
	o       Options
	cfg     *config.Config
	store   *state.Store
	st      *state.State
	dir     string // where the agent works: the checkout or the run's worktree
	adapter agents.Adapter
	program string // the agent program as found on PATH
	tl      *state.Timeline
	log     *zap.Logger
	lock    *state.Lock

	// resumedOwn are runr's own files (ownFiles) as a resume found them,
	// by digest: the person's edit of runr.yaml that the resume took (with
	// --force) is not the agent's change. Empty for a new run.
	resumedOwn map[string]string

	started    time.Time // when this invocation started working on the run
	baseMS     int64     // elapsed_ms before this invocation
	deadline   time.Time // when the time budget runs out
	mu         sync.Mutex
	sigReason  *signalStop
	killNow    chan struct{}
	lastOutput string
	sessionID  string
	pending    []pendingEvent  // events waiting for the next write of state.json
	snap       *guard.Snapshot // the tree at the start (guardSnapshot)
	tracker    *guard.Tracker  // reads the tree after each call (guardTracker)
	noTracker  bool            // the snapshot allows none
	// agentVersion delivers the agent's version, asked for beside the
	// end of the preflight and the first call (startAgentVersion);
	// cancelVersion ends the probe.
	agentVersion  chan string
	cancelVersion context.CancelFunc
	// sum is what the current tick came to; delta the changes of the last
	// look at the tree.
	sum   tickSummary
	delta *guard.Delta
	// notifying counts the milestone notifications under way.
	notifying sync.WaitGroup
	// sandbox is the confinement of the agent's calls; nil unconfined.
	sandbox *confinement
	// opening reads the user's checkout while a new run is created
	// (openCheckout); the preflight takes it.
	opening *opening
	// created: the run was made by Start and its preflight passed; on
	// disk is the creation's state.json, which says running, and the
	// first tick's first write records the preflight.
	created bool
}

// New returns a supervisor for o.
func New(o Options) *Supervisor {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Progress == nil {
		o.Progress = func(Progress) {}
	}
	return &Supervisor{o: o, cfg: o.Config, store: o.Store, killNow: make(chan struct{})}
}

// State is the run's state as last written.
func (s *Supervisor) State() *state.State { return s.st }

// Start creates a new run, takes its lock and works on it until it stops.
// The returned state holds the stop reason; an error means the run could not
// be created. The lock stays held for the caller (HeldLock).
func (s *Supervisor) Start(ctx context.Context) (*state.State, error) {
	now := s.o.Now().UTC()
	id := s.o.RunID
	if id == "" {
		id = state.NewRunID(now)
	}
	st := s.newState(id, now)
	milestones := st.Milestones
	if !st.Flags.Worktree && !storeInside(s.store.Home, s.o.Repo) {
		// The checkout is read while the run is created (a store inside
		// the checkout is read as the run left it, later).
		s.opening = openCheckout(ctx, s.o.Repo)
	}
	// Locked as it appears, so that no other runr given the same id takes
	// the new run for a crashed one.
	lock, err := s.store.CreateRunLocked(st, s.cfg.Raw)
	if err != nil {
		s.dropOpening()
		return nil, err
	}
	s.st = st
	s.lock = lock
	defer s.release()
	if err := s.openRunFiles(); err != nil {
		return st, err
	}
	s.event(state.RunStartedEvent{Repo: s.o.Repo, Milestones: len(milestones), TaskFile: s.o.TaskFile, Milestone: st.MilestoneIndex + 1})
	if stop := s.preflight(ctx); stop != nil {
		return s.finish(stop)
	}
	s.created = true
	return s.loop(ctx)
}

// newState is the state of a new run with id, before anything is written.
func (s *Supervisor) newState(id string, now time.Time) *state.State {
	st := &state.State{
		SchemaVersion: state.SchemaVersion,
		RunID:         id,
		RunStatus:     stopreasons.RunRunning,
		Phase:         state.PhaseImplement,
		Repo:          s.o.Repo,
		Task:          state.Task{File: s.o.TaskFile, Prompt: s.o.Prompt},
		ConfigFile:    s.configFile(),
		CreatedAt:     now,
		Budget:        budgetOf(s.cfg),
		Milestones:    Milestones(s.o.Prompt),
		Counters:      state.Counters{Edges: map[string]int{}},
		Flags:         s.o.Flags,
		Resumable:     true,
	}
	if one := s.o.Single; one != nil && one.Milestone >= 1 && one.Milestone <= len(st.Milestones) {
		for i := range st.Milestones {
			if i != one.Milestone-1 {
				st.Milestones[i].Status = state.MilestoneApproved
			}
		}
		st.MilestoneIndex = one.Milestone - 1
		st.Worktree, st.Branch = one.Worktree, one.Branch
		st.Flags.Worktree = true
	}
	st.Statistics = st.Tally()
	return st
}

// Continue works on an existing run (a resume) until it stops. st must be
// the run's state, already planned by the resume (budget granted, streaks
// reset); the run's lock is the one handed in with Lock, else it is taken
// here and stays held for the caller (HeldLock).
func (s *Supervisor) Continue(ctx context.Context, st *state.State) (*state.State, error) {
	s.st = st
	// Set before anything can stop the run: a stop before the first tick
	// saves the elapsed time of the earlier invocations, not zero.
	s.baseMS = st.ElapsedMS
	if s.lock == nil {
		lock, err := s.store.Acquire(st.RunID)
		if err != nil {
			return st, err
		}
		s.lock = lock
	}
	defer s.release()
	if err := s.openRunFiles(); err != nil {
		// The resume's own failure is the run's stop now, not the one it
		// set out to resume from.
		return s.finish(internalStop(err))
	}
	if err := s.stopLeftovers(); err != nil {
		return s.finish(internalStop(err))
	}
	st.RunStatus = stopreasons.RunRunning
	st.StopReason = nil
	st.StoppedAt = nil
	if st.ResumeFrom != nil {
		st.MilestoneIndex = st.ResumeFrom.Milestone - 1
		st.Phase = st.ResumeFrom.Phase
	}
	if st.Worktree != "" {
		s.dir = st.Worktree
	}
	s.resumedOwn = s.ownDigests()
	// A run that switched to a fallback agent goes on with it.
	if st.AgentIndex > 0 {
		s.useAgent(st.AgentIndex)
	}
	s.sessionID = st.Usage.AgentSessionID
	if st.Tick == 0 {
		// The run stopped before its first tick (in preflight, or a crash
		// there): nothing of it ran, and the guard's base (HEAD, the
		// baseline, the start changes) may never have been recorded. It
		// starts as a fresh run would, with the base taken now.
		if stop := s.preflight(ctx); stop != nil {
			return s.finish(stop)
		}
		s.event(state.RunResumedEvent{Milestone: st.MilestoneIndex + 1, Phase: st.Phase, Preflight: true})
		return s.loop(ctx)
	}
	if stop := s.checkDir(); stop != nil {
		return s.finish(stop)
	}
	// The git dirs of the run's start, before any git call of this one.
	if _, err := s.guardSnapshot(); err != nil {
		return s.finish(internalStop(err))
	}
	if stop := s.checkScopeGlobs(); stop != nil {
		return s.finish(stop)
	}
	if stop := s.prepareAgentOrFallback(ctx); stop != nil {
		return s.finish(stop)
	}
	if _, stop := s.checkFallbacks(); stop != nil {
		return s.finish(stop)
	}
	if stop := s.checkPrograms(); stop != nil {
		return s.finish(stop)
	}
	if stop := s.prepareSandbox(ctx); stop != nil {
		return s.finish(stop)
	}
	if stop := s.claim(ctx); stop != nil {
		return s.finish(stop)
	}
	s.event(state.RunResumedEvent{Milestone: st.MilestoneIndex + 1, Phase: st.Phase})
	return s.loop(ctx)
}

// checkDir refuses to go on in a working directory that is gone (a deleted
// worktree): every process of the run would fail there. The state stays as
// it is, resumable once the directory is back.
func (s *Supervisor) checkDir() *stop {
	if _, err := os.Stat(s.dir); err != nil {
		return &stop{Stop: stopreasons.Stop{Code: stopreasons.EnvironmentInvalid,
			Message: fmt.Sprintf("the run's working directory %s is gone (%v); restore it (for a worktree: git worktree add %s %s), then run `runr resume %s`",
				s.dir, errors.Unwrap(err), s.dir, s.st.Branch, s.st.RunID)}}
	}
	return nil
}

// Lock hands the run's lock, taken by the caller (resume takes it before
// planning), to the supervisor, which works under it and leaves it held.
func (s *Supervisor) Lock(l *state.Lock) { s.lock = l }

func (s *Supervisor) openRunFiles() error {
	tl, err := s.store.OpenTimeline(s.st.RunID)
	if err != nil {
		return err
	}
	s.tl = tl
	s.log = newLogger(filepath.Join(s.store.RunDir(s.st.RunID), "runr.log"))
	if s.dir == "" {
		s.dir = s.o.Repo
	}
	return nil
}

func (s *Supervisor) release() {
	s.dropOpening()
	s.dropSandbox()
	if s.tracker != nil {
		s.tracker.Close()
	}
	// The timeline and the log are synced side by side: the two syncs
	// wait for the disk together.
	var synced sync.WaitGroup
	if s.tl != nil {
		synced.Go(func() { s.tl.Close() })
	}
	if s.log != nil {
		s.log.Sync()
	}
	synced.Wait()
	if s.st != nil {
		s.store.RemoveClaim(s.st.RunID)
	}
}

// HeldLock is the run's lock, still held after the run stopped: the
// supervisor never releases it, so a caller that goes on with the run (the
// auto-resume wait) keeps it and no other runr can take the run in between.
// The caller releases it. Nil when no lock was taken.
func (s *Supervisor) HeldLock() *state.Lock { return s.lock }

func budgetOf(c *config.Config) state.Budget {
	return state.Budget{
		TimeMS:        c.Budget.Time.Milliseconds(),
		MaxTicks:      c.Budget.MaxTicks,
		MaxIterations: c.Budget.MaxIterations,
		MaxCostUSD:    c.Budget.MaxCostUSD,
		MaxTokens:     c.Budget.MaxTokens,
	}
}
