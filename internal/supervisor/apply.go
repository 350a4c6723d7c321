package supervisor

import (
	"context"
	"os"

	"go.uber.org/zap"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
)

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
		RequireTests:  s.cfg.Verify.RequireTests,
		MinChanged:    s.cfg.Verify.Coverage.MinChanged,
	}
}

// run is the run as the decision reads it: a copy, never written through.
func (s *Supervisor) run() Run {
	st := s.st
	run := Run{
		Counters: Counters{Counters: st.Counters, LastErrorSignature: st.LastErrorSignature, LastProgressTick: st.LastProgressTick,
			ReviewNotesHash: st.ReviewNotesHash, TreeHash: st.TreeHash},
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
	run, r := s.run(), s.rules()
	d := Decide(phase, f, run, r)
	if sw := d.Switch; sw != nil {
		f.Switch = &SwitchFacts{From: s.agentRef()}
		if s.switchAgent(ctx, sw.Reason, sw.ResetAt, sw.Why) {
			f.Switch.Switched, f.Switch.To = true, s.agentRef()
		}
		d = Decide(phase, f, run, r)
	}
	// Only a step that could not be carried out asks whether the working
	// directory is gone, which every process and git call there would fail
	// on: a tick that went well costs no look.
	if d.Event.Outcome == Fault && s.dir != "" {
		if _, err := os.Stat(s.dir); err != nil {
			f.DirGone = true
			d = Decide(phase, f, run, r)
		}
	}
	// And whether the run's own directory in the store is still its own:
	// swapped for a symlink, every write of the run would land elsewhere.
	if d.Event.Outcome == Fault {
		if err := s.store.CheckRunDir(s.st.RunID); err != nil {
			f.StoreDamaged = err
			d = Decide(phase, f, run, r)
		}
	}
	return d
}

// apply carries out decision d: the counters, the milestone's last attempt
// and status, the last failure and checks, the events, then the next phase
// or milestone. It returns the stop when d ends the run.
func (s *Supervisor) apply(d Decision) *stop {
	st := s.st
	c := d.Counters
	st.Counters = c.Counters
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

func (s *Supervisor) milestone() *state.Milestone {
	return &s.st.Milestones[s.st.MilestoneIndex]
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
