package agents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPriceOfAppliesCacheFactors(t *testing.T) {
	p := PriceOf(3, 15)
	samePrice(t, Price{InputPerMTok: 3, OutputPerMTok: 15, CacheReadPerMTok: 0.3, CacheWritePerMTok: 3.75}, p, "agent.price 3/15")
	// 1M input $3, 0.5M output $7.5, 2M cache reads $0.6, 0.4M cache writes $1.5.
	u := Usage{InputTokens: 1_000_000, OutputTokens: 500_000, CacheReadTokens: 2_000_000, CacheWriteTokens: 400_000}
	assert.InDelta(t, 3+7.5+0.6+1.5, p.Cost(u), 1e-9)
	assert.Equal(t, 0.0, Price{}.Cost(u))
	assert.True(t, Price{}.Zero())
}

func samePrice(t *testing.T, want, got Price, what string) {
	t.Helper()
	for _, f := range [][2]float64{{want.InputPerMTok, got.InputPerMTok}, {want.OutputPerMTok, got.OutputPerMTok},
		{want.CacheReadPerMTok, got.CacheReadPerMTok}, {want.CacheWritePerMTok, got.CacheWritePerMTok}} {
		assert.InDelta(t, f[0], f[1], 1e-12, "%s: want %+v, got %+v", what, want, got)
	}
}

func TestTablePrice(t *testing.T) {
	tests := []struct {
		model   string
		in, out float64
		read    float64
		write   float64
	}{
		{"claude-sonnet-4-5-20250929", 3, 15, 0.3, 3.75},
		{"claude-sonnet-4-20250514", 3, 15, 0.3, 3.75},
		{"sonnet", 3, 15, 0.3, 3.75},
		{"sonnet[1m]", 3, 15, 0.3, 3.75},
		{"anthropic/claude-sonnet-4-5", 3, 15, 0.3, 3.75},
		{"claude-opus-4-5-20251101", 5, 25, 0.5, 6.25},
		{"opus", 5, 25, 0.5, 6.25},
		{"claude-opus-4-1-20250805", 15, 75, 1.5, 18.75},
		{"claude-haiku-4-5", 1, 5, 0.1, 1.25},
		{"Claude-Haiku-4-5", 1, 5, 0.1, 1.25},
		{"gpt-5", 1.25, 10, 0.125, 1.25},
		{"gpt-5-codex", 1.25, 10, 0.125, 1.25},
		{"gpt-5.1-codex-max", 1.25, 10, 0.125, 1.25},
		{"gpt-5-mini", 0.25, 2, 0.025, 0.25},
		{"gpt-5.1-codex-mini", 0.25, 2, 0.025, 0.25},
		{"gpt-5-nano-2025-08-07", 0.05, 0.4, 0.005, 0.05},
		{"gemini-2.5-pro", 1.25, 10, 0.125, 1.25},
		{"gemini-2.5-flash", 0.3, 2.5, 0.03, 0.3},
		{"gemini-2.5-flash-lite", 0.1, 0.4, 0.01, 0.1},
		{"qwen3-coder-plus", 1, 5, 0.1, 1},
	}
	for _, tc := range tests {
		p, ok := TablePrice(tc.model)
		require.True(t, ok, tc.model)
		samePrice(t, Price{InputPerMTok: tc.in, OutputPerMTok: tc.out, CacheReadPerMTok: tc.read, CacheWritePerMTok: tc.write}, p, tc.model)
	}
	for _, model := range []string{"", "gpt-50", "claude-opus-5-5", "sonnetx", "my-model", "gpt-4o"} {
		_, ok := TablePrice(model)
		assert.False(t, ok, "%q is not in the table", model)
	}
}

func TestCallCost(t *testing.T) {
	u := Usage{InputTokens: 200_000, OutputTokens: 10_000, CacheReadTokens: 1_000_000, CacheWriteTokens: 100_000, Model: "claude-sonnet-4-5"}

	// Reported cost wins over any price.
	r := u
	r.CostUSD, r.CostKnown = 0.42, true
	c, src := CallCost(r, PriceOf(100, 100), "gpt-5")
	assert.Equal(t, 0.42, c)
	assert.Equal(t, CostReported, src)

	// agent.price, with the cache factors: 0.2*2 + 0.01*8 + 1*0.2 + 0.1*2.5.
	c, src = CallCost(u, PriceOf(2, 8), "")
	assert.InDelta(t, 0.4+0.08+0.2+0.25, c, 1e-9)
	assert.Equal(t, CostEstimated, src)

	// The table for the model the output named: sonnet 0.2*3 + 0.01*15 + 1*0.3 + 0.1*3.75.
	c, src = CallCost(u, Price{}, "gpt-5")
	assert.InDelta(t, 0.6+0.15+0.3+0.375, c, 1e-9)
	assert.Equal(t, CostEstimated, src)

	// Else the table for agent.model (gpt-5: no cache write surcharge).
	n := u
	n.Model = ""
	c, src = CallCost(n, Price{}, "gpt-5")
	assert.InDelta(t, 0.2*1.25+0.01*10+1*0.125+0.1*1.25, c, 1e-9)
	assert.Equal(t, CostEstimated, src)

	// Else nothing is known.
	c, src = CallCost(n, Price{}, "my-model")
	assert.Equal(t, 0.0, c)
	assert.Equal(t, CostUnknown, src)
}

// The price table in docs/agents.md is the Go table's: a change to one
// without the other fails here.
func TestDocsPriceTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "agents.md"))
	require.NoError(t, err)
	const begin, end = "<!-- price-table:begin (generated from internal/agents/price.go) -->\n", "<!-- price-table:end -->"
	doc := string(data)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	require.True(t, i >= 0 && j > i, "docs/agents.md holds the price table between %q and %q", begin, end)
	assert.Equal(t, PriceTableMarkdown(), doc[i+len(begin):j],
		"docs/agents.md's price table differs from internal/agents/price.go: paste PriceTableMarkdown()'s output between the markers")
}

func TestBillableTakesCacheReadsOutOfInput(t *testing.T) {
	u := Usage{InputTokens: 1_000_000, CacheReadTokens: 800_000, OutputTokens: 10}
	// codex and gemini count cache reads inside input: priced once, at the
	// cache-read price.
	for _, kind := range []string{"codex", "gemini"} {
		b := Billable(kind, u)
		assert.Equal(t, int64(200_000), b.InputTokens, kind)
		assert.Equal(t, int64(800_000), b.CacheReadTokens, kind)
		c, _ := CallCost(b, Price{}, "gpt-5")
		assert.InDelta(t, 0.2*1.25+0.8*0.125+10*10/1e6, c, 1e-9, kind)
	}
	// claude counts them apart.
	assert.Equal(t, u, Billable("claude", u))
	assert.Equal(t, u, Billable("command", u))
	// Never below zero, whatever a CLI printed.
	assert.Equal(t, int64(0), Billable("codex", Usage{InputTokens: 5, CacheReadTokens: 9}).InputTokens)
}
