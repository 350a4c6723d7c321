package agents

import "github.com/runr-dev/runr/internal/stopreasons"

// BudgetProblem says why a run's cost or token budget could never fire with
// adapter a: a budget that silently counts zero is worse than none. priced
// is whether agent.price gives a price per million tokens, from which runr
// estimates the cost of a CLI that reports only tokens. It returns nil when
// every budget that is set can be enforced, else a config_invalid error that
// says what to change.
func BudgetProblem(a Adapter, maxCostUSD float64, maxTokens int64, priced bool) error {
	kind := a.Kind()
	switch {
	case maxCostUSD > 0 && !a.ReportsCost() && !a.ReportsTokens():
		return stopreasons.Errorf(stopreasons.ConfigInvalid,
			"budget.max_cost_usd (--max-cost) is %v but agent.kind %s reports neither cost nor tokens, so runr cannot tell what a call costs: "+
				"remove budget.max_cost_usd (or --max-cost), or use an agent kind that reports usage (claude, opencode, codex, gemini, aider, qwen)",
			maxCostUSD, kind)
	case maxCostUSD > 0 && !a.ReportsCost() && !priced:
		return stopreasons.Errorf(stopreasons.ConfigInvalid,
			"budget.max_cost_usd (--max-cost) is %v but %s does not report what a call costs: set agent.price.input_per_mtok and "+
				"agent.price.output_per_mtok (USD per million tokens) so runr can estimate it from tokens, or remove budget.max_cost_usd",
			maxCostUSD, kind)
	case maxTokens > 0 && !a.ReportsTokens():
		return stopreasons.Errorf(stopreasons.ConfigInvalid,
			"budget.max_tokens is %d but agent.kind %s reports no tokens: remove budget.max_tokens, "+
				"or use an agent kind that reports usage (claude, opencode, codex, gemini, aider, qwen)",
			maxTokens, kind)
	}
	return nil
}
