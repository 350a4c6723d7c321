package supervisor

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// A command agent's RUNR_USAGE lines stop its call on the line that brings
// the spend to budget.max_cost_usd; the agent never ends by itself. While
// the call ran, state.json held its usage so far (written from the
// goroutine that reads the output: run with -race).
func TestSpendStopsTheCallOnTheLineThatReachesTheBudget(t *testing.T) {
	r := newRun(t, "# T\n- [ ] one\n")
	seen := filepath.Join(r.bin, "seen")
	// Between the usage lines the agent waits for state.json to hold the
	// call's usage and copies it, so the test sees what a crash at that
	// moment would have left.
	r.agent(`echo "RUNR_USAGE: input_tokens=100 output_tokens=10 cost_usd=0.40"
until grep -q '"cost_source"' "$RUNR_RUN_DIR/state.json"; do sleep 0.05; done
cp "$RUNR_RUN_DIR/state.json" "` + seen + `"
echo "RUNR_USAGE: input_tokens=300 output_tokens=30 cost_usd=1.10"
exec sleep 300
`)
	r.set("budget.max_cost_usd", 1.0)
	st := r.start()
	require.NotNil(t, st.StopReason)
	assert.Equal(t, stopreasons.BudgetExceeded, st.StopReason.Code)
	assert.Equal(t, "budget.max_cost_usd", st.StopReason.Condition)
	assert.Contains(t, st.StopReason.Message, "mid-call")
	assert.InDelta(t, 1.10, st.Usage.CostUSD, 1e-9)
	assert.Equal(t, int64(300), st.Usage.InputTokens)
	assert.Nil(t, st.AgentProcess)
	assert.Equal(t, state.OutcomeStopped, st.Milestones[0].Attempts[0].Outcome)

	mid, err := state.LoadFile(seen)
	require.NoError(t, err)
	require.NotNil(t, mid.AgentProcess)
	require.NotNil(t, mid.AgentProcess.Usage, "the call's usage so far is in state.json while it runs")
	assert.Equal(t, int64(100), mid.AgentProcess.Usage.InputTokens)
	assert.InDelta(t, 0.40, mid.AgentProcess.Usage.CostUSD, 1e-9)
	assert.Equal(t, "reported", mid.AgentProcess.Usage.CostSource)
	assert.Equal(t, 0.0, mid.Usage.CostUSD, "the run's usage counts the call when it ends")
}

func TestRecoverCallUsage(t *testing.T) {
	st := &state.State{Usage: state.Usage{CostUSD: 1, InputTokens: 10, OutputTokens: 1}}
	_, ok := recoverCallUsage(st, "claude")
	assert.False(t, ok, "no process, nothing to add")
	start := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	st.AgentProcess = &state.Process{PID: 1, StartedAt: start}
	st.UpdatedAt = start.Add(3 * time.Second)
	_, ok = recoverCallUsage(st, "claude")
	assert.False(t, ok, "a process without usage adds nothing")
	st.AgentProcess.Usage = &state.CallUsage{InputTokens: 5, OutputTokens: 2, CacheReadTokens: 7, CostUSD: 0.5, CostSource: "estimated", Model: "claude-sonnet-4-5"}
	call, ok := recoverCallUsage(st, "claude")
	require.True(t, ok)
	assert.Equal(t, state.Call{Agent: "claude", Model: "claude-sonnet-4-5", InputTokens: 5, OutputTokens: 2, CacheReadTokens: 7,
		CostEstimatedUSD: 0.5, CostSource: "estimated", DurationMS: 3000}, call)
	assert.InDelta(t, 1.5, st.Usage.CostUSD, 1e-9)
	assert.True(t, st.Usage.CostEstimated)
	assert.Equal(t, int64(15), st.Usage.InputTokens)
	assert.Equal(t, int64(3), st.Usage.OutputTokens)
	assert.Equal(t, int64(7), st.Usage.CacheReadTokens, "cache tokens count too")
	require.Contains(t, st.Usage.Models, "claude-sonnet-4-5", "the model's totals have the call")
	assert.Equal(t, 1, st.Usage.Models["claude-sonnet-4-5"].Calls)
	assert.Nil(t, st.AgentProcess.Usage, "counted once")
	_, ok = recoverCallUsage(st, "claude")
	assert.False(t, ok)
}

// A change of the usage less than a second after the last write is written
// when the second is over, though the agent prints nothing more: the agent
// here waits for state.json to hold it before it goes on.
func TestSpendWritesALateChangeWhenTheSecondIsOver(t *testing.T) {
	r := newRun(t, "# T\n- [ ] one\n")
	r.agent(`echo "RUNR_USAGE: input_tokens=100 output_tokens=10"
echo "RUNR_USAGE: input_tokens=250 output_tokens=20"
until grep -Eq '"input_tokens": ?250' "$RUNR_RUN_DIR/state.json"; do sleep 0.05; done
echo "RUNR_STATUS: done"
`)
	r.set("agent.timeout", "30s")
	st := r.start()
	require.NotNil(t, st.StopReason)
	assert.Equal(t, stopreasons.Complete, st.StopReason.Code, "%s", st.StopReason.Message)
	assert.Equal(t, int64(250), st.Usage.InputTokens)
	assert.Equal(t, int64(20), st.Usage.OutputTokens)
}

// Token counts at the int64 limit do not wrap to a negative total that no
// token budget reaches: the call is stopped, and the run's totals stay
// positive.
func TestSpendHugeTokenCountsStopTheCall(t *testing.T) {
	r := newRun(t, "# T\n- [ ] one\n")
	r.agent(`echo "RUNR_USAGE: input_tokens=9223372036854775807 output_tokens=9223372036854775807"
exec sleep 300
`)
	r.set("budget.max_tokens", 1000)
	r.set("agent.timeout", "30s")
	st := r.start()
	require.NotNil(t, st.StopReason)
	assert.Equal(t, stopreasons.BudgetExceeded, st.StopReason.Code, "%s", st.StopReason.Message)
	assert.Equal(t, "budget.max_tokens", st.StopReason.Condition)
	assert.Positive(t, st.Usage.InputTokens+st.Usage.OutputTokens)
}

// A RUNR_USAGE line with lower totals than an earlier one does not lower
// the call's spend: the run counts the highest.
func TestSpendALowerUsageLineDoesNotLowerTheSpend(t *testing.T) {
	r := newRun(t, "# T\n- [ ] one\n")
	r.agent(`echo "RUNR_USAGE: input_tokens=900 output_tokens=90 cost_usd=0.90"
echo "RUNR_USAGE: input_tokens=1 output_tokens=1 cost_usd=0.01"
echo "RUNR_STATUS: done"
`)
	r.set("budget.max_cost_usd", 5.0)
	st := r.start()
	require.NotNil(t, st.StopReason)
	assert.InDelta(t, 0.90, st.Usage.CostUSD, 1e-9)
	assert.Equal(t, int64(900), st.Usage.InputTokens)
}

// A worker of a parallel run stops its call on the run's budget: what the
// other workers spent counts beside its own.
func TestSpendCountsTheOtherWorkers(t *testing.T) {
	a, err := agents.Lookup("command")
	require.NoError(t, err)
	for _, tc := range []struct {
		name        string
		otherCost   float64
		otherTokens int64
		maxCost     float64
		maxTokens   int64
		want        string
	}{
		{"cost", 0.7, 0, 1.0, 0, "budget.max_cost_usd"},
		{"tokens", 0, 900, 0, 1000, "budget.max_tokens"},
		{"under both", 0.1, 100, 1.0, 1000, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{Agent: config.Agent{Kind: "command"}}
			s := New(Options{Config: cfg, Single: &Single{Others: func() (float64, int64) { return tc.otherCost, tc.otherTokens }}})
			s.st = &state.State{Budget: state.Budget{MaxCostUSD: tc.maxCost, MaxTokens: tc.maxTokens}}
			p := a.NewParser(agents.Request{Prompt: "task", Command: []string{"agent"}})
			w := s.watchSpend(p)
			require.NotNil(t, w)
			p.Line([]byte("RUNR_USAGE: input_tokens=150 output_tokens=50 cost_usd=0.40"))
			assert.Equal(t, tc.want == "", w.line())
			assert.Equal(t, tc.want, w.exceeded)

			// The same call alone stays under the budget.
			s.o.Single = nil
			p = a.NewParser(agents.Request{Prompt: "task", Command: []string{"agent"}})
			w = s.watchSpend(p)
			p.Line([]byte("RUNR_USAGE: input_tokens=150 output_tokens=50 cost_usd=0.40"))
			assert.True(t, w.line())
		})
	}
}
