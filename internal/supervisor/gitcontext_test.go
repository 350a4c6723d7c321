package supervisor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// TestGitContextKeepsTheBudgetDeadline: the git calls of a tick outlive the
// first signal (the run's context cancelled) but not the time budget's
// deadline, nor a second Ctrl+C.
func TestGitContextKeepsTheBudgetDeadline(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	s.deadline = time.Now().Add(time.Hour)
	runCtx, cancelRun := context.WithCancel(context.Background())
	cancelRun()

	gctx, cancel := s.gitContext(runCtx)
	defer cancel()
	require.NoError(t, gctx.Err(), "the first signal does not cut git short")
	d, ok := gctx.Deadline()
	require.True(t, ok, "the budget's deadline bounds git")
	assert.True(t, d.Equal(s.deadline))

	close(s.killNow)
	select {
	case <-gctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a second Ctrl+C did not end the git context")
	}

	s2 := New(Options{})
	gctx2, cancel2 := s2.gitContext(context.Background())
	defer cancel2()
	_, ok = gctx2.Deadline()
	assert.False(t, ok, "no time budget, no deadline")
}

// TestGitFaultAtTheDeadlineIsATimeout: a git call the deadline ended stops
// the run with timeout, not an internal error; any other failure is a fault.
func TestGitFaultAtTheDeadlineIsATimeout(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	s.st = &state.State{Budget: state.Budget{TimeMS: 4000}}
	s.started = time.Now().Add(-5 * time.Second)
	s.deadline = s.started.Add(4 * time.Second)
	r := gitFault(fmt.Errorf("git status (in /x): %w", context.DeadlineExceeded), s.reading(), s.st.Budget)
	require.NotNil(t, r.stop)
	assert.Equal(t, stopreasons.Timeout, r.Event.Code)
	assert.Equal(t, "budget.time", r.stop.Condition)

	r = gitFault(fmt.Errorf("git status: exit status 128"), s.reading(), s.st.Budget)
	assert.Equal(t, Fault, r.Event.Outcome)
}
