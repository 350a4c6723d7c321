package supervisor

import (
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// result is what a phase step reports: its event for the transition, and
// the facts the effects and the evaluator need.
type result struct {
	Event
	// stop describes the stop when the event can end the run (its message,
	// condition, figures and details); the transition names the code.
	stop      *stop
	signature string // a failed attempt's error signature
	errText   string // one line: what failed
	// errEvent is the error of this step, for on_error conditions.
	errEvent *stopconditions.ErrorEvent
	// reviewRepeated: the review asked for the same changes as the one
	// before it.
	reviewRepeated bool
}

// fault is the result of a step that could not be carried out.
func fault(err error) result {
	sp := internalStop(err)
	return result{Event: Event{Outcome: Fault, Code: sp.Code}, stop: sp}
}

// rules are the parts of the configuration the transition reads.
func (s *Supervisor) rules() Rules {
	r := s.cfg.Stop
	return Rules{
		Verify:     len(s.cfg.Verify.Commands) > 0,
		Review:     len(s.cfg.Review.Command) > 0,
		Skip:       r.OnMilestoneFailure == stopconditions.OnFailureSkip,
		MaxRetries: r.MaxMilestoneRetries,
	}
}

// apply decides the step for a phase's result and carries out its effects,
// in the order Step documents. It returns the stop when the step ends the
// run.
func (s *Supervisor) apply(phase Phase, res result) *stop {
	st := s.st
	var c Counters
	if st.MilestoneIndex < len(st.Milestones) {
		c.Retries = s.milestone().Retries
	}
	step := Transition(phase, res.Event, c, s.rules())
	if step.Attempt != "" {
		s.closeAttempt(step.Attempt, step.Retry, res.signature, res.errText)
	}
	if step.Edge != "" {
		s.backEdge(step.Edge)
	}
	if step.Milestone != "" {
		s.endMilestone(step.Milestone)
	}
	if step.Stop != "" {
		sp := res.stop
		if sp == nil {
			sp = &stop{Stop: stopreasons.Stop{Message: string(step.Stop)}}
		}
		sp.Code = step.Stop
		sp.resumePhase = string(step.ResumeAt)
		if sp.resumePhase == "" {
			sp.resumePhase = string(phase)
		}
		return sp
	}
	if step.NextMilestone {
		s.nextMilestone()
	} else {
		st.Phase = string(step.Next)
	}
	return nil
}
