package supervisor

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// TestTransitionOutcomeTable has one case per row of DESIGN §2's outcome
// table, and per rule the transition decides itself (the retry limit of
// skip mode); the stop rules of §4 are the evaluator's and are tested there.
func TestTransitionOutcomeTable(t *testing.T) {
	verify := Rules{Verify: true, MaxRetries: 3}
	verifyReview := Rules{Verify: true, Review: true, MaxRetries: 3}
	bare := Rules{MaxRetries: 3}
	skip := Rules{Verify: true, Skip: true, MaxRetries: 3}
	skipReview := Rules{Verify: true, Review: true, Skip: true, MaxRetries: 3}

	tests := []struct {
		row   string
		phase Phase
		ev    Event
		c     Counters
		r     Rules
		want  Step
	}{
		// verify passed (or, with no verify commands, the agent signalled
		// completion), review approved or none: approved, next milestone.
		{"agent succeeded, verify configured: verify next", Implement, Event{Outcome: AgentSucceeded}, Counters{}, verify,
			Step{Next: Verify}},
		{"verify passed, no review: approved", Verify, Event{Outcome: VerifyPassed}, Counters{}, verify,
			Step{Attempt: state.OutcomeApproved, Next: Checkpoint}},
		{"verify passed, review configured: review next", Verify, Event{Outcome: VerifyPassed}, Counters{}, verifyReview,
			Step{Next: Review}},
		{"review approved: approved", Review, Event{Outcome: ReviewApproved}, Counters{}, verifyReview,
			Step{Attempt: state.OutcomeApproved, Next: Checkpoint}},
		{"no verify, agent signalled completion: approved", Implement, Event{Outcome: AgentSucceeded, Done: true}, Counters{}, bare,
			Step{Attempt: state.OutcomeApproved, Next: Checkpoint}},
		{"no verify, agent signalled completion, review configured: review next", Implement, Event{Outcome: AgentSucceeded, Done: true}, Counters{}, Rules{Review: true},
			Step{Next: Review}},
		{"checkpoint: milestone approved, next milestone", Checkpoint, Event{Outcome: Checkpointed}, Counters{}, verify,
			Step{Milestone: state.MilestoneApproved, NextMilestone: true, Next: Implement}},
		{"every milestone approved: complete", Finalize, Event{Outcome: Finalized}, Counters{}, verify,
			Step{Stop: stopreasons.Complete, ResumeAt: Finalize}},

		// the agent's limit resets beyond resume.max_wait, or its program
		// is missing, and a fallback agent is left: switch, same milestone,
		// no retry counted.
		{"agent switched to a fallback: implement again", Implement, Event{Outcome: AgentSwitched}, Counters{Retries: 2}, verify,
			Step{Attempt: state.OutcomeSwitched, Next: Implement}},
		{"agent switched, skip mode at its last retry: no milestone failure", Implement, Event{Outcome: AgentSwitched}, Counters{Retries: 3}, skip,
			Step{Attempt: state.OutcomeSwitched, Next: Implement}},

		// no verify commands, succeeded without the signal: incomplete,
		// another iteration, not a failure.
		{"no verify, no completion signal: incomplete", Implement, Event{Outcome: AgentSucceeded}, Counters{}, bare,
			Step{Attempt: state.OutcomeIncomplete, Next: Implement}},

		// a verify command failed: failed, retry.
		{"verify failed: retry", Verify, Event{Outcome: VerifyFailed}, Counters{Retries: 1}, verify,
			Step{Attempt: state.OutcomeFailed, Retry: true, Edge: edgeVerify, Next: Implement}},
		// verify passed without running the changed lines or any test:
		// failed, retry.
		{"verify untested: retry", Verify, Event{Outcome: VerifyUntested}, Counters{Retries: 1}, verify,
			Step{Attempt: state.OutcomeFailed, Retry: true, Edge: edgeVerify, Next: Implement}},
		// the agent failed: failed, retry.
		{"agent failed: retry", Implement, Event{Outcome: AgentFailed}, Counters{}, verify,
			Step{Attempt: state.OutcomeFailed, Retry: true, Next: Implement}},
		// the review requested changes: rejected, retry.
		{"review requested changes: retry", Review, Event{Outcome: ReviewChanges}, Counters{}, verifyReview,
			Step{Attempt: state.OutcomeRejected, Retry: true, Edge: edgeReview, Next: Implement}},
		// the review rejected: stop review_rejected, a resume implements again.
		{"review rejected: stop", Review, Event{Outcome: ReviewRejected}, Counters{}, verifyReview,
			Step{Attempt: state.OutcomeRejected, Retry: true, Stop: stopreasons.ReviewRejected, ResumeAt: Implement}},
		{"review rejected, skip mode: milestone rejected, go on", Review, Event{Outcome: ReviewRejected}, Counters{}, skipReview,
			Step{Attempt: state.OutcomeRejected, Retry: true, Milestone: state.MilestoneRejected, NextMilestone: true, Next: Implement}},
		// the review failed to run, crashed or timed out: failed, not a
		// request for changes.
		{"review failed: failed attempt, retry", Review, Event{Outcome: ReviewFailed}, Counters{}, verifyReview,
			Step{Attempt: state.OutcomeFailed, Retry: true, Edge: edgeReview, Next: Implement}},

		// the stops that happen when their event happens.
		{"agent blocked", Implement, Event{Outcome: AgentBlocked}, Counters{}, verify,
			Step{Attempt: state.OutcomeStopped, Stop: stopreasons.WorkerBlocked}},
		{"verify timed out: attempt left open", Verify, Event{Outcome: VerifyTimedOut}, Counters{}, verify,
			Step{Stop: stopreasons.VerificationTimeout}},
		{"agent timed out", Implement, Event{Outcome: AgentTimedOut}, Counters{}, verify,
			Step{Attempt: state.OutcomeStopped, Stop: stopreasons.WorkerTimeout}},
		{"agent stalled", Implement, Event{Outcome: AgentStalled}, Counters{}, verify,
			Step{Attempt: state.OutcomeStopped, Stop: stopreasons.Stalled}},
		{"rate limit", Implement, Event{Outcome: AgentRateLimited}, Counters{}, verify,
			Step{Attempt: state.OutcomeStopped, Stop: stopreasons.WorkerRateLimited}},
		{"auth failed", Implement, Event{Outcome: AgentAuthFailed}, Counters{}, verify,
			Step{Attempt: state.OutcomeStopped, Stop: stopreasons.WorkerAuthFailed}},
		{"agent stopped on the cost cap", Implement, Event{Outcome: AgentCostCap}, Counters{}, verify,
			Step{Attempt: state.OutcomeStopped, Stop: stopreasons.BudgetExceeded}},
		{"scope guard", Implement, Event{Outcome: ScopeViolated}, Counters{}, verify,
			Step{Attempt: state.OutcomeStopped, Stop: stopreasons.GuardViolation}},
		{"lockfile guard", Implement, Event{Outcome: LockfileChanged}, Counters{}, verify,
			Step{Attempt: state.OutcomeStopped, Stop: stopreasons.LockfileViolation}},
		{"time budget ran out in implement", Implement, Event{Outcome: Interrupted, Code: stopreasons.Timeout}, Counters{}, verify,
			Step{Attempt: state.OutcomeStopped, Stop: stopreasons.Timeout}},
		{"time budget ran out in verify: attempt left open", Verify, Event{Outcome: Interrupted, Code: stopreasons.Timeout}, Counters{}, verify,
			Step{Stop: stopreasons.Timeout}},
		{"SIGINT in implement", Implement, Event{Outcome: Interrupted, Code: stopreasons.UserStopped}, Counters{}, verify,
			Step{Attempt: state.OutcomeStopped, Stop: stopreasons.UserStopped}},
		{"SIGTERM in review: attempt left open", Review, Event{Outcome: Interrupted, Code: stopreasons.Terminated}, Counters{}, verifyReview,
			Step{Stop: stopreasons.Terminated}},
		{"agent program missing", Implement, Event{Outcome: Fault, Code: stopreasons.WorkerNotFound}, Counters{}, verify,
			Step{Attempt: state.OutcomeStopped, Stop: stopreasons.WorkerNotFound}},
		{"a fault without a code is runr's own", Checkpoint, Event{Outcome: Fault}, Counters{}, verify,
			Step{Stop: stopreasons.InternalError}},

		// max_milestone_retries in skip mode: the failure that exceeds the
		// retries fails the milestone and the run goes on; in stop mode the
		// evaluator stops the run, so the transition only retries.
		{"skip mode, within the retries: retry", Verify, Event{Outcome: VerifyFailed}, Counters{Retries: 2}, skip,
			Step{Attempt: state.OutcomeFailed, Retry: true, Edge: edgeVerify, Next: Implement}},
		{"skip mode, past the retries: milestone failed, go on", Verify, Event{Outcome: VerifyFailed}, Counters{Retries: 3}, skip,
			Step{Attempt: state.OutcomeFailed, Retry: true, Edge: edgeVerify, Milestone: state.MilestoneFailed, NextMilestone: true, Next: Implement}},
		{"skip mode, review changes past the retries: milestone failed", Review, Event{Outcome: ReviewChanges}, Counters{Retries: 3}, skipReview,
			Step{Attempt: state.OutcomeRejected, Retry: true, Edge: edgeReview, Milestone: state.MilestoneFailed, NextMilestone: true, Next: Implement}},
		{"skip mode, unlimited retries (0): retry", Implement, Event{Outcome: AgentFailed}, Counters{Retries: 50}, Rules{Verify: true, Skip: true},
			Step{Attempt: state.OutcomeFailed, Retry: true, Next: Implement}},
		{"stop mode, past the retries: retry, the evaluator stops", Verify, Event{Outcome: VerifyFailed}, Counters{Retries: 3}, verify,
			Step{Attempt: state.OutcomeFailed, Retry: true, Edge: edgeVerify, Next: Implement}},
	}
	for _, tt := range tests {
		t.Run(tt.row, func(t *testing.T) {
			assert.Equal(t, tt.want, Transition(tt.phase, tt.ev, tt.c, tt.r))
		})
	}
}

// TestTransitionEveryOutcomeIsDecided: an outcome added without a row is a
// stop named by the event, never a silent next phase.
func TestTransitionEveryOutcomeIsDecided(t *testing.T) {
	for o := AgentSucceeded; o <= Fault; o++ {
		assert.NotEqual(t, "unknown outcome", o.String(), "outcome %d has no name", o)
		st := Transition(Implement, Event{Outcome: o, Code: stopreasons.InternalError}, Counters{}, Rules{Verify: true})
		assert.True(t, st.Stop != "" || st.Next != "" || st.NextMilestone, "outcome %s decides nothing", o)
		assert.False(t, st.Stop != "" && st.Next != "", "outcome %s both stops and goes on", o)
	}
}
