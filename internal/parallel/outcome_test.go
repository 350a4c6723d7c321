package parallel

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/supervisor"
)

// skipRun is a coordinator of a skip-mode run of three milestones, worker 1
// busy on milestone 1.
func skipRun(t *testing.T) *coordinator {
	t.Helper()
	store, err := state.Open(t.TempDir())
	require.NoError(t, err)
	prompt := "# T\n- [ ] one\n- [ ] two\n- [ ] three\n"
	st := &state.State{RunID: "r1", Task: state.Task{Prompt: prompt}, Milestones: supervisor.Milestones(prompt),
		Parallel: &state.Parallel{Workers: 2}}
	cfg := &config.Config{Stop: stopconditions.DefaultRules()}
	cfg.Stop.OnMilestoneFailure = stopconditions.OnFailureSkip
	c := newCoordinator(supervisor.Options{Store: store, Config: cfg, Now: time.Now, Progress: func(supervisor.Progress) {}}, st)
	st.Milestones[0].Status = state.MilestoneInProgress
	c.slots[0].busy = true
	return c
}

func report(code stopreasons.Code) finished {
	child := &state.State{RunID: "w1-run", StopReason: state.NewStopReason(code, 0, "the worker stopped")}
	return finished{worker: 1, job: job{milestone: 1}, child: child}
}

// In skip mode a worker's stop on its milestone alone marks the milestone
// failed and the run goes on; retries, same_error, noop, no_progress and
// phase_loop are per milestone in a parallel run (DESIGN §11).
func TestSkipModePassesOverAMilestonesOwnFailure(t *testing.T) {
	for _, code := range []stopreasons.Code{stopreasons.VerificationFailed, stopreasons.WorkerFailed, stopreasons.SameErrorRepeated,
		stopreasons.NoopStreak, stopreasons.NoProgress, stopreasons.PhaseLoop, stopreasons.ReviewLoopDetected} {
		c := skipRun(t)
		assert.Nil(t, c.handle(context.Background(), report(code), false), code)
		assert.Equal(t, state.MilestoneFailed, c.st.Milestones[0].Status, code)
		require.NotNil(t, c.lastFail, code)
		assert.Equal(t, code, c.lastFail.Code)
	}
}

// The stops of DESIGN §2's outcome table stop the run in skip mode too, as
// in a sequential run: an agent that says it is blocked waits for a person,
// and a verify command past verify.timeout would time out on every
// milestone. Before, a parallel run marked the milestone failed, never to
// be tried again on resume, and went on.
func TestSkipModeStopsTheRunOnAnOutcomeTableStop(t *testing.T) {
	for _, code := range []stopreasons.Code{stopreasons.WorkerBlocked, stopreasons.VerificationTimeout, stopreasons.WorkerTimeout,
		stopreasons.GuardViolation, stopreasons.BudgetExceeded, stopreasons.CircuitBreaker} {
		c := skipRun(t)
		sp := c.handle(context.Background(), report(code), false)
		require.NotNil(t, sp, code)
		assert.Equal(t, code, sp.Code)
		assert.Equal(t, 1, sp.Details.Milestone, code)
		assert.Equal(t, state.MilestonePending, c.st.Milestones[0].Status, code)
		assert.Nil(t, c.lastFail, code)
	}
}

// stop.max_consecutive_fails counts the milestones failed in a row over
// every worker, and stops the run as the rule does in a sequential run.
func TestFailedInARowStopsAtTheRulesLimit(t *testing.T) {
	c := skipRun(t)
	c.cfg.Stop.MaxConsecutiveFails = 2
	require.Nil(t, c.handle(context.Background(), report(stopreasons.VerificationFailed), false))
	c.slots[0].busy = true
	second := report(stopreasons.SameErrorRepeated)
	second.job.milestone = 2
	sp := c.handle(context.Background(), second, false)
	require.NotNil(t, sp)
	assert.Equal(t, stopreasons.Stop{Code: stopreasons.ConsecutiveFails, Condition: "max_consecutive_fails", Value: 2, Threshold: 2,
		Message: "2 milestones failed in a row across the workers (stop.max_consecutive_fails 2), the last milestone 2",
		Details: &stopreasons.StopDetails{Milestone: 2, MilestoneGoal: "two"}}, *sp)
	assert.Equal(t, 2, c.st.Counters.ConsecutiveFails)

	// An approved milestone starts the count again.
	c.approve(3, "abc", 1)
	assert.Equal(t, 0, c.st.Counters.ConsecutiveFails)
}
