package parallel

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
)

// The stop rules of each worker judge the run: the figures of the runs that
// finished and of the other workers at work are added to its own, which are
// recorded for them in turn; whether its own milestone is done stays its own.
func TestSharedSnapshotSumsTheWorkers(t *testing.T) {
	c := &coordinator{live: map[int]figures{}}
	c.spent.add(figuresOf(&state.State{Usage: state.Usage{CostUSD: 0.5, InputTokens: 100, OutputTokens: 50}, Iteration: 2, Tick: 6,
		Counters:   state.Counters{Attempts: 2},
		Statistics: state.Statistics{Attempted: 1, RetryRate: 1, Failed: 1}}))

	one := &stopconditions.Snapshot{CostUSD: 0.25, Tokens: 10, Iteration: 1, Tick: 3, Attempts: 1, Attempted: 1, Finished: true, Approved: 3, TotalMilestones: 3}
	c.shared(1)(one)
	assert.Equal(t, 0.75, one.CostUSD)
	assert.Equal(t, int64(160), one.Tokens)
	assert.Equal(t, 3, one.Iteration)
	assert.Equal(t, 9, one.Tick)
	assert.Equal(t, 3, one.Attempts)
	assert.Equal(t, 2, one.Attempted)
	assert.Equal(t, 1, one.Retried)
	assert.Equal(t, 1, one.Failed)
	assert.True(t, one.Finished)
	assert.Equal(t, 3, one.Approved, "approval is the worker's own")

	two := &stopconditions.Snapshot{CostUSD: 0.5, Tokens: 20, Iteration: 1, Tick: 1, Attempts: 1, Attempted: 1, Rejected: 1}
	c.shared(2)(two)
	assert.Equal(t, 1.25, two.CostUSD, "finished 0.5 + worker 1's 0.25 + its own 0.5")
	assert.Equal(t, int64(180), two.Tokens)
	assert.Equal(t, 3, two.Attempted)
	assert.Equal(t, 1, two.Rejected)

	// Worker 1's next look replaces its own figures, never adds them twice.
	again := &stopconditions.Snapshot{CostUSD: 0.3}
	c.shared(1)(again)
	assert.InDelta(t, 1.3, again.CostUSD, 1e-9)
}
