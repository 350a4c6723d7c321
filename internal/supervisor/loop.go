package supervisor

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/rulestate"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// stop is a decision to end the run, taken inside a tick or by the
// evaluator: the stop as it is recorded, and where a resume continues.
type stop struct {
	stopreasons.Stop
	// resumePhase is where a resume continues; "" means the run's phase.
	resumePhase string
}

func internalStop(err error) *stop {
	return &stop{Stop: ErrorStop(err)}
}

// ErrorStop is the stop a failure of runr or of the machine ends a run
// with, for a sequential run and a parallel one: a full disk or a failing
// file system is environment_invalid (resumable once fixed), any other
// error its own code, or internal_error.
func ErrorStop(err error) stopreasons.Stop {
	err = environmentError(err, "")
	code := stopreasons.CodeOf(err)
	if code == stopreasons.Complete {
		code = stopreasons.InternalError
	}
	return stopreasons.Stop{Code: code, Message: err.Error()}
}

func (s *Supervisor) loop(ctx context.Context) (*state.State, error) {
	st := s.st
	s.started = s.o.Now()
	if st.Budget.TimeMS > 0 {
		s.deadline = s.started.Add(time.Duration(st.Budget.TimeMS-st.ElapsedMS) * time.Millisecond)
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	unwatch := s.watchSignals(cancel)
	sp := s.ticks(runCtx)
	// Signals that come while the stop is recorded stay in the channel for
	// whoever reads it next (the auto-resume wait). One the watcher took
	// after the stop was decided must not be lost either: it overrules a
	// stop that an auto-resume would retry.
	unwatch()
	if sig := s.signalled(); sig != nil && sp.Condition != stopreasons.ConditionSignal && stopreasons.AutoResumable(sp.Code) {
		sp = sig.stop()
	}
	return s.finish(sp)
}

// ticks works through the ticks until a stop is decided.
func (s *Supervisor) ticks(ctx context.Context) *stop {
	st := s.st
	st.RunStatus = stopreasons.RunRunning
	// A new run's state.json already says running: its first tick starts
	// the agent, whose record is written before it runs. A resumed run's
	// says stopped until this write.
	if !s.created {
		if err := s.save(); err != nil {
			return internalStop(err)
		}
	}
	for {
		if sig := s.signalled(); sig != nil {
			return sig.stop()
		}
		if !s.deadline.IsZero() && !s.o.Now().Before(s.deadline) {
			// The budget ran out between ticks (or a resume started with
			// none left): the evaluator names it.
			if v := s.evaluate(ctx, Decision{}); v.Stop != nil {
				return s.verdictStop(v.Stop)
			}
		}
		st.Tick++
		phase := st.Phase
		s.sum = tickSummary{}
		milestone := min(st.MilestoneIndex+1, len(st.Milestones))
		s.report(ProgressTick{})
		d := s.tick(ctx, Phase(phase))
		if sp := s.apply(d); sp != nil {
			// A stop inside the tick still records how close every rule
			// was after it, and says what the tick came to.
			s.evaluate(ctx, d)
			s.reportTick(phase, milestone, d)
			return sp
		}
		// After every tick: counters (the decision's, applied), evaluate,
		// persist, timeline.
		if v := s.evaluate(ctx, d); v.Stop != nil {
			s.reportTick(phase, milestone, d)
			return s.verdictStop(v.Stop)
		}
		s.event(s.tickData(phase, d))
		if err := s.save(); err != nil {
			return internalStop(err)
		}
		s.reportTick(phase, milestone, d)
	}
}

// tick runs one phase step and decides what it came to.
func (s *Supervisor) tick(ctx context.Context, phase Phase) Decision {
	switch phase {
	case Implement:
		return s.implement(ctx)
	case Verify:
		return s.verify(ctx)
	case Review:
		return s.review(ctx)
	case Checkpoint:
		return s.checkpoint(ctx)
	}
	// Finalize runs nothing: it is reached only when the evaluator did not
	// stop a finished run, which cannot happen with every milestone
	// approved; a resume of such a run lands here and completes it. Any
	// other phase is one state.json should not hold.
	return s.decide(ctx, phase, Facts{})
}

// evaluate runs the stop conditions on a snapshot of the run after a step
// decided as d, and records how close each rule is.
func (s *Supervisor) evaluate(ctx context.Context, d Decision) stopconditions.Verdict {
	snap := s.snapshot(ctx, d)
	v := stopconditions.Evaluate(snap, s.cfg.Stop, rulestate.Limits(s.st.Budget))
	s.st.Conditions = s.st.Conditions[:0]
	for _, p := range v.Progress {
		s.st.Conditions = append(s.st.Conditions, state.ConditionProg{Name: p.Name, Progress: p.Progress, Message: p.Message})
	}
	return v
}

func (s *Supervisor) verdictStop(v *stopconditions.Stop) *stop {
	sp := &stop{Stop: *v}
	if v.Condition == stopconditions.RuleFinishedFailed {
		s.unapprovedStop(sp)
	}
	return sp
}

// unapprovedStop completes the stop of a skip-mode run that reached its end
// with milestones failed or rejected. The diagnosis speaks of one milestone,
// so the stop names the last unapproved one with its failed attempts and the
// retry limit. A resume goes back to the first unapproved milestone: resuming
// at finalize would complete a run that is not done.
func (s *Supervisor) unapprovedStop(sp *stop) {
	st := s.st
	first, last := -1, -1
	for i, m := range st.Milestones {
		if m.Status == state.MilestoneApproved {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
	}
	if last < 0 {
		return
	}
	m := st.Milestones[last]
	unapproved, _ := sp.Value.(int)
	sp.Details = &stopreasons.StopDetails{Milestone: last + 1, MilestoneGoal: m.Goal, Unapproved: unapproved}
	sp.Value, sp.Threshold = m.Retries, s.cfg.Stop.MaxMilestoneRetries
	st.MilestoneIndex = first
	sp.resumePhase = state.PhaseImplement
}

// StopWaiting records a stop that came while no tick ran, a signal or a
// `runr stop` during the auto-resume wait, the way every stop is recorded:
// state.json, the timeline, report.md and stop.json. The caller holds the
// run's lock and keeps it.
func (s *Supervisor) StopWaiting(st *state.State, code stopreasons.Code, message string) (*state.State, error) {
	s.st = st
	s.baseMS = st.ElapsedMS
	defer s.release()
	if err := s.openRunFiles(); err != nil {
		return st, err
	}
	return s.finish(&stop{Stop: stopreasons.Stop{Code: code, Condition: stopreasons.ConditionSignal, Message: message}})
}

// Fail records err, a failure of a continuation of the run outside a tick
// (an automatic resume that could not be planned), as the run's stop, the
// way every stop is recorded; its code is the error's. The caller holds the
// run's lock and keeps it.
func (s *Supervisor) Fail(st *state.State, err error) (*state.State, error) {
	s.st = st
	s.baseMS = st.ElapsedMS
	defer s.release()
	// Without its timeline the stop is still recorded in state.json.
	_ = s.openRunFiles()
	return s.finish(internalStop(err))
}

// withContext is the stop with the evidence every stop carries filled in
// where the deciding step left it out: the milestone, and the last failing
// command with its signature.
func (sp *stop) withContext(st *state.State) stopreasons.Stop {
	out := sp.Stop
	d := stopreasons.StopDetails{}
	if sp.Details != nil {
		d = *sp.Details
	}
	if idx := st.MilestoneIndex; idx >= 0 && idx < len(st.Milestones) && d.Milestone == 0 {
		d.Milestone = idx + 1
		d.MilestoneGoal = st.Milestones[idx].Goal
	}
	if f := st.LastFailure; f != nil {
		if d.Command == "" {
			d.Command = f.Command
		}
		if d.Signature == "" {
			d.Signature = f.Signature
		}
		if sp.Code == stopreasons.ChangesNotTested && d.Untested == nil && f.Untested != nil {
			u := *f.Untested
			d.Untested = &u
		}
	}
	out.Details = &d
	return out
}

// finish records the stop, persists everything, and writes report.md and
// stop.json.
func (s *Supervisor) finish(sp *stop) (*state.State, error) {
	st := s.st
	// A run refused before it took the start's reads of the checkout
	// ends them before it records the stop.
	s.dropOpening()
	uncommitted := s.readUncommitted(sp)
	// The version is waited for, a Probe's timeout at most; a signal's
	// stop ends the probe first.
	if sp.Condition == stopreasons.ConditionSignal && s.cancelVersion != nil {
		s.cancelVersion()
	}
	s.takeAgentVersion(true)
	// Milestone notifications still under way end within notify.timeout.
	s.notifying.Wait()
	phase := sp.resumePhase
	if phase == "" {
		phase = st.Phase
	}
	if s.log != nil {
		s.log.Info("run stopped", zap.String("code", string(sp.Code)), zap.String("message", sp.Message))
	}
	err := RecordStop(s.store, st, StopRecord{Stop: sp.withContext(st), Now: s.o.Now(),
		Resume: state.ResumeFrom{Milestone: st.MilestoneIndex + 1, Phase: phase},
		Event:  s.event,
		Save: func() error {
			err := s.save()
			// The stop is the run's last record: the timeline keeps it
			// even when state.json could not be written.
			s.flushEvents()
			return err
		}})
	st.Uncommitted = uncommitted()
	s.report(ProgressStop{Message: sp.Message})
	return st, err
}

// readUncommitted starts reading, for a run that completed in the user's
// checkout without checkpoint commits, the changes it leaves there
// (State.Uncommitted), while the stop is recorded; the function returned
// waits for them (nil for any other run, or when git failed).
func (s *Supervisor) readUncommitted(sp *stop) func() []string {
	st := s.st
	if sp.Code != stopreasons.Complete || s.cfg.Checkpoint.Commit || st.Branch != "" {
		return func() []string { return nil }
	}
	dir := st.Repo
	if st.Worktree != "" {
		dir = st.Worktree
	}
	ch := make(chan []string, 1)
	go func() {
		changes, err := guard.Changes(context.Background(), dir)
		if err != nil {
			ch <- nil
			return
		}
		paths := make([]string, 0, len(changes))
		for _, c := range changes {
			paths = append(paths, c.Path)
		}
		ch <- paths
	}()
	return func() []string { return <-ch }
}

// outcomeText says what a tick came to, in a few words.
func outcomeText(d Decision) string {
	ev := d.Event
	if ev.Outcome == AgentSucceeded && ev.Done {
		return "agent done"
	}
	if ev.Outcome == AgentSucceeded {
		return "agent incomplete"
	}
	return ev.Outcome.String()
}

// tickData is the timeline's record of a tick: its phase, what comes next,
// and what it came to.
func (s *Supervisor) tickData(phase string, dec Decision) state.TickEvent {
	st := s.st
	cost := st.Usage.CostUSD
	d := state.TickEvent{Phase: phase, Next: st.Phase, Milestone: st.MilestoneIndex + 1, Iteration: st.Iteration,
		Outcome: outcomeText(dec), CostUSD: &cost}
	if f := s.sum.files; f != nil {
		d.TickFiles = &state.TickFiles{Added: f.Added, Modified: f.Modified, Deleted: f.Deleted}
	}
	if s.sum.verify != "" {
		d.TickVerify = &state.TickVerify{Verify: s.sum.verify, VerifyMS: s.sum.verifyTime.Milliseconds()}
	}
	if c := s.sum.call; c.source != "" {
		d.TickCall = &state.TickCall{Model: c.Model, InputTokens: c.InputTokens, OutputTokens: c.OutputTokens, CacheReadTokens: c.CacheReadTokens,
			CacheWriteTokens: c.CacheWriteTokens, CallCostUSD: c.CostUSD, CostSource: string(c.source)}
	}
	if c := s.closest(); c != nil && c.Progress > 0 {
		d.Closest = fmt.Sprintf("%s %.0f%%", c.Name, c.Progress*100)
	}
	return d
}

// reportTick reports the end of a tick with what it came to: the phase
// that ran and the milestone it worked on.
func (s *Supervisor) reportTick(phase string, milestone int, d Decision) {
	p := s.progress(ProgressTickDone{Outcome: outcomeText(d), Files: s.sum.files, Verify: s.sum.verify, VerifyTime: s.sum.verifyTime})
	p.Phase, p.Milestone = phase, milestone
	s.o.Progress(p)
}

// closest is the stop rule closest to firing.
func (s *Supervisor) closest() *state.ConditionProg {
	var best *state.ConditionProg
	for i := range s.st.Conditions {
		c := &s.st.Conditions[i]
		if best == nil || c.Progress > best.Progress {
			best = c
		}
	}
	return best
}

func (s *Supervisor) report(msg ProgressMsg) {
	if _, ok := msg.(ProgressTick); ok {
		s.observe(TickStarted{})
	}
	s.o.Progress(s.progress(msg))
}

func (s *Supervisor) progress(msg ProgressMsg) Progress {
	st := s.st
	p := Progress{
		RunID:      st.RunID,
		Tick:       st.Tick,
		Phase:      st.Phase,
		Milestone:  min(st.MilestoneIndex+1, len(st.Milestones)),
		Milestones: len(st.Milestones),
		Budget:     time.Duration(st.Budget.TimeMS) * time.Millisecond,
		CostUSD:    st.Usage.CostUSD,
		Msg:        msg,
	}
	if !s.started.IsZero() {
		p.Elapsed = s.elapsed()
	}
	if best := s.closest(); best != nil {
		cp := *best
		p.Closest = &cp
	}
	return p
}

// newLogger writes runr's own debug log as JSON lines into the run dir.
func newLogger(path string) *zap.Logger {
	f, err := state.OpenAppendNoFollow(path)
	if err != nil {
		return zap.NewNop()
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(f), zapcore.DebugLevel)
	return zap.New(core)
}
