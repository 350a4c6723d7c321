package supervisor

import (
	"context"
	"errors"
	"os"
	"syscall"

	"go.uber.org/zap"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// environmentError marks as environment_invalid the failures that come
// from the machine rather than from runr or the run: a full disk or quota, a
// read-only or failing file system, a working directory that is gone. They
// stop the run with its state.json as last written, resumable once fixed.
func environmentError(err error, dir string) error {
	if stopreasons.CodeOf(err) == stopreasons.EnvironmentInvalid {
		return err
	}
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO} {
		if errors.Is(err, errno) {
			return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "%s; free space or fix the file system, then run `runr resume`", errno)
		}
	}
	if dir == "" {
		return err
	}
	if _, serr := os.Stat(dir); serr != nil {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err,
			"the run's working directory %s is gone; restore it, then run `runr resume`", dir)
	}
	return err
}

// rules are the parts of the configuration the decision reads.
func (s *Supervisor) rules() Rules {
	r := s.cfg.Stop
	return Rules{
		Verify:        len(s.cfg.Verify.Commands) > 0,
		Review:        len(s.cfg.Review.Command) > 0,
		Skip:          r.OnMilestoneFailure == stopconditions.OnFailureSkip,
		MaxRetries:    r.MaxMilestoneRetries,
		AllowDeps:     s.st.Flags.AllowDeps,
		Fallbacks:     len(s.o.Config.Agent.Fallback),
		MaxWait:       s.cfg.Resume.MaxWait,
		AgentTimeout:  s.cfg.Agent.Timeout,
		IdleTimeout:   s.cfg.Agent.IdleTimeout,
		VerifyTimeout: s.cfg.Verify.Timeout,
	}
}

// run is the run as the decision reads it: a copy, never written through.
func (s *Supervisor) run() Run {
	st := s.st
	c := st.Counters
	run := Run{
		Counters: Counters{Attempts: c.Attempts, SameError: c.SameError, LastErrorSignature: st.LastErrorSignature,
			Noop: c.Noop, NoProgress: c.NoProgress, LastProgressTick: st.LastProgressTick, ConsecutiveFails: c.ConsecutiveFails,
			TestFailStreak: c.TestFailStreak, Edges: c.Edges, ReviewNotesHash: st.ReviewNotesHash, TreeHash: st.TreeHash},
		ID: st.RunID, Dir: s.dir, Tick: st.Tick, Milestone: st.MilestoneIndex + 1, Checks: st.Verify,
		CostUSD: st.Usage.CostUSD, Tokens: st.Usage.InputTokens + st.Usage.OutputTokens, CostEstimated: st.Usage.CostEstimated,
		Budget: st.Budget,
	}
	if i := st.MilestoneIndex; i >= 0 && i < len(st.Milestones) {
		m := st.Milestones[i]
		run.Goal, run.Retries, run.ReviewRounds, run.MilestoneEdges = m.Goal, m.Retries, m.ReviewRounds, m.Edges
		if n := len(m.Attempts); n > 0 {
			a := m.Attempts[n-1]
			run.Attempt = &a
		}
	}
	return run
}

// decide decides a step that ran in phase on the facts f it gathered. When
// the decision asks for a switch to a fallback agent, the switch is tried
// (it looks up the next agent's program) and the step decided again with
// what came of it.
func (s *Supervisor) decide(ctx context.Context, phase Phase, f Facts) Decision {
	f.Now = s.o.Now()
	if s.dir != "" {
		_, err := os.Stat(s.dir)
		f.DirGone = err != nil
	}
	run, r := s.run(), s.rules()
	d := Decide(phase, f, run, r)
	if sw := d.Switch; sw != nil {
		f.Switch = &SwitchFacts{From: s.agentRef()}
		if s.switchAgent(ctx, sw.Reason, sw.ResetAt, sw.Why) {
			f.Switch.Switched, f.Switch.To = true, s.agentRef()
		}
		d = Decide(phase, f, run, r)
	}
	return d
}

// apply carries out decision d: the counters, the milestone's last attempt
// and status, the last failure and checks, the events, then the next phase
// or milestone. It returns the stop when d ends the run.
func (s *Supervisor) apply(d Decision) *stop {
	st := s.st
	c := d.Counters
	st.Counters.Attempts, st.Counters.SameError, st.Counters.Noop, st.Counters.NoProgress = c.Attempts, c.SameError, c.Noop, c.NoProgress
	st.Counters.ConsecutiveFails, st.Counters.TestFailStreak, st.Counters.Edges = c.ConsecutiveFails, c.TestFailStreak, c.Edges
	st.LastErrorSignature, st.LastProgressTick, st.ReviewNotesHash, st.TreeHash = c.LastErrorSignature, c.LastProgressTick, c.ReviewNotesHash, c.TreeHash
	if i := st.MilestoneIndex; i >= 0 && i < len(st.Milestones) {
		m := &st.Milestones[i]
		m.Retries, m.ReviewRounds, m.Edges = c.Retries, c.ReviewRounds, c.MilestoneEdges
		if n := len(m.Attempts); n > 0 && d.Attempt != nil {
			m.Attempts[n-1] = *d.Attempt
		}
		if d.Step.Milestone != "" {
			m.Status = d.Step.Milestone
		}
	}
	if d.Failure != nil {
		st.LastFailure = d.Failure
	}
	if d.SetChecks {
		st.Verify = d.Checks
	}
	if d.Verify != "" {
		s.sum.verify = d.Verify
	}
	st.Statistics = st.Tally()
	for _, e := range d.Events {
		s.event(e)
	}
	if d.Step.Milestone == state.MilestoneApproved {
		s.notifyApproved()
	}
	if d.Stop != nil {
		return d.Stop
	}
	if d.Step.NextMilestone {
		s.nextMilestone()
	} else {
		st.Phase = string(d.Step.Next)
	}
	return nil
}

// notifyApproved tells of the approved milestone beside the run, not in its
// way: a slow webhook must not hold the next tick, nor a signal's stop.
// finish waits for it.
func (s *Supervisor) notifyApproved() {
	n := s.o.Milestones
	if n == nil {
		return
	}
	st, m := s.st, s.milestone()
	id, dir, num, goal, log := st.RunID, s.store.RunDir(st.RunID), st.MilestoneIndex+1, m.Goal, s.log
	s.notifying.Add(1)
	go func() {
		defer s.notifying.Done()
		if err := n.MilestoneApproved(id, dir, num, goal); err != nil && log != nil {
			log.Warn("notify milestone", zap.Error(err))
		}
	}()
}
