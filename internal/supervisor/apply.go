package supervisor

import (
	"errors"
	"fmt"
	"os"
	"syscall"

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

// lostDir turns the fault of a step into environment_invalid when the
// run's working directory is gone (a deleted worktree): every process and
// git command there fails, whatever the step made of it.
func (s *Supervisor) lostDir(res result) result {
	if res.Outcome != Fault || res.Code == stopreasons.EnvironmentInvalid || s.dir == "" {
		return res
	}
	if _, err := os.Stat(s.dir); err == nil {
		return res
	}
	msg := ""
	if res.stop != nil {
		msg = " (" + res.stop.Message + ")"
	}
	return result{Event: Event{Outcome: Fault, Code: stopreasons.EnvironmentInvalid}, stop: &stop{Stop: stopreasons.Stop{
		Message: fmt.Sprintf("the run's working directory %s is gone%s; restore it, then run `runr resume %s`", s.dir, msg, s.st.RunID)}}}
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
