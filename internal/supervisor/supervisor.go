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
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/proc"
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

type signalStop struct {
	code stopreasons.Code
	name string
}

// stop is the run's stop on the signal.
func (sig *signalStop) stop() *stop {
	return &stop{Stop: stopreasons.Stop{Code: sig.code, Condition: "signal", Message: sig.name}}
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
	s.event(state.RunStartedEvent{Repo: s.o.Repo, Milestones: len(milestones), TaskFile: s.o.TaskFile})
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

// preflight runs the checks before the first tick: the agent program, the
// dirty tree, the worktree, the claim. A non-nil stop ends the run there.
func (s *Supervisor) preflight(ctx context.Context) *stop {
	if stop := s.checkScopeGlobs(); stop != nil {
		return stop
	}
	if stop := s.prepareAgentOrFallback(ctx); stop != nil {
		return stop
	}
	if _, stop := s.checkFallbacks(); stop != nil {
		return stop
	}
	st := s.st
	// In the user's checkout, the dirty check's status is the baseline's,
	// and its HEAD the start's.
	var base guard.Baseline
	var err error
	head, headKnown := "", false
	if !st.Flags.Worktree {
		open := s.takeStatus(ctx)
		if open.statusErr != nil {
			return internalStop(open.statusErr)
		}
		if _, sp := s.dirtyStop(open.status.Changes); sp != nil {
			return sp
		}
		if base, err = guard.BaselineOf(ctx, s.o.Repo, open.status.Changes); err != nil {
			return internalStop(err)
		}
		if open = s.takeSnapshot(); open.snapErr != nil {
			return internalStop(open.snapErr)
		}
		s.snap, head, headKnown = open.snap, open.status.Head, true
	} else {
		if stop := s.ensureWorktree(ctx); stop != nil {
			return stop
		}
		if base, err = guard.TakeBaseline(ctx, s.dir); err != nil {
			return internalStop(err)
		}
		if s.snap, err = guard.TakeSnapshot(ctx, s.dir); err != nil {
			return internalStop(err)
		}
	}
	// The start's reads of the tree are done: the agent's version is asked
	// for beside the rest of the preflight and the first call.
	s.startAgentVersion(ctx)
	// From here on git is told where the repository is, not left to find
	// it through a .git file the agent can rewrite.
	s.snap.Pin(s.dir)
	// The snapshot is written while the checks below run (the claim's own
	// write among them); the preflight ends when it is on disk.
	saved := make(chan error, 1)
	go func() { saved <- s.saveSnapshot() }()
	waitSaved := sync.OnceValue(func() error { return <-saved })
	defer waitSaved()
	if s.tracker != nil {
		s.tracker.Close()
	}
	s.tracker, s.noTracker = nil, false
	// HEAD, and the fingerprint the first call's is compared with.
	t, err := s.guardTracker()
	if err != nil {
		return internalStop(err)
	}
	// Read side by side with the snapshot, the status's HEAD is the
	// start's, and the first look needs no git process.
	var start guard.Look
	if headKnown {
		start, err = t.StartAt(head)
	} else {
		start, err = t.Start(ctx, base)
	}
	if err != nil {
		return internalStop(err)
	}
	head = start.Head
	st.Baseline, st.GuardHead, st.TreeHash = base, head, start.Fingerprint
	st.StartChanges = nil
	for p := range base {
		st.StartChanges = append(st.StartChanges, p)
	}
	st.StartFiles = s.existingWatchedFiles()
	if stop := s.checkPrograms(); stop != nil {
		return stop
	}
	if stop := s.prepareSandbox(ctx); stop != nil {
		return stop
	}
	if stop := s.claim(ctx); stop != nil {
		return stop
	}
	st.Fingerprint = state.Fingerprint{
		RunrVersion: s.o.Version,
		AgentPath:   s.program,
		GitHead:     head,
		ConfigHash:  s.cfg.Hash(),
	}
	s.takeAgentVersion(false)
	if err := waitSaved(); err != nil {
		return internalStop(err)
	}
	// What the preflight recorded is written with the next write of
	// state.json: the record of a new run's first call, a resumed run's
	// first write in the loop, or the stop's.
	return nil
}

// checkDirty reads the user's checkout and refuses uncommitted changes
// before the run, unless --allow-dirty; the task file and the config file
// do not count. It returns the status (the baseline's) and the changes that
// count.
func (s *Supervisor) checkDirty(ctx context.Context) ([]guard.Change, []string, *stop) {
	changes, err := guard.Changes(ctx, s.o.Repo)
	if err != nil {
		return nil, nil, internalStop(err)
	}
	dirty, sp := s.dirtyStop(changes)
	if sp != nil {
		return nil, dirty, sp
	}
	return changes, dirty, nil
}

// dirtyStop is checkDirty's judgement of the checkout's changes: those
// that count, and the stop they make without --allow-dirty.
func (s *Supervisor) dirtyStop(changes []guard.Change) ([]string, *stop) {
	ignore := []string{s.o.TaskFile}
	if s.cfg.File != "" {
		if rel, err := filepath.Rel(s.o.Repo, s.cfg.File); err == nil && !strings.HasPrefix(rel, "..") {
			ignore = append(ignore, rel)
		}
	}
	var dirty []string
	for _, p := range guard.Paths(changes) {
		if !slices.Contains(ignore, p) {
			dirty = append(dirty, p)
		}
	}
	if len(dirty) > 0 && !s.st.Flags.AllowDirty {
		return dirty, &stop{Stop: stopreasons.Stop{Code: stopreasons.DirtyWorktree, Condition: "allow_dirty",
			Message: fmt.Sprintf("%d uncommitted change(s) before the run", len(dirty)),
			Details: &stopreasons.StopDetails{Files: dirty}}}
	}
	return dirty, nil
}

// ensureWorktree creates the run's worktree, or takes the one an earlier
// preflight of the run created before it stopped.
func (s *Supervisor) ensureWorktree(ctx context.Context) *stop {
	st := s.st
	if st.Worktree != "" {
		if fi, err := os.Stat(st.Worktree); err == nil && fi.IsDir() {
			s.dir = st.Worktree
			return nil
		}
	}
	wt := filepath.Join(s.store.Home, "worktrees", st.RunID)
	branch := guard.RunBranch(st.RunID)
	if err := guard.AddWorktree(ctx, s.o.Repo, wt, branch); err != nil {
		return &stop{Stop: stopreasons.Stop{Code: stopreasons.EnvironmentInvalid, Message: err.Error()}}
	}
	st.Worktree, st.Branch = wt, branch
	s.dir = wt
	s.event(state.WorktreeCreatedEvent{Path: wt, Branch: branch})
	// Recorded at once: a resume after a crash here takes this worktree
	// instead of making its branch again.
	if err := s.save(); err != nil {
		return internalStop(err)
	}
	return nil
}

// checkPrograms refuses, before the first agent call, the programs of the
// run's commands that cannot be found: a custom_script, and the program a
// verify command starts when it is a plain name (a shell construct is left
// to the shell). Found only at verify, it would cost agent calls first.
func (s *Supervisor) checkPrograms() *stop {
	_, sp := s.findPrograms()
	return sp
}

// FoundProgram is a program of the run's commands as found before the run.
type FoundProgram struct {
	Key     string `json:"key"`     // "verify.commands[0]", "custom_script"
	Program string `json:"program"` // as written
	Path    string `json:"path"`    // as found
}

// findPrograms is checkPrograms, returning what it found.
func (s *Supervisor) findPrograms() ([]FoundProgram, *stop) {
	var found []FoundProgram
	r := s.cfg.Stop
	for _, prog := range stopconditions.ScriptPrograms(r.Success, r.Failure, r.Conditions) {
		path, err := lookProgram(prog, s.dir, s.o.Environ)
		if err != nil {
			return found, &stop{Stop: stopreasons.Stop{Code: stopreasons.ConfigInvalid, Condition: "custom_script",
				Message: fmt.Sprintf("custom_script %q cannot be run from %s: %v (fix the script path in runr.yaml, or make the file executable)", prog, s.dir, err)}}
		}
		found = append(found, FoundProgram{Key: "custom_script", Program: prog, Path: path})
	}
	for i, cmd := range s.cfg.Verify.Commands {
		prog := proc.CommandProgram(cmd)
		if prog == "" {
			continue
		}
		key := fmt.Sprintf("verify.commands[%d]", i)
		path, err := lookProgram(prog, s.dir, s.o.Environ)
		if err != nil {
			return found, &stop{Stop: stopreasons.Stop{Code: stopreasons.ConfigInvalid, Condition: "verify.commands",
				Message: fmt.Sprintf("%s %q: program %q cannot be run from %s: %v (install it, or fix verify.commands in runr.yaml)", key, cmd, prog, s.dir, err),
				Details: &stopreasons.StopDetails{Command: cmd}}}
		}
		found = append(found, FoundProgram{Key: key, Program: prog, Path: path})
	}
	return found, nil
}

// prepareAgent finds the adapter and the agent program, and refuses what
// the agent cannot do: a budget it gives no figures for, claude as root
// without IS_SANDBOX.
func (s *Supervisor) prepareAgent() *stop {
	a, err := agents.Lookup(s.cfg.Agent.Kind)
	if err != nil {
		return &stop{Stop: stopreasons.Stop{Code: stopreasons.CodeOf(err), Message: err.Error()}}
	}
	s.adapter = a
	b, price := s.st.Budget, s.cfg.Agent.Price
	priced := agents.Priced(price.InputPerMTok, price.OutputPerMTok, s.cfg.Agent.Model)
	if err := agents.BudgetProblem(a, b.MaxCostUSD, b.MaxTokens, priced); err != nil {
		return &stop{Stop: stopreasons.Stop{Code: stopreasons.CodeOf(err), Message: err.Error()}}
	}
	if w := agents.BudgetWarning(a, b.MaxCostUSD, b.MaxTokens, priced); w != "" {
		s.event(state.BudgetWarningEvent{Message: w})
		if s.log != nil {
			s.log.Warn(w)
		}
	}
	if msg := agents.RootSandboxProblem(s.cfg.Agent.Kind, s.cfg.Agent.PermissionMode, os.Geteuid(), s.o.Environ); msg != "" {
		return &stop{Stop: stopreasons.Stop{Code: stopreasons.EnvironmentInvalid, Message: msg}}
	}
	prog := a.Program(s.request(""))
	if prog == "" {
		return &stop{Stop: stopreasons.Stop{Code: stopreasons.UsageError, Message: "agent.command is empty: give the agent's argv after --, or set agent.command in runr.yaml"}}
	}
	path, err := lookProgram(prog, s.dir, s.o.Environ)
	if err != nil {
		return &stop{Stop: stopreasons.Stop{Code: stopreasons.WorkerNotFound, Condition: "agent.command",
			Message: fmt.Sprintf("agent program %q not found or not executable: %v", prog, err),
			Details: &stopreasons.StopDetails{Command: prog}}}
	}
	s.program = path
	return nil
}

// lookProgram finds prog as proc.Run will start it; the error says why
// not in words that follow the program's name.
func lookProgram(prog, dir string, env []string) (string, error) {
	path, err := proc.LookPath(prog, dir, env)
	if nf := (*proc.NotFoundError)(nil); errors.As(err, &nf) {
		return "", errors.New(nf.Reason)
	}
	return path, err
}

// claim records the run's scope claim, refusing to overlap a live run on
// the same checkout unless --force-parallel.
func (s *Supervisor) claim(ctx context.Context) *stop {
	if sp := s.checkCollision(); sp != nil {
		return sp
	}
	st := s.st
	if err := s.store.WriteClaim(state.Claim{RunID: st.RunID, Checkout: s.dir, Allow: s.cfg.Scope.Allow, PID: os.Getpid(), CreatedAt: s.o.Now().UTC()}); err != nil {
		return internalStop(err)
	}
	return nil
}

// checkCollision refuses a scope that overlaps the claim of a live run on
// the same checkout (s.dir), unless --force-parallel. It only reads the
// store.
func (s *Supervisor) checkCollision() *stop {
	st := s.st
	if st.Flags.ForceParallel {
		return nil
	}
	claims, err := s.store.Claims()
	if err != nil {
		return internalStop(err)
	}
	for _, c := range claims {
		if c.RunID == st.RunID || c.Checkout != s.dir {
			continue
		}
		if live, _, _ := s.store.Locked(c.RunID); !live {
			continue // a stale claim of a dead run
		}
		if guard.Overlap(c.Allow, s.cfg.Scope.Allow) {
			scope := c.Allow
			if len(scope) == 0 {
				scope = []string{"the whole checkout"}
			}
			return &stop{Stop: stopreasons.Stop{Code: stopreasons.FileCollision, Condition: "force_parallel",
				Message: fmt.Sprintf("run %s is live on this checkout with an overlapping scope", c.RunID),
				Details: &stopreasons.StopDetails{Other: c.RunID, Files: scope}}}
		}
	}
	return nil
}

func (s *Supervisor) existingWatchedFiles() []string {
	var out []string
	for _, p := range watchedFiles(s.cfg.Stop) {
		if _, err := os.Stat(filepath.Join(s.dir, p)); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// elapsed is the run's elapsed time over every invocation.
func (s *Supervisor) elapsed() time.Duration {
	return time.Duration(s.baseMS)*time.Millisecond + s.o.Now().Sub(s.started)
}

// event records an event of the run at its current tick and phase. It
// reaches the timeline with the next write of state.json, after it: the
// timeline never tells of an attempt, an approval or a commit that
// state.json does not hold (DESIGN §2: persist, then timeline).
func (s *Supervisor) event(data state.EventData) {
	s.pending = append(s.pending, pendingEvent{tick: s.st.Tick, phase: s.st.Phase, data: data})
	s.observe(data)
}

func (s *Supervisor) observe(data state.EventData) {
	if s.o.Observer != nil {
		s.o.Observer.Observe(Observation{RunID: s.st.RunID, Tick: s.st.Tick, Phase: s.st.Phase, Time: s.o.Now(), Event: data})
	}
}

type pendingEvent struct {
	tick  int
	phase string
	data  state.EventData
}

// flushEvents appends the recorded events to the timeline.
func (s *Supervisor) flushEvents() {
	events := s.pending
	s.pending = nil
	if s.tl == nil {
		return
	}
	for _, e := range events {
		if err := s.tl.Append(e.tick, e.phase, e.data); err != nil && s.log != nil {
			s.log.Warn("timeline append failed", zap.Error(err))
		}
	}
}

// save writes state.json durably, then the events it now holds to the
// timeline.
func (s *Supervisor) save() error { return s.persist(s.store.Save) }

// saveProcessStart is save for the record of a process being started
// (state.Store.SaveProcessStart): the tick's closing save makes it durable.
func (s *Supervisor) saveProcessStart() error { return s.persist(s.store.SaveProcessStart) }

func (s *Supervisor) persist(write func(*state.State) error) error {
	s.st.ElapsedMS = s.elapsed().Milliseconds()
	if s.started.IsZero() {
		s.st.ElapsedMS = s.baseMS
	}
	if err := write(s.st); err != nil {
		return err
	}
	s.flushEvents()
	return nil
}

// watchSignals turns the first signal into a stop of the run and a second
// SIGINT into an immediate kill of the running process group. The returned
// function ends the watch and returns once the watcher takes no more
// signals.
func (s *Supervisor) watchSignals(cancel context.CancelCauseFunc) func() {
	if s.o.Signals == nil {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-done:
				return
			case sig := <-s.o.Signals:
				s.mu.Lock()
				first := s.sigReason == nil
				if first {
					code, name := stopreasons.ForSignal(sig)
					s.sigReason = &signalStop{code: code, name: name}
				}
				s.mu.Unlock()
				if first {
					cancel(errSignal)
				} else if sig == os.Interrupt {
					select {
					case <-s.killNow:
					default:
						close(s.killNow)
					}
				}
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

var errSignal = errors.New("signal received")

func (s *Supervisor) signalled() *signalStop {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sigReason
}

// startAgentVersion asks the agent program for its version in the
// background, once the start's reads of the checkout are done: a slow
// answer (a CLI that starts a runtime first) then costs the run nothing,
// and the probe does not compete with those reads. takeAgentVersion
// records it in the fingerprint.
func (s *Supervisor) startAgentVersion(ctx context.Context) {
	ch := make(chan string, 1)
	ctx, s.cancelVersion = context.WithCancel(ctx)
	s.agentVersion = ch
	program, args := s.program, s.adapter.VersionArgs()
	go func() { ch <- agentVersion(ctx, program, args) }()
}

// takeAgentVersion records the agent's version in the fingerprint once it
// is known; with wait, it waits for it (a Probe's timeout at most).
func (s *Supervisor) takeAgentVersion(wait bool) {
	if s.agentVersion == nil {
		return
	}
	var v string
	if wait {
		v = <-s.agentVersion
	} else {
		select {
		case v = <-s.agentVersion:
		default:
			return
		}
	}
	s.agentVersion = nil
	s.cancelVersion()
	s.st.Fingerprint.AgentVersion = v
}

// agentVersion asks the agent program for its version, briefly; "" when it
// has no version flag or does not answer.
func agentVersion(ctx context.Context, program string, args []string) string {
	if len(args) == 0 {
		return ""
	}
	v, err := proc.Probe(ctx, proc.Spec{Argv: append([]string{program}, args...)})
	if err != nil {
		return ""
	}
	return v
}

// checkScopeGlobs refuses, before the first tick, a scope or lockfile glob
// that the guards could not use; found only after the agent's first call, it
// would cost that call.
func (s *Supervisor) checkScopeGlobs() *stop {
	for _, list := range []struct {
		key      string
		patterns []string
	}{{"scope.allow", s.cfg.Scope.Allow}, {"scope.deny", s.cfg.Scope.Deny}, {"scope.lockfiles", s.cfg.Scope.Lockfiles}} {
		for i, p := range list.patterns {
			if err := guard.ValidGlob(p); err != nil {
				return &stop{Stop: stopreasons.Stop{Code: stopreasons.ConfigInvalid, Condition: list.key,
					Message: fmt.Sprintf("%s[%d]: %v", list.key, i, err)}}
			}
		}
	}
	return nil
}
