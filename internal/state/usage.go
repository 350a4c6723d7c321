package state

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// Cost sources of a call (DESIGN §12), and of a model's total: the source
// of all its calls, or CostMixed when they differ.
const (
	CostReported  = "reported"  // the CLI said what the call cost
	CostEstimated = "estimated" // from the tokens and a price
	CostUnknown   = "unknown"   // no figure and no price (a subscription)
	CostMixed     = "mixed"     // a model's calls had different sources
)

// costSources are the values a call's cost_source may take.
var costSources = []string{CostReported, CostEstimated, CostUnknown}

// Bounds of usage.models: the model names come from the agent's output,
// which an agent can make anything, so state.json keeps at most MaxModels
// of them; the calls of any further model are summed up under ModelOther.
const (
	MaxModels     = 16
	MaxModelBytes = 128
	ModelNone     = "(none)"  // calls of which no model is known
	ModelOther    = "(other)" // calls of the models beyond MaxModels
)

// Call is one agent call as the cost ledger records it: the timeline's
// agent_call event, and what usage.models adds up.
type Call struct {
	Agent            string  `json:"agent"` // the adapter's kind
	Model            string  `json:"model"` // the model the output named, else agent.model, else ""
	InputTokens      int64   `json:"input_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CostReportedUSD  float64 `json:"cost_reported_usd"`  // what the CLI said the call cost (0 when it said nothing)
	CostEstimatedUSD float64 `json:"cost_estimated_usd"` // from the price table or agent.price (0 without a price)
	CostSource       string  `json:"cost_source"`        // which of the two counts: reported, estimated or unknown
	DurationMS       int64   `json:"duration_ms"`
}

// CostUSD is the call's cost that counts: the reported or the estimated
// one, as CostSource says; 0 when unknown.
func (c Call) CostUSD() float64 {
	switch c.CostSource {
	case CostReported:
		return c.CostReportedUSD
	case CostEstimated:
		return c.CostEstimatedUSD
	}
	return 0
}

// ModelUsage is the total of a run's calls of one model.
type ModelUsage struct {
	Calls            int     `json:"calls"`
	InputTokens      int64   `json:"input_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CostUSD          float64 `json:"cost_usd"`           // the sum of the costs that count
	CostEstimatedUSD float64 `json:"cost_estimated_usd"` // the sum of the estimates, reported calls included
	// CostSource is the source of every call's cost, or mixed.
	CostSource string `json:"cost_source"`
}

// Add adds the figures of o (another total, or one call's) to m.
func (m *ModelUsage) Add(o ModelUsage) {
	switch {
	case m.Calls == 0:
		m.CostSource = o.CostSource
	case o.Calls > 0 && m.CostSource != o.CostSource:
		m.CostSource = CostMixed
	}
	m.Calls += o.Calls
	m.InputTokens += o.InputTokens
	m.CacheReadTokens += o.CacheReadTokens
	m.CacheWriteTokens += o.CacheWriteTokens
	m.OutputTokens += o.OutputTokens
	m.CostUSD += o.CostUSD
	m.CostEstimatedUSD += o.CostEstimatedUSD
}

// ModelKey is the key of usage.models under which a call of model is
// summed up: the name cut to MaxModelBytes, ModelNone for no name.
func ModelKey(model string) string {
	if model == "" {
		return ModelNone
	}
	return cutText(model, MaxModelBytes)
}

// AddCall adds call c to the run's usage: its tokens and the cost that
// counts to the totals, and to its model's entry of Models.
func (u *Usage) AddCall(c Call) {
	u.add(Usage{InputTokens: c.InputTokens, OutputTokens: c.OutputTokens, CacheReadTokens: c.CacheReadTokens,
		CacheWriteTokens: c.CacheWriteTokens, CostUSD: c.CostUSD(), CostEstimated: c.CostSource == CostEstimated, Agent: c.Agent})
	u.model(c.Model).Add(ModelUsage{Calls: 1, InputTokens: c.InputTokens, CacheReadTokens: c.CacheReadTokens, CacheWriteTokens: c.CacheWriteTokens,
		OutputTokens: c.OutputTokens, CostUSD: c.CostUSD(), CostEstimatedUSD: c.CostEstimatedUSD, CostSource: c.CostSource})
}

// Merge adds another run's usage to u: its totals and each of its models'
// (a parallel run sums up its workers' runs).
func (u *Usage) Merge(o Usage) {
	u.add(o)
	for name, m := range o.Models {
		if m != nil {
			u.model(name).Add(*m)
		}
	}
}

// add adds o's totals, not its models, to u.
func (u *Usage) add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.CostUSD += o.CostUSD
	u.CostEstimated = u.CostEstimated || o.CostEstimated
	if o.Agent != "" {
		u.Agent = o.Agent
	}
}

// model is the entry of Models that model's calls are summed up in, made
// when missing; past MaxModels entries, that of ModelOther.
func (u *Usage) model(model string) *ModelUsage {
	key := ModelKey(model)
	if u.Models == nil {
		u.Models = map[string]*ModelUsage{}
	}
	m := u.Models[key]
	if m == nil {
		if len(u.Models) >= MaxModels && key != ModelOther {
			key = ModelOther
			m = u.Models[key]
		}
		if m == nil {
			m = &ModelUsage{}
			u.Models[key] = m
		}
	}
	return m
}

// impossibleUsage names the first figure of usage.models no runr could
// have written, or returns "".
func (u *Usage) impossibleUsage() string {
	if len(u.Models) > MaxModels+1 {
		return fmt.Sprintf("usage.models has %d entries, more than the %d runr keeps", len(u.Models), MaxModels+1)
	}
	for _, k := range slices.Sorted(maps.Keys(u.Models)) {
		m := u.Models[k]
		name := fmt.Sprintf("usage.models[%q]", cutText(k, MaxModelBytes))
		if m == nil {
			return name + " is null"
		}
		if len(k) > MaxModelBytes {
			return fmt.Sprintf("%s: a model name of %d bytes (at most %d)", name, len(k), MaxModelBytes)
		}
		for _, c := range []struct {
			field string
			v     int64
		}{{"calls", int64(m.Calls)}, {"input_tokens", m.InputTokens}, {"cache_read_tokens", m.CacheReadTokens},
			{"cache_write_tokens", m.CacheWriteTokens}, {"output_tokens", m.OutputTokens}} {
			if c.v < 0 {
				return fmt.Sprintf("%s.%s %d is negative", name, c.field, c.v)
			}
		}
		for _, c := range []struct {
			field string
			v     float64
		}{{"cost_usd", m.CostUSD}, {"cost_estimated_usd", m.CostEstimatedUSD}} {
			if !(c.v >= 0) || math.IsInf(c.v, 0) {
				return fmt.Sprintf("%s.%s %g is not a cost", name, c.field, c.v)
			}
		}
		if m.Calls > 0 && !slices.Contains(costSources, m.CostSource) && m.CostSource != CostMixed {
			return fmt.Sprintf("%s.cost_source %q is not a cost source (one of %v or %s)", name, m.CostSource, costSources, CostMixed)
		}
	}
	for _, c := range []struct {
		field string
		v     int64
	}{{"usage.cache_read_tokens", u.CacheReadTokens}, {"usage.cache_write_tokens", u.CacheWriteTokens}} {
		if c.v < 0 {
			return fmt.Sprintf("%s %d is negative", c.field, c.v)
		}
	}
	return ""
}
