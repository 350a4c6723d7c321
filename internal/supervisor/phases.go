package supervisor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/state"
)

const feedbackLines = 40

func (s *Supervisor) milestone() *state.Milestone {
	return &s.st.Milestones[s.st.MilestoneIndex]
}

// request is the adapter request of the current iteration.
func (s *Supervisor) request(prompt string) agents.Request {
	a := s.cfg.Agent
	req := agents.Request{
		Prompt:         prompt,
		Dir:            s.dir,
		Model:          a.Model,
		PermissionMode: a.PermissionMode,
		Args:           a.Args,
		Command:        a.Command,
		Promise:        a.CompletionPromise,
	}
	if a.ContinueSession {
		req.SessionID = s.sessionID
	}
	if b := s.st; b != nil && b.Budget.MaxCostUSD > 0 {
		req.MaxBudgetUSD = b.Budget.MaxCostUSD - b.Usage.CostUSD
	}
	return req
}

// childEnv is the environment of every process of the run: runr's own, with
// the run's RUNR_* variables set anew.
func (s *Supervisor) childEnv(phase string) []string {
	st := s.st
	set := map[string]string{
		"RUNR_RUN_ID":    st.RunID,
		"RUNR_RUN_DIR":   s.store.RunDir(st.RunID),
		"RUNR_TICK":      strconv.Itoa(st.Tick),
		"RUNR_ITERATION": strconv.Itoa(st.Iteration),
		"RUNR_PHASE":     phase,
	}
	if one := s.o.Single; one != nil && one.RunID != "" {
		set["RUNR_RUN_ID"], set["RUNR_RUN_DIR"] = one.RunID, one.RunDir
		set["RUNR_WORKER"] = strconv.Itoa(one.Worker)
	}
	if st.MilestoneIndex < len(st.Milestones) {
		set["RUNR_MILESTONE"] = strconv.Itoa(st.MilestoneIndex + 1)
		set["RUNR_MILESTONE_GOAL"] = st.Milestones[st.MilestoneIndex].Goal
	}
	env := make([]string, 0, len(s.o.Environ)+len(set))
	for _, kv := range s.o.Environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := set[k]; !ours {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// runProcess runs one process of the run, recording it in state.json while
// it runs, with the time budget as its deadline.
func (s *Supervisor) runProcess(ctx context.Context, phase string, spec proc.Spec) (proc.Result, error) {
	if !s.deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, s.deadline)
		defer cancel()
	}
	if ctx.Err() != nil {
		// A signal or the time budget ended the tick before this process
		// started: it is not started, and interrupted names the stop.
		return proc.Result{Canceled: true}, nil
	}
	if err := state.CheckNoSymlink(spec.LogPath); err != nil {
		return proc.Result{}, err
	}
	spec.KillNow = s.killNow
	if spec.KillGrace == 0 {
		spec.KillGrace = s.cfg.Agent.KillGrace
	}
	spec.OnStart = func(p proc.Proc) error {
		s.st.AgentProcess = &state.Process{PID: p.PID, PGID: p.PGID, StartTime: p.StartTime, StartedAt: p.StartedAt.UTC(), Phase: phase, Argv0: spec.Argv[0]}
		started := state.ProcessStartedEvent{PID: p.PID, PGID: p.PGID, Argv0: spec.Argv[0]}
		if phase != state.PhaseImplement {
			// A check's command as configured: an agent's argv may carry the prompt.
			started.Command = commandLine(spec.Argv)
		}
		s.event(started)
		// The process waits at its gate until this returns: unrecorded, a
		// crash would leave it working beside the resume, so it does not
		// run at all when the record cannot be written.
		if err := s.saveProcessStart(); err != nil {
			s.log.Warn("state save at process start failed; the process is not run", zap.Error(err))
			return err
		}
		if one := s.o.Single; one != nil && one.Process != nil {
			p := *s.st.AgentProcess
			one.Process(&p)
		}
		return nil
	}
	res, err := proc.Run(ctx, spec)
	s.st.AgentProcess = nil
	if one := s.o.Single; one != nil && one.Process != nil {
		one.Process(nil)
	}
	if err != nil {
		err = environmentError(err, s.dir)
	}
	if err == nil {
		s.event(state.ProcessEndedEvent{ExitCode: res.ExitCode, DurationMS: res.Duration.Milliseconds(), Bytes: res.Bytes,
			TimedOut: res.TimedOut, Idle: res.Idle, Canceled: res.Canceled})
	}
	return res, err
}

// gitContext is the context of runr's own git commands inside a tick: the
// first signal does not cut them short, because a git killed in the middle
// of a commit leaves index.lock behind and the repository unusable until
// someone removes it. They are brief, run no program the repository names
// and start no agent; the loop honours the signal as soon as the tick is
// over. A second SIGINT, the user's "now", still ends them, and so does the
// time budget's deadline: a git stuck past it (a slow disk, a hung network
// file system) is stopped with its group like any process of the run.
func (s *Supervisor) gitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	base := proc.WithKillNow(context.WithoutCancel(ctx), s.killNow)
	stopDeadline := func() {}
	if !s.deadline.IsZero() {
		base, stopDeadline = context.WithDeadline(base, s.deadline)
	}
	gctx, cancelGit := context.WithCancel(base)
	cancel := func() { cancelGit(); stopDeadline() }
	go func() {
		select {
		case <-s.killNow:
			cancel()
		case <-gctx.Done():
		}
	}()
	return gctx, cancel
}

// reading reads the signal and the time budget now.
func (s *Supervisor) reading() Reading {
	return Reading{Signal: s.signalled(), DeadlinePassed: !s.deadline.IsZero() && !s.o.Now().Before(s.deadline), Elapsed: s.elapsed()}
}

func (s *Supervisor) relLog(path string) string {
	if rel, err := filepath.Rel(s.store.RunDir(s.st.RunID), path); err == nil {
		return rel
	}
	return path
}

// implement runs the agent once for the current milestone, and the guards
// on the tree after a call that ended by itself.
func (s *Supervisor) implement(ctx context.Context) Decision {
	f := s.callAgent(ctx)
	if !f.CallDecides() {
		gctx, cancel := s.gitContext(ctx)
		defer cancel()
		s.delta = nil
		f.Guard = s.lookAtTree(gctx)
		if s.delta != nil {
			s.sum.files = countsOf(*s.delta)
		}
	}
	return s.decide(ctx, Implement, f)
}

// agentCall is an agent call made ready: its process, its parser, and the
// watches on its output.
type agentCall struct {
	ctx       context.Context // the call's own: the result grace ends it
	spec      proc.Spec
	parser    agents.Parser
	spend     *spendWatch
	grace     *graceWatch
	stopWatch func() // ends the activity watch
}

// prepareCall writes the iteration's prompt and makes its call ready.
func (s *Supervisor) prepareCall(ctx context.Context) (agentCall, error) {
	st := s.st
	prompt := BuildPrompt(st, s.cfg.Agent.CompletionPromise)
	promptFile := filepath.Join(s.store.RunDir(st.RunID), "prompts", fmt.Sprintf("tick-%04d.md", st.Tick))
	if err := state.WriteFileNoFollow(promptFile, []byte(prompt)); err != nil {
		return agentCall{}, err
	}
	req := s.request(prompt)
	req.PromptFile = promptFile
	inv, err := s.adapter.Invocation(req)
	if err != nil {
		return agentCall{}, err
	}
	parser := s.adapter.NewParser(req)
	spend := s.watchSpend(parser)
	spec := proc.Spec{
		Argv:         inv.Argv,
		Dir:          s.dir,
		Env:          append(agents.WithoutNestedSession(s.childEnv(state.PhaseImplement)), inv.Env...),
		LogPath:      s.store.LogPath(st.RunID, st.Tick, state.PhaseImplement),
		Timeout:      s.cfg.Agent.Timeout,
		IdleTimeout:  s.cfg.Agent.IdleTimeout,
		OnStdoutLine: func(line []byte) bool { return !parser.Line(line) && spend.line() },
	}
	if c, ok := parser.(agents.ChunkParser); ok && agents.TakesChunks(parser) {
		spec.OnStdout = c.Chunk
	}
	watch, stopWatch := s.watchActivity(s.cfg.Agent.Kind, s.dir)
	if watch != nil {
		spec.OnStdoutLine = func(line []byte) bool {
			watch(line)
			return !parser.Line(line) && spend.line()
		}
	}
	if inv.UseStdin {
		spec.Stdin = strings.NewReader(inv.Stdin)
	}
	spec.Argv = append([]string{s.program}, spec.Argv[1:]...)
	s.confine(&spec)
	callCtx, grace := s.watchResult(ctx, parser)
	spec.OnStdoutLine = grace.wrap(spec.OnStdoutLine)
	if spec.OnStdout != nil && watch == nil && grace == nil {
		// Nothing but the parser looks at the lines, and it takes the
		// final text from the chunks: the lines it cannot need (most of
		// a large output) are not handed over at all. The spend watch
		// looks only when the usage moved, which such a line cannot do.
		spec.LineStarts = agents.LineStarts(parser)
	}
	return agentCall{ctx: callCtx, spec: spec, parser: parser, spend: spend, grace: grace, stopWatch: stopWatch}, nil
}

// callAgent makes the iteration's agent call and gathers what came of it:
// the process's end, the adapter's reading of its output, the spend
// watch's stop, and the signal and the time budget as they are after it.
func (s *Supervisor) callAgent(ctx context.Context) Facts {
	st := s.st
	m := s.milestone()
	// A failed or rejected milestone is worked on again after a resume.
	m.Status = state.MilestoneInProgress
	st.Iteration++
	f := Facts{Command: s.program}
	c, err := s.prepareCall(ctx)
	if err != nil {
		f.Err = err
		return f
	}
	defer c.spend.close()
	ref := s.agentRef()
	f.Log = s.relLog(c.spec.LogPath)
	m.Attempts = append(m.Attempts, state.Attempt{Tick: st.Tick, Iteration: st.Iteration, Log: f.Log, Agent: &ref})
	res, err := s.runProcess(c.ctx, state.PhaseImplement, c.spec)
	res = s.settleResult(c.grace, res)
	c.stopWatch()
	if err != nil {
		// A call that ran and then failed runr (its log could not be
		// written) spent what it used: counted, not handed back on resume.
		u, ok := agents.UsageSoFar(c.parser)
		if ok && !errors.Is(err, proc.ErrNotFound) && (u.Tokens() > 0 || u.CacheReadTokens > 0 || u.CostUSD > 0) {
			s.account(c.parser.Finish(res.ExitCode, res.Tail), res)
		}
		f.Err = err
		return f
	}
	c.spend.close()
	f.Process = res
	if msg, failed := s.sandboxFailure(res); failed {
		f.Sandbox = msg
		return f
	}
	f.Agent = c.parser.Finish(res.ExitCode, res.Tail)
	s.account(f.Agent, res)
	s.lastOutput = proc.Tail(res.Tail, feedbackLines)
	if f.Agent.FinalText != "" {
		s.lastOutput = f.Agent.FinalText
	}
	f.Spend = c.spend.exceededBy()
	f.At = s.reading()
	return f
}

// account adds the call's cost and tokens to the run's usage and its
// model's totals, and records the call in the cost ledger (an agent_call
// event): what the call reported, its cost estimated from tokens whether
// it reported one or not, and which of the two counts. A call cut short (a
// signal, a timeout, a budget) counts what it had used.
func (s *Supervisor) account(ar agents.Result, res proc.Result) {
	st := s.st
	u := ar.Usage()
	cost, src := s.callCost(u)
	call := state.Call{Agent: s.adapter.Kind(), Model: cmp.Or(u.Model, s.cfg.Agent.Model),
		InputTokens: u.InputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, OutputTokens: u.OutputTokens,
		CostSource: string(src), DurationMS: res.Duration.Milliseconds()}
	s.sum.call = callSummary{Usage: u, source: src}
	s.sum.call.CostUSD, s.sum.call.Model = cost, call.Model
	if src == agents.CostReported {
		call.CostReportedUSD = cost
		estimate := u
		estimate.CostUSD, estimate.CostKnown = 0, false
		call.CostEstimatedUSD, _ = s.callCost(estimate)
	} else {
		call.CostEstimatedUSD = cost
	}
	st.Usage.AddCall(call)
	s.event(state.AgentCallEvent{Call: call})
	if ar.SessionID != "" {
		st.Usage.AgentSessionID = ar.SessionID
		s.sessionID = ar.SessionID
	}
	if a := s.currentAttempt(); a != nil {
		a.CostUSD = cost
		a.ExitCode = res.ExitCode
		a.DurationMS = res.Duration.Milliseconds()
	}
}

// lookAtTree reads the tree after the call and gathers the guards'
// verdicts on it: git's own files, the scope, the protected files and the
// lockfiles.
func (s *Supervisor) lookAtTree(ctx context.Context) *GuardFacts {
	st := s.st
	g := &GuardFacts{}
	failed := func(err error) *GuardFacts {
		g.Err, g.At = err, s.reading()
		return g
	}
	// Asked for beside the call, answered by now, or with a later call's
	// look or the stop: never waited for here.
	s.takeAgentVersion(false)
	// Read before any git call of the guards; the calls that follow run no
	// program such a file could name, so the stop can name every file.
	meta, err := s.changedGitMetadata(ctx)
	if err != nil {
		return failed(err)
	}
	hash, changed, committed, err := s.agentChanges(ctx)
	if err != nil {
		return failed(err)
	}
	g.Looked, g.Tree, g.Meta, g.Committed = true, hash, meta, committed
	// The task file is runr's input, read once when the run started: an
	// agent ticking its boxes is not out of scope.
	inScope := slices.DeleteFunc(slices.Clone(changed), func(p string) bool { return p == st.Task.File })
	if g.Scope, err = guard.CheckScope(inScope, s.cfg.Scope.Allow, s.cfg.Scope.Deny); err != nil {
		return failed(err)
	}
	if g.Protected, err = s.protectedChanges(inScope, append(slices.Clone(meta), g.Scope...)); err != nil {
		return failed(err)
	}
	g.Lockfiles = guard.CheckLockfiles(changed, s.cfg.Scope.Lockfiles)
	return g
}

// protectedChanges returns the changed files that existed at the start of
// the run and match a scope.protect glob, leaving out those already in
// violations. A run without a snapshot of its start (an older runr's)
// cannot tell which files existed, and protects none.
func (s *Supervisor) protectedChanges(changed []string, violations []guard.Violation) ([]guard.Violation, error) {
	if len(s.cfg.Scope.Protect) == 0 {
		return nil, nil
	}
	snap, err := s.guardSnapshot()
	if err != nil || snap == nil {
		return nil, err
	}
	changed = slices.DeleteFunc(slices.Clone(changed), func(p string) bool {
		return slices.ContainsFunc(violations, func(v guard.Violation) bool { return v.Path == p })
	})
	return snap.CheckProtect(changed, s.cfg.Scope.Protect)
}

// agentChanges returns the tree's fingerprint and, sorted, every path the
// agent changed since the run started: in the working tree, and in commits
// it made itself, which leave git status and so escape the baseline. The
// second list is the committed ones. Commits up to GuardHead (runr's own
// checkpoints) were judged before. The snapshot adds what git status no
// longer shows: files hidden by ignore rules or index bits the agent set.
// With the snapshot's Tracker this is one git process while HEAD stays.
func (s *Supervisor) agentChanges(ctx context.Context) (hash string, all, committed []string, err error) {
	base := guard.Baseline(s.st.Baseline)
	t, err := s.guardTracker()
	if err != nil {
		return "", nil, nil, err
	}
	if t != nil {
		look, err := t.Look(ctx, s.st.GuardHead, base)
		if err != nil {
			return "", nil, nil, err
		}
		s.delta = &look.Delta
		all = append(slices.Clone(look.Changed), look.Committed...)
		slices.Sort(all)
		return look.Fingerprint, slices.Compact(all), look.Committed, nil
	}
	// A run an older runr started, without the index in its snapshot.
	if hash, err = guard.TreeHash(ctx, s.dir); err != nil {
		return "", nil, nil, err
	}
	changed, err := guard.ChangedSince(ctx, s.dir, base)
	if err != nil {
		return "", nil, nil, err
	}
	committed, err = guard.CommittedChanges(ctx, s.dir, s.st.GuardHead, base)
	if err != nil {
		return "", nil, nil, err
	}
	all = append(changed, committed...)
	if snap, err := s.guardSnapshot(); err != nil {
		return "", nil, nil, err
	} else if snap != nil {
		hidden, err := snap.ChangedFiles(ctx, s.dir)
		if err != nil {
			return "", nil, nil, err
		}
		all = append(all, hidden...)
	}
	slices.Sort(all)
	return hash, slices.Compact(all), committed, nil
}

// guardTracker is the Tracker of the run's snapshot, made on first use; nil
// for a snapshot that cannot have one (an older runr's) or no snapshot.
func (s *Supervisor) guardTracker() (*guard.Tracker, error) {
	if s.tracker != nil || s.noTracker {
		return s.tracker, nil
	}
	snap, err := s.guardSnapshot()
	if err != nil {
		return nil, err
	}
	if snap == nil {
		s.noTracker = true
		return nil, nil
	}
	t, err := snap.NewTracker(s.store.RunDir(s.st.RunID))
	if errors.Is(err, guard.ErrNoIndexSnapshot) {
		s.noTracker = true
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s.tracker = t
	return t, nil
}

// changedGitMetadata returns a violation for each of git's own files that
// can start programs or hide changes (.git/config, .git/info/*,
// .git/hooks/*) and changed since the start.
func (s *Supervisor) changedGitMetadata(ctx context.Context) ([]guard.Violation, error) {
	snap, err := s.guardSnapshot()
	if err != nil || snap == nil {
		return nil, err
	}
	files, err := snap.ChangedMeta(ctx, s.dir)
	if err != nil {
		return nil, err
	}
	var out []guard.Violation
	for _, f := range files {
		out = append(out, guard.Violation{Path: f, Rule: guard.RuleGitMetadata})
	}
	return out, nil
}

// snapshotFile is the run dir's file that keeps the guard snapshot.
const snapshotFile = "guard-snapshot.gob"

// saveSnapshot keeps the guard snapshot in the run dir, for a resume.
func (s *Supervisor) saveSnapshot() error {
	data, err := s.snap.Encode()
	if err != nil {
		return err
	}
	return s.store.WriteRunFile(s.st.RunID, snapshotFile, data)
}

// guardSnapshot is the snapshot taken when the run started, read from the
// run dir after a resume; nil for a run an older runr started.
func (s *Supervisor) guardSnapshot() (*guard.Snapshot, error) {
	if s.snap == nil {
		data, err := s.store.ReadRunFile(s.st.RunID, snapshotFile)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if s.snap, err = guard.DecodeSnapshot(data); err != nil {
			return nil, err
		}
		s.snap.Pin(s.dir)
	}
	return s.snap, nil
}

// committedNote marks a path the agent committed itself, since undoing that
// takes more than a stash.
func committedNote(committed []string, p string) string {
	if slices.Contains(committed, p) {
		return ", committed"
	}
	return ""
}

// onlyIn returns the elements of list that are also in of.
func onlyIn(list, of []string) []string {
	var out []string
	for _, p := range list {
		if slices.Contains(of, p) {
			out = append(out, p)
		}
	}
	return out
}

// verify runs the verification commands in order, until one ends the step
// (the first failure fails the attempt).
func (s *Supervisor) verify(ctx context.Context) Decision {
	st := s.st
	logPath := s.store.LogPath(st.RunID, st.Tick, state.PhaseVerify)
	f := Facts{Log: s.relLog(logPath)}
	for _, cmd := range s.cfg.Verify.Commands {
		appendLog(logPath, fmt.Sprintf("$ %s\n", cmd))
		res, err := s.runProcess(ctx, state.PhaseVerify, proc.Spec{
			Argv:    []string{"sh", "-c", cmd},
			Dir:     s.dir,
			Env:     s.childEnv(state.PhaseVerify),
			LogPath: logPath,
			Timeout: s.cfg.Verify.Timeout,
		})
		if err != nil {
			f.Err = err
			break
		}
		s.sum.verifyTime += res.Duration
		c := CheckFacts{Command: cmd, Process: res, At: s.reading()}
		f.Checks = append(f.Checks, c)
		if c.Ends() {
			break
		}
	}
	return s.decide(ctx, Verify, f)
}

func hasCheck(checks []state.CheckResult, cmd string) bool {
	for _, c := range checks {
		if c.Command == cmd {
			return true
		}
	}
	return false
}

// review runs the review command.
func (s *Supervisor) review(ctx context.Context) Decision {
	st := s.st
	logPath := s.store.LogPath(st.RunID, st.Tick, state.PhaseReview)
	argv := s.cfg.Review.Command
	f := Facts{Command: strings.Join(argv, " "), Log: s.relLog(logPath)}
	f.Process, f.Err = s.runProcess(ctx, state.PhaseReview, proc.Spec{Argv: argv, Dir: s.dir, Env: s.childEnv(state.PhaseReview), LogPath: logPath, Timeout: s.cfg.Verify.Timeout})
	f.At = s.reading()
	return s.decide(ctx, Review, f)
}

// checkpoint records the approved milestone's tree and commits it when
// asked.
func (s *Supervisor) checkpoint(ctx context.Context) Decision {
	gctx, cancel := s.gitContext(ctx)
	defer cancel()
	var f Facts
	if err := s.commitMilestone(gctx); err != nil {
		f.Err, f.At = err, s.reading()
	}
	return s.decide(ctx, Checkpoint, f)
}

// commitMilestone records the milestone's tree, and commits it when
// checkpoint.commit is on (always in worktree mode).
func (s *Supervisor) commitMilestone(ctx context.Context) error {
	st := s.st
	m := s.milestone()
	m.TreeHash = st.TreeHash
	if !s.cfg.Checkpoint.Commit && !st.Flags.Worktree {
		return nil
	}
	msg := fmt.Sprintf("runr %s: milestone %d/%d: %s", st.RunID, st.MilestoneIndex+1, len(st.Milestones), m.Goal)
	exclude, err := s.untouchedFiles(ctx)
	if err != nil {
		return err
	}
	sha, err := guard.CommitAll(ctx, s.dir, msg, exclude)
	if err != nil {
		return err
	}
	m.Commit = sha
	if sha != "" {
		// What the commit holds was judged after implement; later
		// guards judge only commits after it. The baseline stays: the
		// user's files it records were left out of the commit.
		st.GuardHead = sha
		s.event(state.CheckpointCommitEvent{SHA: sha, Milestone: st.MilestoneIndex + 1})
	}
	return nil
}

// untouchedFiles are the user's files a checkpoint commit leaves alone: the
// task and config files, and whatever was dirty before the run (with
// --allow-dirty) that the agent has not changed since.
func (s *Supervisor) untouchedFiles(ctx context.Context) ([]string, error) {
	out := s.ownFiles()
	if len(s.st.Baseline) == 0 {
		return out, nil
	}
	changed, err := guard.ChangedSince(ctx, s.dir, guard.Baseline(s.st.Baseline))
	if err != nil {
		return nil, err
	}
	for p := range s.st.Baseline {
		if !slices.Contains(changed, p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ownFiles are the task and config files, which a checkpoint commit never
// takes.
func (s *Supervisor) ownFiles() []string {
	var out []string
	if s.o.TaskFile != "" {
		out = append(out, s.o.TaskFile)
	}
	if s.cfg.File != "" {
		if rel, err := filepath.Rel(s.o.Repo, s.cfg.File); err == nil && !strings.HasPrefix(rel, "..") {
			out = append(out, rel)
		}
	}
	return out
}

func (s *Supervisor) nextMilestone() {
	st := s.st
	st.MilestoneIndex++
	// After a resume went back to a failed milestone, the approved ones
	// after it are not redone.
	for st.MilestoneIndex < len(st.Milestones) && st.Milestones[st.MilestoneIndex].Status == state.MilestoneApproved {
		st.MilestoneIndex++
	}
	if st.MilestoneIndex >= len(st.Milestones) {
		st.Phase = state.PhaseFinalize
		return
	}
	st.Phase = state.PhaseImplement
	st.Milestones[st.MilestoneIndex].Status = state.MilestoneInProgress
}

func (s *Supervisor) currentAttempt() *state.Attempt {
	m := s.milestone()
	if len(m.Attempts) == 0 {
		return nil
	}
	return &m.Attempts[len(m.Attempts)-1]
}

// attemptEvent is the timeline's record of attempt a of milestone m (1-based).
func attemptEvent(m int, a *state.Attempt) state.AttemptEvent {
	return state.AttemptEvent{Milestone: m, Outcome: a.Outcome, Signature: a.ErrorSignature, AttemptTick: a.Tick, Iteration: a.Iteration,
		Error: a.Error, DurationMS: a.DurationMS, ExitCode: a.ExitCode, CostUSD: a.CostUSD, Log: a.Log, Progress: a.Progress, Agent: a.Agent}
}

// commandLine is a verify or review process's command as the user wrote
// it: a verify command's sh -c text, a review command's words.
func commandLine(argv []string) string {
	if len(argv) == 3 && argv[0] == "sh" && argv[1] == "-c" {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

func appendLog(path, text string) {
	f, err := state.OpenAppendNoFollow(path)
	if err != nil {
		return
	}
	f.WriteString(text)
	f.Close()
}

func firstLine(s, fallback string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return fallback
	}
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	return line
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }
