package stopconditions

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// Stop is the winner of an evaluation: the reason the run stops, with the
// rule's key (a Builtin's Key, or a budget's such as "budget.time") or
// custom entry ("stop.failure[0]: output_pattern") as its condition.
type Stop = stopreasons.Stop

// Progress says how close one active rule is to firing.
type Progress struct {
	Name     string // the rule key or the custom entry ("stop.success[0]")
	Progress float64
	Message  string
}

// Verdict is the outcome of an evaluation.
type Verdict struct {
	Stop *Stop // nil: the run goes on
	// Progress has every active rule that can be near or far from firing, in
	// priority order. The user's stop request and the approval of every
	// milestone are yes-or-no events, not rules to approach, and are left out.
	Progress []Progress
}

// Rule names that are not keys of the config.
const (
	RuleUserSignal     = "user_signal"     // a `runr stop` request
	RuleMilestones     = "milestones"      // every milestone approved
	RuleReviewRepeated = "review_repeated" // the review asked for the same changes twice
)

// Evaluate applies every rule to the snapshot in the priority order of the
// design contract; the first rule that is due wins. review_rejected and the
// stops of the outcome table happen inside the tick and are not judged here.
// Every rule is evaluated, even after a winner is found, so that the
// progress of all of them is known.
func Evaluate(s *Snapshot, r Rules, l Limits) Verdict {
	e := evaluation{}

	e.fire(RuleUserSignal, stopreasons.UserStopped, userSignal{}.Evaluate(s), nil, nil)

	e.fire(RuleMilestones, stopreasons.Complete, Result{
		Met:     allApproved(s),
		Message: fmt.Sprintf("%d of %s approved", s.Approved, stopreasons.Plural(s.TotalMilestones, "milestone")),
	}, s.Approved, s.TotalMilestones)
	e.custom("stop.success", r.Success, stopreasons.Complete, s)

	for _, b := range stopOrder {
		b.judge(&e, b, s, r)
	}

	e.custom("stop.failure", r.Failure, stopreasons.ConditionFailed, s)
	e.custom("stop.conditions", r.Conditions, stopreasons.ConditionFailed, s)

	if l.MaxCostUSD > 0 {
		res := Result{
			Met:      s.CostUSD >= l.MaxCostUSD,
			Progress: fraction(s.CostUSD, l.MaxCostUSD),
			Message:  fmt.Sprintf("Cost $%.2f of the $%.2f budget", s.CostUSD, l.MaxCostUSD),
		}
		if res.Met {
			res.Message = fmt.Sprintf("Cost $%.2f reached the $%.2f budget", s.CostUSD, l.MaxCostUSD)
		}
		e.rule("budget.max_cost_usd", stopreasons.BudgetExceeded, res, s.CostUSD, l.MaxCostUSD)
	}
	if l.MaxTokens > 0 {
		res := Result{
			Met:      s.Tokens >= l.MaxTokens,
			Progress: fraction(float64(s.Tokens), float64(l.MaxTokens)),
			Message:  fmt.Sprintf("%d tokens (limit %d)", s.Tokens, l.MaxTokens),
		}
		e.rule("budget.max_tokens", stopreasons.BudgetExceeded, res, s.Tokens, l.MaxTokens)
	}
	if l.MaxIterations > 0 {
		res := countResult(s.Iteration, l.MaxIterations, "iteration", "iterations")
		res.Met = res.Met && !s.Checking
		e.rule("budget.max_iterations", stopreasons.MaxIterations, res, s.Iteration, l.MaxIterations)
	}
	if l.MaxTicks > 0 {
		e.rule("budget.max_ticks", stopreasons.MaxTicks,
			countResult(s.Tick, l.MaxTicks, "tick", "ticks"), s.Tick, l.MaxTicks)
	}
	if l.Time > 0 {
		elapsed := stopreasons.Duration(s.Elapsed)
		res := Result{
			Met:      s.Elapsed >= l.Time,
			Progress: fraction(float64(s.Elapsed), float64(l.Time)),
			Message:  fmt.Sprintf("%s elapsed (limit %s)", elapsed, stopreasons.Duration(l.Time)),
		}
		e.rule("budget.time", stopreasons.Timeout, res, elapsed, stopreasons.Duration(l.Time))
	}
	return e.verdict
}

// evaluation collects the progress of the rules and the first stop due.
type evaluation struct{ verdict Verdict }

// fire considers a yes-or-no event: it can win, but has no progress to show.
func (e *evaluation) fire(name string, code stopreasons.Code, res Result, value, threshold any) {
	if res.Met && e.verdict.Stop == nil {
		e.verdict.Stop = &Stop{Code: code, Condition: name, Value: value, Threshold: threshold, Message: res.Message}
	}
}

// rule considers an active rule: it records its progress and can win.
func (e *evaluation) rule(name string, code stopreasons.Code, res Result, value, threshold any) {
	if res.Met {
		res.Progress = 1
	}
	e.verdict.Progress = append(e.verdict.Progress, Progress{Name: name, Progress: res.Progress, Message: res.Message})
	e.fire(name, code, res, value, threshold)
}

// custom considers the conditions of one list of the config, in order.
func (e *evaluation) custom(list string, conds []Condition, code stopreasons.Code, s *Snapshot) {
	for i, c := range conds {
		name := fmt.Sprintf("%s[%d]", list, i)
		res := c.Evaluate(s)
		if res.Met {
			res.Progress = 1
		}
		e.verdict.Progress = append(e.verdict.Progress, Progress{Name: name, Progress: clamp01(res.Progress), Message: res.Message})
		e.fire(name+": "+c.Type(), code, res, nil, nil)
	}
}

// rate considers a rate rule: part/whole, due when above threshold, and
// judged only once whole reaches minWhole, so that one early failure cannot
// stop a run.
func (e *evaluation) rate(name string, code stopreasons.Code, label string, part, whole int, threshold float64, minWhole int) {
	if threshold <= 0 {
		return
	}
	rate := 0.0
	if whole > 0 {
		rate = float64(part) / float64(whole)
	}
	res := Result{Progress: fraction(rate, threshold)}
	switch {
	case whole == 0 || whole < minWhole:
		// Not judged yet: it cannot fire, so it is shown as far from firing.
		res.Progress = 0
		res.Message = fmt.Sprintf("%s %s (threshold %s; judged from %d attempted milestones, %d so far)",
			label, percent(rate), percent(threshold), max(minWhole, 1), whole)
	case rate > threshold:
		res.Met = true
		res.Message = fmt.Sprintf("%s %s exceeds %s threshold", label, percent(rate), percent(threshold))
	default:
		res.Message = fmt.Sprintf("%s %s (threshold %s)", label, percent(rate), percent(threshold))
	}
	e.rule(name, code, res, rate, threshold)
}

func allApproved(s *Snapshot) bool { return s.Finished && s.Approved >= s.TotalMilestones }

// failCode is the stop of a used-up milestone: worker_failed when its last
// failure was the agent's own, changes_not_tested when it was a verify that
// passed without testing the changes, else verification_failed.
func failCode(s *Snapshot) stopreasons.Code {
	switch {
	case s.LastFailureAgent:
		return stopreasons.WorkerFailed
	case s.LastFailureUntested:
		return stopreasons.ChangesNotTested
	}
	return stopreasons.VerificationFailed
}

// judgeCount judges a count rule: due when its counter reaches the limit.
func judgeCount(e *evaluation, b *Builtin, s *Snapshot, r Rules) {
	limit := b.limit(r)
	if limit <= 0 {
		return
	}
	n := b.Count(s)
	e.rule(b.Key, b.Code, countResult(n, limit, b.one, b.label), n, limit)
}

// judgeRetries judges max_milestone_retries, which skip mode leaves to
// on_milestone_failure.
func judgeRetries(e *evaluation, b *Builtin, s *Snapshot, r Rules) {
	limit := b.limit(r)
	if limit <= 0 || r.OnMilestoneFailure == OnFailureSkip {
		return
	}
	// A milestone fails when its failures exceed the retries, that is
	// on failure retries+1.
	n := b.Count(s)
	res := Result{
		Met:      n > limit,
		Progress: fraction(float64(n), float64(limit+1)),
		Message:  fmt.Sprintf("Milestone %d: %s (%s %d)", s.Milestone, stopreasons.Plural(n, "failed attempt"), b.Key, limit),
	}
	e.rule(b.Key, failCode(s), res, n, limit)
}

// judgeFinishedFailed stops a run that finished with milestones failed or
// rejected (skip mode went past them): a yes-or-no event.
func judgeFinishedFailed(e *evaluation, b *Builtin, s *Snapshot, _ Rules) {
	if unapproved := s.Failed + s.Rejected; s.Finished && !allApproved(s) && unapproved > 0 {
		e.fire(b.Key, failCode(s), Result{
			Met: true,
			Message: fmt.Sprintf("The run finished with %d of %s failed or rejected",
				unapproved, stopreasons.Plural(s.TotalMilestones, "milestone")),
		}, unapproved, nil)
	}
}

// judgeReviewRounds judges the review's loop: the same changes asked for
// twice in a row, whatever the limit, then the rounds counted.
func judgeReviewRounds(e *evaluation, b *Builtin, s *Snapshot, r Rules) {
	e.fire(RuleReviewRepeated, b.Code, Result{
		Met:     s.ReviewRepeated,
		Message: "The review asked for the same changes twice in a row",
	}, s.ReviewRounds, nil)
	judgeCount(e, b, s, r)
}

// judgeEdges judges max_edge on the backward edge of the current milestone
// taken most often.
func judgeEdges(e *evaluation, b *Builtin, s *Snapshot, r Rules) {
	limit := b.limit(r)
	if limit <= 0 {
		return
	}
	edge, n := busiestEdge(s.Edges)
	res := Result{
		Met:      n >= limit,
		Progress: fraction(float64(n), float64(limit)),
		Message:  fmt.Sprintf("No backward edge in milestone %d (limit %d)", s.Milestone, limit),
	}
	if edge != "" {
		res.Message = fmt.Sprintf("Backward edge %s taken %s in milestone %d (limit %d)", edge, stopreasons.Plural(n, "time"), s.Milestone, limit)
	}
	e.rule(b.Key, b.Code, res, n, limit)
}

// rateJudge judges a rate rule on the part and whole that ratio reads.
func rateJudge(ratio func(*Snapshot) (part, whole int)) func(*evaluation, *Builtin, *Snapshot, Rules) {
	return func(e *evaluation, b *Builtin, s *Snapshot, r Rules) {
		part, whole := ratio(s)
		e.rate(b.Key, b.Code, b.label, part, whole, b.Value(r).(float64), r.MinAttemptsForRates)
	}
}

// percent formats a fraction as a percentage with at most one decimal:
// 0.375 is "37.5%", 0.3 is "30%".
func percent(f float64) string {
	return strconv.FormatFloat(roundTo(f*100, 1), 'f', -1, 64) + "%"
}

func roundTo(f float64, decimals int) float64 {
	p := 1.0
	for range decimals {
		p *= 10
	}
	return float64(int64(f*p+0.5)) / p
}

// busiestEdge is the backward edge taken most often, the first by name among
// equals so that messages do not depend on map order.
func busiestEdge(edges map[string]int) (string, int) {
	names := make([]string, 0, len(edges))
	for k := range edges {
		names = append(names, k)
	}
	sort.Strings(names)
	best, n := "", 0
	for _, k := range names {
		if edges[k] > n {
			best, n = k, edges[k]
		}
	}
	return best, n
}
