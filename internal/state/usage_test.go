package state

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCallCostCountsItsSource(t *testing.T) {
	for _, c := range []struct {
		call Call
		want float64
	}{
		{Call{CostReportedUSD: 0.5, CostEstimatedUSD: 0.4, CostSource: CostReported}, 0.5},
		{Call{CostEstimatedUSD: 0.4, CostSource: CostEstimated}, 0.4},
		{Call{CostSource: CostUnknown}, 0},
	} {
		assert.Equal(t, c.want, c.call.CostUSD(), "%+v", c.call)
	}
}

func TestAddCallSumsPerModel(t *testing.T) {
	var u Usage
	u.AddCall(Call{Agent: "claude", Model: "claude-sonnet-4-5", InputTokens: 100, CacheReadTokens: 1000, CacheWriteTokens: 10, OutputTokens: 50,
		CostReportedUSD: 0.5, CostEstimatedUSD: 0.375, CostSource: CostReported})
	u.AddCall(Call{Agent: "claude", Model: "claude-sonnet-4-5", InputTokens: 200, OutputTokens: 70, CostEstimatedUSD: 0.25, CostSource: CostEstimated})
	u.AddCall(Call{Agent: "command", InputTokens: 5, OutputTokens: 6, CostSource: CostUnknown})

	assert.Equal(t, int64(305), u.InputTokens)
	assert.Equal(t, int64(126), u.OutputTokens)
	assert.Equal(t, int64(1000), u.CacheReadTokens)
	assert.Equal(t, int64(10), u.CacheWriteTokens)
	assert.Equal(t, 0.75, u.CostUSD, "the reported cost of the first call, the estimate of the second")
	assert.True(t, u.CostEstimated)
	assert.Equal(t, "command", u.Agent, "the agent of the latest call")
	require.Len(t, u.Models, 2)
	assert.Equal(t, ModelUsage{Calls: 2, InputTokens: 300, CacheReadTokens: 1000, CacheWriteTokens: 10, OutputTokens: 120,
		CostUSD: 0.75, CostEstimatedUSD: 0.625, CostSource: CostMixed}, *u.Models["claude-sonnet-4-5"])
	assert.Equal(t, ModelUsage{Calls: 1, InputTokens: 5, OutputTokens: 6, CostSource: CostUnknown}, *u.Models[ModelNone])
}

// An agent that names a new model on every call leaves at most MaxModels
// entries and the rest summed up under ModelOther; a long name is cut.
func TestUsageModelsAreBounded(t *testing.T) {
	var u Usage
	for i := range 100 {
		u.AddCall(Call{Model: fmt.Sprintf("model-%d", i), InputTokens: 1, CostSource: CostUnknown})
	}
	u.AddCall(Call{Model: strings.Repeat("x", 10000), InputTokens: 1, CostSource: CostUnknown})
	assert.Len(t, u.Models, MaxModels+1)
	assert.Equal(t, 100+1-MaxModels, u.Models[ModelOther].Calls)
	total := 0
	for k, m := range u.Models {
		assert.LessOrEqual(t, len(k), MaxModelBytes)
		total += m.Calls
	}
	assert.Equal(t, 101, total)
	assert.Equal(t, "", u.impossibleUsage())
	assert.Equal(t, ModelKey(strings.Repeat("y", 500)), ModelKey(strings.Repeat("y", 600)))
}

func TestImpossibleUsageModels(t *testing.T) {
	for _, c := range []struct {
		models map[string]*ModelUsage
		want   string
	}{
		{map[string]*ModelUsage{"m": {Calls: -1}}, "calls -1 is negative"},
		{map[string]*ModelUsage{"m": {Calls: 1, OutputTokens: -3, CostSource: CostReported}}, "output_tokens -3"},
		{map[string]*ModelUsage{"m": {Calls: 1, CostUSD: -1, CostSource: CostReported}}, "cost_usd -1"},
		{map[string]*ModelUsage{"m": {Calls: 1, CostSource: "free"}}, `cost_source "free"`},
		{map[string]*ModelUsage{"m": nil}, "is null"},
		{map[string]*ModelUsage{strings.Repeat("m", MaxModelBytes+1): {}}, "a model name of"},
	} {
		u := Usage{Models: c.models}
		assert.Contains(t, u.impossibleUsage(), c.want)
	}
	many := map[string]*ModelUsage{}
	for i := range MaxModels + 2 {
		many[fmt.Sprint(i)] = &ModelUsage{}
	}
	assert.Contains(t, (&Usage{Models: many}).impossibleUsage(), "more than")
}

// Merge sums another run's usage into u, its models' totals included (a
// parallel run's workers' runs).
func TestUsageMerge(t *testing.T) {
	var a, b Usage
	a.AddCall(Call{Agent: "claude", Model: "opus", InputTokens: 10, OutputTokens: 2, CacheReadTokens: 5, CostReportedUSD: 0.5, CostSource: CostReported})
	b.AddCall(Call{Agent: "claude", Model: "opus", InputTokens: 20, OutputTokens: 4, CostReportedUSD: 1, CostSource: CostReported})
	b.AddCall(Call{Agent: "command", Model: "m2", InputTokens: 7, OutputTokens: 1, CostEstimatedUSD: 0.25, CostSource: CostEstimated})
	var run Usage
	run.Merge(a)
	run.Merge(b)
	assert.Equal(t, int64(37), run.InputTokens)
	assert.Equal(t, int64(7), run.OutputTokens)
	assert.Equal(t, int64(5), run.CacheReadTokens)
	assert.InDelta(t, 1.75, run.CostUSD, 1e-9)
	assert.True(t, run.CostEstimated)
	require.Len(t, run.Models, 2)
	assert.Equal(t, 2, run.Models["opus"].Calls)
	assert.Equal(t, int64(30), run.Models["opus"].InputTokens)
	assert.InDelta(t, 1.5, run.Models["opus"].CostUSD, 1e-9)
	assert.Equal(t, CostReported, run.Models["opus"].CostSource)
	assert.Equal(t, 1, run.Models["m2"].Calls)
}
