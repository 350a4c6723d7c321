package agents

import (
	"fmt"
	"math"
	"strings"
)

// Price is what a model costs, in USD per million tokens.
type Price struct {
	InputPerMTok      float64
	OutputPerMTok     float64
	CacheReadPerMTok  float64
	CacheWritePerMTok float64
}

// Cache reads and writes cost these multiples of the input price unless the
// table says otherwise (agent.price gives only input and output).
const (
	CacheReadFactor  = 0.1
	CacheWriteFactor = 1.25
)

// PriceOf is the price of input and output tokens at in and out USD per
// million, with cache reads at CacheReadFactor and cache writes at
// CacheWriteFactor of the input price: agent.price.
func PriceOf(in, out float64) Price {
	return Price{InputPerMTok: in, OutputPerMTok: out, CacheReadPerMTok: in * CacheReadFactor, CacheWritePerMTok: in * CacheWriteFactor}
}

// Zero reports whether p prices nothing.
func (p Price) Zero() bool { return p.InputPerMTok <= 0 && p.OutputPerMTok <= 0 }

// Cost is what usage u costs at price p, in USD.
func (p Price) Cost(u Usage) float64 {
	c := (float64(u.InputTokens)*p.InputPerMTok + float64(u.OutputTokens)*p.OutputPerMTok +
		float64(u.CacheReadTokens)*p.CacheReadPerMTok + float64(u.CacheWriteTokens)*p.CacheWritePerMTok) / 1e6
	if !(c >= 0) || math.IsInf(c, 0) {
		return 0
	}
	return c
}

// PricesTakenOn is when the default prices below were taken from the
// providers' published list prices. They go stale: agent.price overrides
// them.
const PricesTakenOn = "2025-11"

// ModelPrice is one row of runr's default price table: the model names it
// covers and their price.
type ModelPrice struct {
	// Names are model names or name prefixes: a model matches a name it
	// equals or that it starts with followed by -, ., @ or : (so
	// claude-sonnet-4 covers claude-sonnet-4-5-20250929); the longest
	// matching name wins.
	Names []string
	Price Price
	Note  string
}

// anthropic is a Claude model's price: cache reads 0.1x, 5-minute cache
// writes 1.25x of the input price.
func anthropic(in, out float64) Price { return PriceOf(in, out) }

// noCacheWrite is a price whose provider charges no extra for writing the
// cache (OpenAI, Google, Alibaba): a cache write costs an input token.
func noCacheWrite(in, out, cacheRead float64) Price {
	return Price{InputPerMTok: in, OutputPerMTok: out, CacheReadPerMTok: cacheRead, CacheWritePerMTok: in}
}

// priceTable is the default price of the current models of the CLIs runr
// drives, used when agent.price is 0. Prompts longer than a provider's
// first tier (Sonnet and Gemini Pro above 200K tokens, Qwen above 32K) cost
// more than this table says.
var priceTable = []ModelPrice{
	{Names: []string{"claude-opus-4-5", "opus"}, Price: anthropic(5, 25), Note: "Claude Opus 4.5; `opus` in Claude Code"},
	{Names: []string{"claude-opus-4", "claude-opus-4-1"}, Price: anthropic(15, 75), Note: "Claude Opus 4 and 4.1"},
	{Names: []string{"claude-sonnet-4", "sonnet"}, Price: anthropic(3, 15), Note: "Claude Sonnet 4 and 4.5, prompts up to 200K tokens"},
	{Names: []string{"claude-haiku-4-5", "haiku"}, Price: anthropic(1, 5), Note: "Claude Haiku 4.5"},
	{Names: []string{"claude-3-5-haiku"}, Price: anthropic(0.8, 4), Note: "Claude Haiku 3.5"},
	{Names: []string{"gpt-5", "gpt-5-codex", "gpt-5.1", "gpt-5.1-codex", "gpt-5.1-codex-max"}, Price: noCacheWrite(1.25, 10, 0.125), Note: "GPT-5, GPT-5.1 and their Codex models"},
	{Names: []string{"gpt-5-mini", "gpt-5.1-codex-mini"}, Price: noCacheWrite(0.25, 2, 0.025), Note: "GPT-5 mini, GPT-5.1-Codex-Mini"},
	{Names: []string{"gpt-5-nano"}, Price: noCacheWrite(0.05, 0.4, 0.005), Note: "GPT-5 nano"},
	{Names: []string{"codex-mini-latest"}, Price: noCacheWrite(1.5, 6, 0.375), Note: "codex-mini-latest"},
	{Names: []string{"gemini-3-pro"}, Price: noCacheWrite(2, 12, 0.2), Note: "Gemini 3 Pro (preview), prompts up to 200K tokens"},
	{Names: []string{"gemini-2.5-pro"}, Price: noCacheWrite(1.25, 10, 0.125), Note: "Gemini 2.5 Pro, prompts up to 200K tokens"},
	{Names: []string{"gemini-2.5-flash"}, Price: noCacheWrite(0.3, 2.5, 0.03), Note: "Gemini 2.5 Flash"},
	{Names: []string{"gemini-2.5-flash-lite"}, Price: noCacheWrite(0.1, 0.4, 0.01), Note: "Gemini 2.5 Flash-Lite"},
	{Names: []string{"qwen3-coder-plus"}, Price: noCacheWrite(1, 5, 0.1), Note: "Qwen3-Coder-Plus (Alibaba Cloud Model Studio), prompts up to 32K tokens"},
	{Names: []string{"qwen3-coder-flash"}, Price: noCacheWrite(0.3, 1.5, 0.03), Note: "Qwen3-Coder-Flash, prompts up to 32K tokens"},
}

// PriceTable is runr's default price table, in the order docs show it.
func PriceTable() []ModelPrice { return priceTable }

// normalizeModel makes a model name as a CLI or a user writes it
// comparable with the table: lower case, without a provider prefix
// (anthropic/claude-sonnet-4-5, openrouter/openai/gpt-5) or a bracketed
// variant (sonnet[1m]).
func normalizeModel(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	if i := strings.IndexByte(m, '['); i >= 0 {
		m = m[:i]
	}
	return m
}

// TablePrice returns the default price of model, and whether the table has
// it.
func TablePrice(model string) (Price, bool) {
	m := normalizeModel(model)
	if m == "" {
		return Price{}, false
	}
	best, found := -1, Price{}
	for _, row := range priceTable {
		for _, n := range row.Names {
			if len(n) <= best {
				continue
			}
			if m == n || (strings.HasPrefix(m, n) && strings.ContainsRune("-.@:", rune(m[len(n)]))) {
				best, found = len(n), row.Price
			}
		}
	}
	return found, best >= 0
}

// Priced reports whether runr can put a price on a call: agent.price (in
// and out USD per million tokens) is set, or the table has agent.model.
func Priced(in, out float64, model string) bool {
	if in > 0 || out > 0 {
		return true
	}
	_, ok := TablePrice(model)
	return ok
}

// Billable is usage u of an agent of kind as a price applies to it: input
// tokens without the cache reads a CLI counts among them
// (Adapter.InputHoldsCacheReads), so that a cache read is priced once, at
// the cache-read price.
func Billable(kind string, u Usage) Usage {
	if a, ok := lookup(kind); ok && a.InputHoldsCacheReads() {
		u.InputTokens = max(u.InputTokens-u.CacheReadTokens, 0)
	}
	return u
}

// CostSource says where a call's cost came from (DESIGN §12).
type CostSource string

// Cost sources.
const (
	CostReported  CostSource = "reported"  // the CLI said what the call cost
	CostEstimated CostSource = "estimated" // from tokens and a price
	CostUnknown   CostSource = "unknown"   // no figure and no price
)

// CallCost is what usage u cost: the CLI's own figure when it gave one,
// else an estimate at configured (agent.price, when not zero) or at the
// table's price for the model u names, else for model (agent.model).
func CallCost(u Usage, configured Price, model string) (float64, CostSource) {
	if u.CostKnown {
		return u.CostUSD, CostReported
	}
	if !configured.Zero() {
		return configured.Cost(u), CostEstimated
	}
	for _, m := range []string{u.Model, model} {
		if p, ok := TablePrice(m); ok {
			return p.Cost(u), CostEstimated
		}
	}
	return 0, CostUnknown
}

// PriceTableMarkdown is the table as docs/agents.md shows it.
func PriceTableMarkdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Prices in USD per million tokens, taken from the providers' list prices in %s.\n\n", PricesTakenOn)
	b.WriteString("| models | input | output | cache read | cache write | notes |\n|---|---|---|---|---|---|\n")
	usd := func(v float64) string {
		return "$" + strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", v), "0"), ".")
	}
	for _, row := range priceTable {
		names := make([]string, len(row.Names))
		for i, n := range row.Names {
			names[i] = "`" + n + "`"
		}
		p := row.Price
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", strings.Join(names, ", "),
			usd(p.InputPerMTok), usd(p.OutputPerMTok), usd(p.CacheReadPerMTok), usd(p.CacheWritePerMTok), row.Note)
	}
	return b.String()
}
