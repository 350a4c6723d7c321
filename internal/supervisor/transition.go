package supervisor

import (
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// Phase is a step of the tick loop (DESIGN §2).
type Phase string

// The phases, spelt as state.json spells them.
const (
	Implement  Phase = state.PhaseImplement
	Verify     Phase = state.PhaseVerify
	Review     Phase = state.PhaseReview
	Checkpoint Phase = state.PhaseCheckpoint
	Finalize   Phase = state.PhaseFinalize
)

// Outcome is what one phase step came to: the left column of DESIGN §2's
// outcome table.
type Outcome int

const (
	// AgentSucceeded: the agent exited 0 without an error; Event.Done says
	// whether it signalled completion.
	AgentSucceeded Outcome = iota + 1
	// AgentFailed: a non-zero exit, an is_error result, or RUNR_STATUS: failed.
	AgentFailed
	AgentBlocked     // RUNR_STATUS: blocked
	AgentTimedOut    // past agent.timeout
	AgentStalled     // no output for agent.idle_timeout
	AgentRateLimited // a rate or usage limit
	AgentAuthFailed  // could not authenticate
	AgentCostCap     // stopped itself on the cost cap runr passed it
	ScopeViolated    // the scope guard found files outside the scope
	LockfileChanged  // the lockfile guard found a changed lockfile
	VerifyPassed     // every verify command passed
	VerifyFailed     // a verify command failed
	VerifyTimedOut   // a verify command ran past verify.timeout
	// VerifyUntested: every verify command passed, but they ran fewer of
	// the milestone's changed lines than verify.coverage.min_changed, or
	// (verify.require_tests) no test at all.
	VerifyUntested
	ReviewApproved // the review exited 0
	ReviewChanges  // the review exited 1: it requests changes
	ReviewRejected // the review exited 2
	// ReviewFailed: the review could not run, crashed or ran past
	// verify.timeout; that is not a request for changes.
	ReviewFailed
	Checkpointed // the approved milestone was recorded (and committed)
	Finalized    // every milestone is approved: the run is complete
	// Interrupted: a signal or the time budget cut the step short;
	// Event.Code names the stop.
	Interrupted
	// Fault: the step could not be carried out (runr's own I/O, a program
	// runr needs); Event.Code names the stop.
	Fault
	// AgentSwitched: the agent hit a limit that resets beyond
	// resume.max_wait, or its program is missing, and the run switched to
	// a fallback agent (agent.fallback) for the next call.
	AgentSwitched
)

var outcomeNames = map[Outcome]string{
	AgentSucceeded: "agent succeeded", AgentFailed: "agent failed", AgentBlocked: "agent blocked",
	AgentTimedOut: "agent timed out", AgentStalled: "agent stalled", AgentRateLimited: "agent rate limited",
	AgentAuthFailed: "agent auth failed", AgentCostCap: "agent cost cap", ScopeViolated: "scope violated",
	LockfileChanged: "lockfile changed", VerifyPassed: "verify passed", VerifyFailed: "verify failed",
	VerifyTimedOut: "verify timed out", VerifyUntested: "verify untested", ReviewApproved: "review approved", ReviewChanges: "review requested changes",
	ReviewRejected: "review rejected", ReviewFailed: "review failed", Checkpointed: "checkpointed", Finalized: "finalized",
	Interrupted: "interrupted", Fault: "fault", AgentSwitched: "agent switched",
}

func (o Outcome) String() string {
	if n, ok := outcomeNames[o]; ok {
		return n
	}
	return "unknown outcome"
}

// Event is what happened in one phase step.
type Event struct {
	Outcome Outcome
	Done    bool             // AgentSucceeded: the agent signalled completion
	Code    stopreasons.Code // Interrupted and Fault: the stop to record
}

// Backward edges of the phase graph.
const (
	edgeVerify = "verify->implement"
	edgeReview = "review->implement"
)

// Step is the decision for one event: the next phase or a stop, and what
// it does, in this order (follow counts it, apply records it): close the
// attempt, take the backward edge, end the milestone, move to the next
// phase or milestone, or stop.
type Step struct {
	// Attempt is the outcome recorded for the milestone's open attempt
	// (state.Outcome*); "" leaves it open, to be judged by a later phase or
	// by a resume.
	Attempt string
	// Retry counts the attempt against max_milestone_retries.
	Retry bool
	// Edge is the backward edge taken, "" for none.
	Edge string
	// Milestone is the status the current milestone ends with
	// (state.Milestone*); "" while it goes on.
	Milestone string
	// NextMilestone moves to the next unapproved milestone, or to finalize
	// when none is left; Next is then Implement.
	NextMilestone bool
	// Next is the phase of the next tick; "" when the run stops.
	Next Phase
	// Stop ends the run with this reason, and a resume continues at
	// ResumeAt ("" for the phase the step ran in).
	Stop     stopreasons.Code
	ResumeAt Phase
}

// Transition decides what the run does after one phase step. It is pure:
// the outcome table of DESIGN §2, with the retry limit of skip mode (in stop
// mode the evaluator stops a milestone that used up its retries, because
// the stop competes with the other rules of §4).
func Transition(phase Phase, ev Event, c Counters, r Rules) Step {
	switch ev.Outcome {
	case AgentSucceeded:
		switch {
		case r.Verify:
			return Step{Next: Verify}
		case ev.Done:
			return passed(r)
		default:
			// Succeeded without saying it is done: another iteration, not
			// a failure.
			return Step{Attempt: state.OutcomeIncomplete, Next: Implement}
		}
	case AgentFailed:
		return failed(c, r, "")
	case VerifyPassed:
		return passed(r)
	case VerifyFailed, VerifyUntested:
		return failed(c, r, edgeVerify)
	case ReviewApproved:
		return Step{Attempt: state.OutcomeApproved, Next: Checkpoint}
	case ReviewChanges:
		st := failed(c, r, edgeReview)
		st.Attempt = state.OutcomeRejected
		return st
	case ReviewFailed:
		return failed(c, r, edgeReview)
	case ReviewRejected:
		if r.Skip {
			return Step{Attempt: state.OutcomeRejected, Retry: true, Milestone: state.MilestoneRejected, NextMilestone: true, Next: Implement}
		}
		// The rejected work was judged: a resume works on it again, with
		// the review's notes, rather than asking the review again.
		return Step{Attempt: state.OutcomeRejected, Retry: true, Stop: stopreasons.ReviewRejected, ResumeAt: Implement}
	case Checkpointed:
		return Step{Milestone: state.MilestoneApproved, NextMilestone: true, Next: Implement}
	case Finalized:
		return Step{Stop: stopreasons.Complete, ResumeAt: Finalize}
	case AgentSwitched:
		// The agent's limit, not the work's: the attempt counts for no
		// retry, and the next agent takes the same milestone.
		return Step{Attempt: state.OutcomeSwitched, Next: Implement}
	}
	return stopStep(phase, ev)
}

// stopStep is the row of every event that stops the run where it happened.
// A stop inside implement closes the agent's attempt as stopped; one in
// verify or review leaves the attempt open, so a resume judges that work
// again instead of counting it as never attempted.
func stopStep(phase Phase, ev Event) Step {
	codes := map[Outcome]stopreasons.Code{
		AgentBlocked:     stopreasons.WorkerBlocked,
		AgentTimedOut:    stopreasons.WorkerTimeout,
		AgentStalled:     stopreasons.Stalled,
		AgentRateLimited: stopreasons.WorkerRateLimited,
		AgentAuthFailed:  stopreasons.WorkerAuthFailed,
		AgentCostCap:     stopreasons.BudgetExceeded,
		ScopeViolated:    stopreasons.GuardViolation,
		LockfileChanged:  stopreasons.LockfileViolation,
		VerifyTimedOut:   stopreasons.VerificationTimeout,
	}
	code, ok := codes[ev.Outcome]
	if !ok {
		code = ev.Code
	}
	if code == "" {
		code = stopreasons.InternalError
	}
	st := Step{Stop: code}
	if phase == Implement {
		st.Attempt = state.OutcomeStopped
	}
	return st
}

// passed moves an attempt whose checks passed on to review, or approves it.
func passed(r Rules) Step {
	if r.Review {
		return Step{Next: Review}
	}
	return Step{Attempt: state.OutcomeApproved, Next: Checkpoint}
}

// failed is a failed attempt: retry the milestone, or in skip mode, once
// its failures exceed the retries, mark it failed and go on.
func failed(c Counters, r Rules, edge string) Step {
	st := Step{Attempt: state.OutcomeFailed, Retry: true, Edge: edge, Next: Implement}
	if r.Skip && r.MaxRetries > 0 && c.Retries+1 > r.MaxRetries {
		st.Milestone = state.MilestoneFailed
		st.NextMilestone = true
	}
	return st
}

// follow carries the step's result through the transition: the attempt
// closed, the backward edge taken, the milestone ended, the counters a new
// milestone starts afresh, or the stop.
func (d *Decision) follow(phase Phase, res result, run Run, r Rules) {
	step := Transition(phase, res.Event, d.Counters, r)
	d.Event, d.Step = res.Event, step
	d.ErrEvent, d.ReviewRepeated = res.errEvent, res.reviewRepeated
	if step.Attempt != "" {
		d.closeAttempt(step.Attempt, step.Retry, res.signature, res.errText, run)
	}
	if e := step.Edge; e != "" {
		d.Counters.Edges = addEdge(d.Counters.Edges, e)
		d.Counters.MilestoneEdges = addEdge(d.Counters.MilestoneEdges, e)
	}
	if step.Milestone != "" {
		d.endMilestone(step.Milestone, run)
	}
	if step.NextMilestone {
		d.Counters.Edges = map[string]int{}
		d.Counters.ReviewNotesHash = ""
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
		d.Stop = sp
	}
}

func addEdge(edges map[string]int, e string) map[string]int {
	if edges == nil {
		edges = map[string]int{}
	}
	edges[e]++
	return edges
}

// closeAttempt records the outcome of the milestone's open attempt and
// counts it: retry counts it against the milestone's retries. An attempt
// cut short counts for nothing, one handed to another agent only for the
// timeline.
func (d *Decision) closeAttempt(outcome string, retry bool, signature, errText string, run Run) {
	a := d.Attempt
	if a == nil || a.Outcome != "" {
		return
	}
	a.Outcome, a.ErrorSignature, a.Error = outcome, signature, errText
	switch outcome {
	case state.OutcomeStopped:
		return
	case state.OutcomeSwitched:
		d.Events = append(d.Events, attemptEvent(run.Milestone, a))
		return
	}
	c := &d.Counters
	c.Attempts++
	if outcome == state.OutcomeApproved {
		c.SameError = 0
	}
	if retry {
		c.Retries++
		if signature != "" {
			if signature == c.LastErrorSignature {
				c.SameError++
			} else {
				c.SameError = 1
			}
			c.LastErrorSignature = signature
		}
	}
	if a.Progress || outcome == state.OutcomeApproved {
		c.NoProgress = 0
		c.LastProgressTick = run.Tick
	} else {
		c.NoProgress++
	}
	// The whole attempt: state.json lists only a milestone's last ones.
	d.Events = append(d.Events, attemptEvent(run.Milestone, a))
}

// endMilestone counts the milestone's end: an approved one ends the streak
// of failed and rejected ones, which the others extend.
func (d *Decision) endMilestone(status string, run Run) {
	c := &d.Counters
	switch status {
	case state.MilestoneApproved:
		c.ConsecutiveFails = 0
		d.Events = append(d.Events, state.MilestoneApprovedEvent{Milestone: run.Milestone, Goal: run.Goal})
	case state.MilestoneFailed:
		c.ConsecutiveFails++
		d.Events = append(d.Events, state.MilestoneFailedEvent{Milestone: run.Milestone, Retries: c.Retries})
	case state.MilestoneRejected:
		c.ConsecutiveFails++
	}
}
