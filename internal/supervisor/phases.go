package supervisor

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
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

// interrupted reports whether a signal or the time budget cut a process
// short, and the step's result when one did.
func (s *Supervisor) interrupted(res proc.Result) (result, bool) {
	if sig := s.signalled(); sig != nil {
		sp := s.signalStop(sig)
		return result{Event: Event{Outcome: Interrupted, Code: sp.Code}, stop: sp}, true
	}
	if res.Canceled && !s.deadline.IsZero() && !s.o.Now().Before(s.deadline) {
		budget := time.Duration(s.st.Budget.TimeMS) * time.Millisecond
		return result{Event: Event{Outcome: Interrupted, Code: stopreasons.Timeout}, stop: &stop{Stop: stopreasons.Stop{Condition: "budget.time",
			Value: s.elapsed().Round(time.Second).String(), Threshold: budget.String(),
			Message: fmt.Sprintf("the time budget of %s ran out", budget)}}}, true
	}
	return result{}, false
}

func (s *Supervisor) relLog(path string) string {
	if rel, err := filepath.Rel(s.store.RunDir(s.st.RunID), path); err == nil {
		return rel
	}
	return path
}

// implement runs the agent once for the current milestone.
func (s *Supervisor) implement(ctx context.Context) result {
	st := s.st
	m := s.milestone()
	// A failed or rejected milestone is worked on again after a resume.
	m.Status = state.MilestoneInProgress
	st.Iteration++
	prompt := BuildPrompt(st, s.cfg.Agent.CompletionPromise)
	promptFile := filepath.Join(s.store.RunDir(st.RunID), "prompts", fmt.Sprintf("tick-%04d.md", st.Tick))
	if err := state.WriteFileNoFollow(promptFile, []byte(prompt)); err != nil {
		return fault(err)
	}
	req := s.request(prompt)
	req.PromptFile = promptFile
	inv, err := s.adapter.Invocation(req)
	if err != nil {
		return fault(err)
	}
	parser := s.adapter.NewParser(req)
	spend := s.watchSpend(parser)
	defer spend.close()
	logPath := s.store.LogPath(st.RunID, st.Tick, state.PhaseImplement)
	spec := proc.Spec{
		Argv:         inv.Argv,
		Dir:          s.dir,
		Env:          append(agents.WithoutNestedSession(s.childEnv(state.PhaseImplement)), inv.Env...),
		LogPath:      logPath,
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
	ref := s.agentRef()
	attempt := state.Attempt{Tick: st.Tick, Iteration: st.Iteration, Log: s.relLog(logPath), Agent: &ref}
	m.Attempts = append(m.Attempts, attempt)
	res, err := s.runProcess(callCtx, state.PhaseImplement, spec)
	res = s.settleResult(grace, res)
	stopWatch()
	if err != nil {
		if errors.Is(err, proc.ErrNotFound) {
			return s.fallbackOn(ctx, result{Event: Event{Outcome: Fault, Code: stopreasons.WorkerNotFound},
				stop: &stop{Stop: stopreasons.Stop{Condition: "agent.command", Message: err.Error(), Details: &stopreasons.StopDetails{Command: s.program}}}}, time.Time{}, agents.LimitNone, false)
		}
		// A call that ran and then failed runr (its log could not be
		// written) spent what it used: counted, not handed back on resume.
		if u, ok := agents.UsageSoFar(parser); ok && (u.Tokens() > 0 || u.CacheReadTokens > 0 || u.CostUSD > 0) {
			s.account(parser.Finish(res.ExitCode, res.Tail), res)
		}
		return fault(err)
	}
	spend.close()
	if msg, failed := s.sandboxFailure(res); failed {
		return result{Event: Event{Outcome: Fault, Code: stopreasons.EnvironmentInvalid},
			stop: &stop{Stop: stopreasons.Stop{Code: stopreasons.EnvironmentInvalid, Condition: "sandbox.mode", Message: msg}}}
	}
	ar := parser.Finish(res.ExitCode, res.Tail)
	s.account(ar, res)
	s.lastOutput = proc.Tail(res.Tail, feedbackLines)
	if ar.FinalText != "" {
		s.lastOutput = ar.FinalText
	}
	if r, stopped := spend.stopped(); stopped {
		return r
	}
	if r, stopped := s.interrupted(res); stopped {
		return r
	}
	if res.TimedOut {
		return result{Event: Event{Outcome: AgentTimedOut}, stop: &stop{Stop: stopreasons.Stop{Condition: "agent.timeout", Value: res.Duration.Round(time.Second).String(),
			Threshold: s.cfg.Agent.Timeout.String(), Message: fmt.Sprintf("the agent call ran past agent.timeout (%s)", s.cfg.Agent.Timeout)}}}
	}
	if res.Idle {
		return result{Event: Event{Outcome: AgentStalled}, stop: &stop{Stop: stopreasons.Stop{Condition: "agent.idle_timeout", Threshold: s.cfg.Agent.IdleTimeout.String(),
			Message: fmt.Sprintf("the agent printed nothing for %s", s.cfg.Agent.IdleTimeout)}}}
	}
	gctx, cancel := s.gitContext(ctx)
	defer cancel()
	s.delta = nil
	r, stopped := s.afterImplement(gctx)
	if s.delta != nil {
		s.sum.files = countsOf(*s.delta)
	}
	if stopped {
		return r
	}
	noop := !s.currentAttempt().Progress
	return s.fallbackOn(ctx, s.judgeAgent(ar, res), ar.ResetAt, ar.Limit, noop)
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

// afterImplement updates the tree hash and the no-op streak, and runs the
// scope and lockfile guards. It reports whether a guard (or a failure to
// run one) ends the step.
func (s *Supervisor) afterImplement(ctx context.Context) (result, bool) {
	st := s.st
	// Asked for beside the call, answered by now, or with a later call's
	// look or the stop: never waited for here.
	s.takeAgentVersion(false)
	// Read before any git call of the guards; the calls that follow run no
	// program such a file could name, so the stop can name every file.
	meta, err := s.changedGitMetadata(ctx)
	if err != nil {
		return s.gitFault(err), true
	}
	hash, changed, committed, err := s.agentChanges(ctx)
	if err != nil {
		return s.gitFault(err), true
	}
	if hash != st.TreeHash {
		st.Counters.Noop = 0
		if a := s.currentAttempt(); a != nil {
			a.Progress = true
		}
	} else {
		st.Counters.Noop++
	}
	st.TreeHash = hash
	// The task file is runr's input, read once when the run started: an
	// agent ticking its boxes is not out of scope.
	inScope := slices.DeleteFunc(slices.Clone(changed), func(p string) bool { return p == st.Task.File })
	violations, err := guard.CheckScope(inScope, s.cfg.Scope.Allow, s.cfg.Scope.Deny)
	if err != nil {
		return result{Event: Event{Outcome: Fault, Code: stopreasons.ConfigInvalid}, stop: &stop{Stop: stopreasons.Stop{Message: err.Error()}}}, true
	}
	violations = append(meta, violations...)
	protected, err := s.protectedChanges(inScope, violations)
	if errors.Is(err, guard.ErrBadGlob) {
		return result{Event: Event{Outcome: Fault, Code: stopreasons.ConfigInvalid}, stop: &stop{Stop: stopreasons.Stop{Message: err.Error()}}}, true
	} else if err != nil {
		return s.gitFault(err), true
	}
	if len(violations) > 0 || len(protected) > 0 {
		var files, rules, ruleNames, msgs []string
		named := func(vs []guard.Violation, kind string) []string {
			var out, evFiles, evRules []string
			for _, v := range vs {
				r := v.Rule
				if v.Pattern != "" {
					r += " " + v.Pattern
				}
				files, rules, evFiles, evRules = append(files, v.Path), append(rules, r), append(evFiles, v.Path), append(evRules, r)
				if !slices.Contains(ruleNames, v.Rule) {
					ruleNames = append(ruleNames, v.Rule)
				}
				if v.Change != "" {
					r += ", " + v.Change
				}
				out = append(out, fmt.Sprintf("%q (%s%s)", v.Path, r, committedNote(committed, v.Path)))
			}
			if len(vs) > 0 {
				s.event(state.GuardEvent{Rule: kind, Files: evFiles, Rules: evRules})
			}
			return out
		}
		if out := named(violations, "scope"); len(out) > 0 {
			msg := fmt.Sprintf("%d changed file(s) outside the scope: %s", len(out), strings.Join(out, ", "))
			if len(meta) > 0 {
				msg += " (" + guard.RuleGitMetadata + ": git's own config, info and hooks files, which can make git run programs or hide changes, are outside every scope)"
			}
			msgs = append(msgs, msg)
		}
		if out := named(protected, stopreasons.RuleProtect); len(out) > 0 {
			msgs = append(msgs, fmt.Sprintf("%d protected file(s) changed: %s; %s", len(out), strings.Join(out, ", "), stopreasons.ProtectAdvice))
		}
		return result{Event: Event{Outcome: ScopeViolated}, stop: &stop{Stop: stopreasons.Stop{Condition: strings.Join(ruleNames, ", "),
			Message: strings.Join(msgs, "; "),
			Details: &stopreasons.StopDetails{Files: files, Rules: rules, Committed: onlyIn(committed, files)}}}}, true
	}
	if !st.Flags.AllowDeps {
		if locks := guard.CheckLockfiles(changed, s.cfg.Scope.Lockfiles); len(locks) > 0 {
			var rules, named []string
			for _, l := range locks {
				rules = append(rules, "scope.lockfiles")
				named = append(named, fmt.Sprintf("%q (scope.lockfiles%s)", l, committedNote(committed, l)))
			}
			s.event(state.GuardEvent{Rule: "lockfiles", Files: locks})
			return result{Event: Event{Outcome: LockfileChanged}, stop: &stop{Stop: stopreasons.Stop{Condition: "scope.lockfiles",
				Message: fmt.Sprintf("lockfile(s) changed without --allow-deps: %s", strings.Join(named, ", ")),
				Details: &stopreasons.StopDetails{Files: locks, Rules: rules, Committed: onlyIn(committed, locks)}}}}, true
		}
	}
	return result{}, false
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

// gitFault is the step's result when a git call of the guards or the
// checkpoint failed: the time budget's stop when its deadline ended the
// call, else a fault.
func (s *Supervisor) gitFault(err error) result {
	if errors.Is(err, context.DeadlineExceeded) {
		if r, stopped := s.interrupted(proc.Result{Canceled: true}); stopped {
			return r
		}
	}
	return fault(err)
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

// judgeAgent turns the adapter's result into the step's event.
func (s *Supervisor) judgeAgent(ar agents.Result, res proc.Result) result {
	st := s.st
	switch ar.Class {
	case agents.ClassRateLimit:
		details := &stopreasons.StopDetails{AgentError: firstLine(ar.ErrorText, ""), LimitKind: string(ar.Limit)}
		msg := "the agent hit a rate or usage limit"
		if ar.Limit != agents.LimitNone {
			msg += " (" + string(ar.Limit) + ")"
		}
		if !ar.ResetAt.IsZero() {
			details.ResetAt = ar.ResetAt.UTC().Format(time.RFC3339)
			msg += "; it resets at " + details.ResetAt
		}
		return result{Event: Event{Outcome: AgentRateLimited}, errText: ar.ErrorText,
			stop: &stop{Stop: stopreasons.Stop{Condition: "agent", Message: msg, Details: details}}}
	case agents.ClassAuth:
		return result{Event: Event{Outcome: AgentAuthFailed}, errText: ar.ErrorText,
			stop: &stop{Stop: stopreasons.Stop{Condition: "agent", Message: firstLine(ar.ErrorText, "authentication failed"),
				Details: &stopreasons.StopDetails{AgentError: firstLine(ar.ErrorText, "")}}}}
	case agents.ClassBudget:
		return result{Event: Event{Outcome: AgentCostCap}, errText: ar.ErrorText,
			stop: &stop{Stop: stopreasons.Stop{Condition: "max_cost_usd", Value: round2(st.Usage.CostUSD), Threshold: st.Budget.MaxCostUSD,
				Message: fmt.Sprintf("the agent stopped on the cost cap: $%.2f of $%.2f", st.Usage.CostUSD, st.Budget.MaxCostUSD)}}}
	}
	if ar.Signal == agents.SignalBlocked {
		return result{Event: Event{Outcome: AgentBlocked}, errText: ar.SignalText,
			stop: &stop{Stop: stopreasons.Stop{Condition: "RUNR_STATUS", Message: firstLine(ar.SignalText, "the agent is blocked")}}}
	}
	if ar.IsError || ar.Signal == agents.SignalFailed || res.ExitCode != 0 {
		text := ar.ErrorText
		if text == "" {
			text = proc.Tail(res.Tail, feedbackLines)
		}
		cmd := s.program
		sig := stopconditions.Signature(cmd, text)
		st.LastFailure = &state.Failure{Tick: st.Tick, Phase: state.PhaseImplement, Command: cmd, ExitCode: res.ExitCode,
			Tail: proc.Tail([]byte(text), feedbackLines), Signature: sig, Log: s.currentAttempt().Log}
		return result{Event: Event{Outcome: AgentFailed}, signature: sig,
			errText:  firstLine(text, fmt.Sprintf("agent exited %d", res.ExitCode)),
			errEvent: &stopconditions.ErrorEvent{Source: stopconditions.SourceAgent, Text: text}}
	}
	return result{Event: Event{Outcome: AgentSucceeded, Done: ar.Signal == agents.SignalDone}}
}

// verify runs the verification commands in order; the first failure fails
// the attempt.
func (s *Supervisor) verify(ctx context.Context) result {
	st := s.st
	logPath := s.store.LogPath(st.RunID, st.Tick, state.PhaseVerify)
	prev := map[string]bool{}
	for _, c := range st.Verify {
		prev[c.Command] = c.Passed
	}
	var results []state.CheckResult
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
			return fault(err)
		}
		s.sum.verifyTime += res.Duration
		if r, stopped := s.interrupted(res); stopped {
			return r
		}
		if res.TimedOut {
			s.sum.verify = "timed out"
			st.LastFailure = &state.Failure{Tick: st.Tick, Phase: state.PhaseVerify, Command: cmd, ExitCode: res.ExitCode,
				Tail: proc.Tail(res.Tail, feedbackLines), Log: s.relLog(logPath)}
			return result{Event: Event{Outcome: VerifyTimedOut}, stop: &stop{Stop: stopreasons.Stop{Condition: "verify.timeout", Threshold: s.cfg.Verify.Timeout.String(),
				Message: fmt.Sprintf("%q ran past verify.timeout (%s)", cmd, s.cfg.Verify.Timeout), Details: &stopreasons.StopDetails{Command: cmd}}}}
		}
		passed := res.ExitCode == 0
		if passed && !prev[cmd] && hasCheck(st.Verify, cmd) {
			// A check went from failing to passing.
			if a := s.currentAttempt(); a != nil {
				a.Progress = true
			}
		}
		results = append(results, state.CheckResult{Command: cmd, Passed: passed, ExitCode: res.ExitCode})
		if !passed {
			s.sum.verify = "failed"
			tail := proc.Tail(res.Tail, feedbackLines)
			sig := stopconditions.Signature(cmd, tail)
			st.Verify = results
			st.Counters.TestFailStreak++
			st.LastFailure = &state.Failure{Tick: st.Tick, Phase: state.PhaseVerify, Command: cmd, ExitCode: res.ExitCode,
				Tail: tail, Signature: sig, Log: s.relLog(logPath)}
			return result{Event: Event{Outcome: VerifyFailed}, signature: sig, errText: fmt.Sprintf("%s exited %d", cmd, res.ExitCode),
				errEvent: &stopconditions.ErrorEvent{Source: stopconditions.SourceVerify, Text: tail}}
		}
	}
	st.Verify = results
	st.Counters.TestFailStreak = 0
	if len(results) > 0 {
		s.sum.verify = "passed"
	}
	return result{Event: Event{Outcome: VerifyPassed}}
}

func hasCheck(checks []state.CheckResult, cmd string) bool {
	for _, c := range checks {
		if c.Command == cmd {
			return true
		}
	}
	return false
}

// review runs the review command: exit 0 approves, 1 requests changes, 2
// rejects. A review that could not run, crashed (any other exit) or ran
// past verify.timeout judged nothing: a failed attempt, not a request for
// changes.
func (s *Supervisor) review(ctx context.Context) result {
	st := s.st
	m := s.milestone()
	logPath := s.store.LogPath(st.RunID, st.Tick, state.PhaseReview)
	argv := s.cfg.Review.Command
	res, err := s.runProcess(ctx, state.PhaseReview, proc.Spec{Argv: argv, Dir: s.dir, Env: s.childEnv(state.PhaseReview), LogPath: logPath, Timeout: s.cfg.Verify.Timeout})
	if err != nil {
		if errors.Is(err, proc.ErrNotFound) {
			return result{Event: Event{Outcome: Fault, Code: stopreasons.EnvironmentInvalid}, stop: &stop{Stop: stopreasons.Stop{Condition: "review.command", Message: err.Error()}}}
		}
		return fault(err)
	}
	if r, stopped := s.interrupted(res); stopped {
		return r
	}
	notes := proc.Tail(res.Tail, feedbackLines)
	cmd := strings.Join(argv, " ")
	failure := &state.Failure{Tick: st.Tick, Phase: state.PhaseReview, Command: cmd, ExitCode: res.ExitCode, Tail: notes, Log: s.relLog(logPath)}
	switch {
	case res.TimedOut, res.ExitCode != reviewApprove && res.ExitCode != reviewChanges && res.ExitCode != reviewReject:
		why := fmt.Sprintf("the review exited %d", res.ExitCode)
		switch {
		case res.TimedOut:
			why = fmt.Sprintf("the review ran past verify.timeout (%s)", s.cfg.Verify.Timeout)
		case res.Signal != "":
			why = "the review was ended by a signal (" + res.Signal + ")"
		}
		failure.Signature = stopconditions.Signature(cmd, why)
		st.LastFailure = failure
		// on_error judges agent and verify errors (DESIGN §4), not the review's.
		return result{Event: Event{Outcome: ReviewFailed}, signature: failure.Signature, errText: why}
	case res.ExitCode == reviewApprove:
		st.ReviewNotesHash = ""
		return result{Event: Event{Outcome: ReviewApproved}}
	case res.ExitCode == reviewReject:
		failure.Notes = notes
		st.LastFailure = failure
		return result{Event: Event{Outcome: ReviewRejected}, errText: "the review rejected the work",
			stop: &stop{Stop: stopreasons.Stop{Condition: "review.command", Message: "the review rejected milestone " + strconv.Itoa(st.MilestoneIndex+1),
				Details: &stopreasons.StopDetails{Command: cmd}}}}
	default:
		h := sha256.Sum256([]byte(strings.TrimSpace(notes)))
		hash := hex.EncodeToString(h[:8])
		repeated := st.ReviewNotesHash == hash
		st.ReviewNotesHash = hash
		m.ReviewRounds++
		failure.Notes = notes
		st.LastFailure = failure
		return result{Event: Event{Outcome: ReviewChanges}, errText: "the review requested changes", reviewRepeated: repeated}
	}
}

// checkpoint records the approved milestone's tree and commits it when
// asked.
func (s *Supervisor) checkpoint(ctx context.Context) result {
	ctx, cancel := s.gitContext(ctx)
	defer cancel()
	st := s.st
	m := s.milestone()
	m.TreeHash = st.TreeHash
	if s.cfg.Checkpoint.Commit || st.Flags.Worktree {
		msg := fmt.Sprintf("runr %s: milestone %d/%d: %s", st.RunID, st.MilestoneIndex+1, len(st.Milestones), m.Goal)
		exclude, err := s.untouchedFiles(ctx)
		if err != nil {
			return s.gitFault(err)
		}
		sha, err := guard.CommitAll(ctx, s.dir, msg, exclude)
		if err != nil {
			return s.gitFault(err)
		}
		m.Commit = sha
		if sha != "" {
			// What the commit holds was judged after implement; later
			// guards judge only commits after it. The baseline stays: the
			// user's files it records were left out of the commit.
			st.GuardHead = sha
			s.event(state.CheckpointCommitEvent{SHA: sha, Milestone: st.MilestoneIndex + 1})
		}
	}
	return result{Event: Event{Outcome: Checkpointed}}
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
	st.Counters.Edges = map[string]int{}
	st.ReviewNotesHash = ""
	if st.MilestoneIndex >= len(st.Milestones) {
		st.Phase = state.PhaseFinalize
		return
	}
	st.Phase = state.PhaseImplement
	st.Milestones[st.MilestoneIndex].Status = state.MilestoneInProgress
}

func (s *Supervisor) backEdge(edge string) {
	st := s.st
	if st.Counters.Edges == nil {
		st.Counters.Edges = map[string]int{}
	}
	st.Counters.Edges[edge]++
	m := s.milestone()
	if m.Edges == nil {
		m.Edges = map[string]int{}
	}
	m.Edges[edge]++
}

// endMilestone gives the current milestone the status it ends with.
func (s *Supervisor) endMilestone(status string) {
	st := s.st
	m := s.milestone()
	m.Status = status
	switch status {
	case state.MilestoneApproved:
		st.Counters.ConsecutiveFails = 0
		s.event(state.MilestoneApprovedEvent{Milestone: st.MilestoneIndex + 1, Goal: m.Goal})
		if n := s.o.Milestones; n != nil {
			// Told beside the run, not in its way: a slow webhook must not
			// hold the next tick, nor a signal's stop. finish waits for it.
			id, dir, num, goal, log := st.RunID, s.store.RunDir(st.RunID), st.MilestoneIndex+1, m.Goal, s.log
			s.notifying.Add(1)
			go func() {
				defer s.notifying.Done()
				if err := n.MilestoneApproved(id, dir, num, goal); err != nil && log != nil {
					log.Warn("notify milestone", zap.Error(err))
				}
			}()
		}
	case state.MilestoneFailed:
		st.Counters.ConsecutiveFails++
		s.event(state.MilestoneFailedEvent{Milestone: st.MilestoneIndex + 1, Retries: m.Retries})
	case state.MilestoneRejected:
		st.Counters.ConsecutiveFails++
	}
}

func (s *Supervisor) currentAttempt() *state.Attempt {
	m := s.milestone()
	if len(m.Attempts) == 0 {
		return nil
	}
	return &m.Attempts[len(m.Attempts)-1]
}

// closeAttempt records the outcome of the current attempt and updates the
// counters that depend on it; retry counts it against the milestone's
// retries.
func (s *Supervisor) closeAttempt(outcome string, retry bool, signature, errText string) {
	st := s.st
	a := s.currentAttempt()
	if a == nil || a.Outcome != "" {
		return
	}
	a.Outcome = outcome
	a.ErrorSignature = signature
	a.Error = errText
	if outcome == state.OutcomeStopped {
		return
	}
	if outcome == state.OutcomeSwitched {
		s.event(attemptEvent(st.MilestoneIndex+1, a))
		return
	}
	m := s.milestone()
	st.Counters.Attempts++
	if outcome == state.OutcomeApproved {
		st.Counters.SameError = 0
	}
	if retry {
		m.Retries++
		if signature != "" {
			if signature == st.LastErrorSignature {
				st.Counters.SameError++
			} else {
				st.Counters.SameError = 1
			}
			st.LastErrorSignature = signature
		}
	}
	if a.Progress || outcome == state.OutcomeApproved {
		st.Counters.NoProgress = 0
		st.LastProgressTick = st.Tick
	} else {
		st.Counters.NoProgress++
	}
	st.Statistics = st.Tally()
	// The whole attempt: state.json lists only a milestone's last ones.
	s.event(attemptEvent(st.MilestoneIndex+1, a))
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
