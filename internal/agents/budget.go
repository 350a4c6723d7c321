package agents

import (
	"fmt"
	"strings"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// usageMaybe is an adapter whose program may report usage or may not: a
// command agent reports it only if the program prints RUNR_USAGE lines.
type usageMaybe interface {
	MayReportUsage() bool
}

func mayReportUsage(a Adapter) bool {
	m, ok := a.(usageMaybe)
	return ok && m.MayReportUsage()
}

// usageKinds lists the kinds whose CLI reports its usage, cost or tokens.
func usageKinds() string {
	var kinds []string
	for _, a := range adapters {
		if a.ReportsCost() || a.ReportsTokens() {
			kinds = append(kinds, a.Kind())
		}
	}
	return strings.Join(kinds, ", ")
}

// BudgetProblem says why a run's cost or token budget could never fire with
// adapter a: a budget that silently counts zero is worse than none. priced
// is whether runr has a price per million tokens (agent.price, or its table
// for agent.model: Priced), from which it estimates the cost of a CLI that
// reports only tokens. It returns nil when every budget that is set can be
// enforced, else a config_invalid error that says what to change. A command
// agent's budget is allowed: it binds if the program prints RUNR_USAGE
// lines (BudgetWarning says so).
func BudgetProblem(a Adapter, maxCostUSD float64, maxTokens int64, priced bool) error {
	kind := a.Kind()
	if mayReportUsage(a) {
		return nil
	}
	switch {
	case maxCostUSD > 0 && !a.ReportsCost() && !a.ReportsTokens():
		return stopreasons.Errorf(stopreasons.ConfigInvalid,
			"budget.max_cost_usd (--max-cost) is %v but agent.kind %s reports neither cost nor tokens, so runr cannot tell what a call costs: "+
				"remove budget.max_cost_usd (or --max-cost), or use an agent kind that reports usage (%s)",
			maxCostUSD, kind, usageKinds())
	case maxCostUSD > 0 && !a.ReportsCost() && !priced:
		return stopreasons.Errorf(stopreasons.ConfigInvalid,
			"budget.max_cost_usd (--max-cost) is %v but %s does not report what a call costs and runr has no price for its model: "+
				"set agent.model to a model of runr's price table (docs/agents.md), or agent.price.input_per_mtok and "+
				"agent.price.output_per_mtok (USD per million tokens), so runr can estimate it from tokens, or remove budget.max_cost_usd",
			maxCostUSD, kind)
	case maxTokens > 0 && !a.ReportsTokens():
		return stopreasons.Errorf(stopreasons.ConfigInvalid,
			"budget.max_tokens is %d but agent.kind %s reports no tokens: remove budget.max_tokens, "+
				"or use an agent kind that reports usage (%s)",
			maxTokens, kind, usageKinds())
	}
	return nil
}

// BudgetWarning says, for a budget BudgetProblem allows, what it depends on
// that runr cannot check beforehand; "" when nothing. priced is as for
// BudgetProblem.
func BudgetWarning(a Adapter, maxCostUSD float64, maxTokens int64, priced bool) string {
	if !mayReportUsage(a) || (maxCostUSD <= 0 && maxTokens <= 0) {
		return ""
	}
	w := fmt.Sprintf("the budget binds agent.kind %s only if the program prints %s lines (docs/agents.md); a call that prints none counts nothing", a.Kind(), UsagePrefix)
	if maxCostUSD > 0 && !priced {
		w += "; and for budget.max_cost_usd each line must give cost_usd, or a model of runr's price table, or agent.price must be set"
	}
	return w
}
