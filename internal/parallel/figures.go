package parallel

import (
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
)

// figures are what the stop rules sum over workers: the budget's, the
// circuit breaker's attempts, and the milestones the rates count.
type figures struct {
	cost                       float64
	tokens                     int64
	iterations, ticks, attempt int
	attempted, retried         int
	rejected, failed           int
}

func (f *figures) add(g figures) {
	f.cost += g.cost
	f.tokens += g.tokens
	f.iterations += g.iterations
	f.ticks += g.ticks
	f.attempt += g.attempt
	f.attempted += g.attempted
	f.retried += g.retried
	f.rejected += g.rejected
	f.failed += g.failed
}

// figuresOf are a finished worker run's figures.
func figuresOf(ch *state.State) figures {
	st := ch.Statistics
	return figures{cost: ch.Usage.CostUSD, tokens: ch.Usage.InputTokens + ch.Usage.OutputTokens, iterations: ch.Iteration, ticks: ch.Tick,
		attempt: ch.Counters.Attempts, attempted: st.Attempted, retried: int(st.RetryRate*float64(st.Attempted) + 0.5),
		rejected: st.Rejected, failed: st.Failed}
}

// shared makes worker k's snapshot the run's: its own figures are recorded
// and the other workers' added.
func (c *coordinator) shared(k int) func(*stopconditions.Snapshot) {
	return func(snap *stopconditions.Snapshot) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.live[k] = figures{cost: snap.CostUSD, tokens: snap.Tokens, iterations: snap.Iteration, ticks: snap.Tick, attempt: snap.Attempts,
			attempted: snap.Attempted, retried: snap.Retried, rejected: snap.Rejected, failed: snap.Failed}
		total := c.spent
		for _, f := range c.live {
			total.add(f)
		}
		snap.CostUSD, snap.Tokens, snap.Iteration, snap.Tick, snap.Attempts = total.cost, total.tokens, total.iterations, total.ticks, total.attempt
		// The rates judge every milestone attempted so far; whether this
		// worker's milestone is done stays its own (Finished, Approved).
		snap.Attempted, snap.Retried, snap.Rejected, snap.Failed = total.attempted, total.retried, total.rejected, total.failed
	}
}

// addChild adds what a worker's run of a milestone spent to the run's:
// its usage (the totals and each model's), ticks, agent calls and
// attempts, and to the figures the stop rules judge.
func (c *coordinator) addChild(ch *state.State) {
	c.st.Usage.Merge(ch.Usage)
	c.st.Tick += ch.Tick
	c.st.Iteration += ch.Iteration
	c.st.Counters.Attempts += ch.Counters.Attempts
	c.spent.add(figuresOf(ch))
}

// others is what the run has spent but worker k's own figures: the
// finished workers' and the live ones' as their last step left them. A
// worker's budget check inside a call adds it to its own spend.
func (c *coordinator) others(k int) func() (float64, int64) {
	return func() (float64, int64) {
		c.mu.Lock()
		defer c.mu.Unlock()
		total := c.spent
		for w, f := range c.live {
			if w != k {
				total.add(f)
			}
		}
		return total.cost, total.tokens
	}
}
