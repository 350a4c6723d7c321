package supervisor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// Decision is what Decide makes of one phase step.
type Decision struct {
	Event Event // what the step came to
	Step  Step  // what the run does about it (Transition)
	// Stop ends the run: its code, condition, figures, message and details,
	// and where a resume goes on; nil while the run goes on.
	Stop *stop
	// Switch asks the loop to switch to a fallback agent and decide again
	// with the result in Facts.Switch; nothing else is decided then.
	Switch *Switch
	// Counters and Attempt (the milestone's last attempt) are as the step
	// leaves them; Attempt is nil when the milestone has none.
	Counters Counters
	Attempt  *state.Attempt
	// Failure is the run's last failure now; nil leaves the recorded one.
	Failure *state.Failure
	// Checks are the verify results to record, when SetChecks.
	Checks    []state.CheckResult
	SetChecks bool
	// Events are the timeline events the step adds, in order.
	Events []state.EventData
	// For the stop rules after the step: its error (on_error) and whether
	// the review asked for the same changes again (review_loop_detected).
	ErrEvent       *stopconditions.ErrorEvent
	ReviewRepeated bool
	// Verify is what the checks came to, for the tick's summary: "passed",
	// "failed" or "timed out"; "" when they decided nothing.
	Verify string
}

// result is what a phase step came to before the transition: its event,
// and what the effects and the stop rules need of it.
type result struct {
	Event
	// stop describes the stop when the event can end the run (its message,
	// condition, figures and details); the transition names the code.
	stop      *stop
	signature string // a failed attempt's error signature
	errText   string // one line: what failed
	// errEvent is the error of this step, for on_error conditions.
	errEvent *stopconditions.ErrorEvent
	// reviewRepeated: the review asked for the same changes as the one
	// before it.
	reviewRepeated bool
	// resetAt and limit are a rate-limited call's, for a switch of agents.
	resetAt time.Time
	limit   agents.LimitKind
}

// Decide is the decision for one phase step. From the phase, the facts the
// loop gathered, the run as it stood and the rules, it decides what the
// step came to (DESIGN §2's outcome table), the next phase or the stop with
// its evidence, the counters after the step (DESIGN §4) and the events to
// record. It is pure: the loop runs the processes and git, and applies the
// decision (apply).
func Decide(phase Phase, f Facts, run Run, r Rules) Decision {
	d := Decision{Counters: run.Counters}
	d.Counters.Edges = maps.Clone(run.Edges)
	d.Counters.MilestoneEdges = maps.Clone(run.MilestoneEdges)
	if run.Attempt != nil {
		a := *run.Attempt
		d.Attempt = &a
	}
	var res result
	switch phase {
	case Implement:
		res = d.implement(f, run, r)
	case Verify:
		res = d.verify(f, run, r)
	case Review:
		res = d.review(f, run, r)
	case Checkpoint:
		res = result{Event: Event{Outcome: Checkpointed}}
		if g := f.Guard; g != nil {
			// What verify and review left in the tree, judged before
			// the commit.
			if gres, stopped := d.guards(g, run, r); stopped {
				res = gres
				break
			}
		}
		if f.Err != nil {
			res = gitFault(f.Err, f.At, run.Budget)
		}
	case Finalize:
		res = result{Event: Event{Outcome: Finalized}, stop: &stop{Stop: stopreasons.Stop{Condition: stopconditions.RuleMilestones, Message: "all milestones approved"}}}
	default:
		res = result{Event: Event{Outcome: Fault, Code: stopreasons.StateCorrupt}, stop: &stop{Stop: stopreasons.Stop{Message: fmt.Sprintf("state.json: unknown phase %q", phase)}}}
	}
	switched := false
	if reason, why := switchReason(res, f.Now, r.MaxWait); phase == Implement && reason != "" && r.Fallbacks > 0 {
		sw := f.Switch
		switch {
		case sw == nil:
			return Decision{Switch: &Switch{Reason: reason, Why: why, ResetAt: res.resetAt}}
		case sw.Switched:
			// The agent's limit, not the work's: the call counts for no
			// streak, and the next agent takes the same milestone.
			res = result{Event: Event{Outcome: AgentSwitched}, errText: fmt.Sprintf("%s: switched from %s to %s", why, sw.From, sw.To)}
			switched = true
		default:
			noFallbackLeft(res.stop, r.Fallbacks)
		}
	}
	if g := f.Guard; phase == Implement && g != nil && g.Looked {
		d.countTree(g.Tree, switched)
	}
	if f.DirGone {
		res = lostDir(res, run)
	}
	if f.StoreDamaged != nil && res.Outcome == Fault {
		// Whatever the step failed on, it failed because the run's record
		// was taken from under it: that is the stop.
		res = fault(f.StoreDamaged)
	}
	d.follow(phase, res, run, r)
	return d
}

// CallDecides reports whether the agent call decides the step by itself,
// before the guards look at the tree: runr failed to make it, the sandbox
// failed, a budget stopped it, a signal or the time budget cut it short,
// or it ran past agent.timeout or agent.idle_timeout.
func (f Facts) CallDecides() bool {
	return f.Err != nil || f.Sandbox != "" || f.Spend != "" || f.At.cuts(f.Process) || f.Process.TimedOut || f.Process.Idle
}

// implement decides what an agent call came to: the call's own end first
// (CallDecides), then the guards, then the adapter's reading of it.
func (d *Decision) implement(f Facts, run Run, r Rules) result {
	p := f.Process
	switch {
	case f.Err != nil && errors.Is(f.Err, proc.ErrNotFound):
		return result{Event: Event{Outcome: Fault, Code: stopreasons.WorkerNotFound},
			stop: &stop{Stop: stopreasons.Stop{Condition: "agent.command", Message: f.Err.Error(), Details: &stopreasons.StopDetails{Command: f.Command}}}}
	case f.Err != nil:
		return fault(f.Err)
	case f.Sandbox != "":
		return result{Event: Event{Outcome: Fault, Code: stopreasons.EnvironmentInvalid},
			stop: &stop{Stop: stopreasons.Stop{Code: stopreasons.EnvironmentInvalid, Condition: "sandbox.mode", Message: f.Sandbox}}}
	case f.Spend != "":
		return d.spent(f.Spend, run)
	}
	if res, cut := interruption(p, f.At, run.Budget); cut {
		return res
	}
	switch {
	case p.TimedOut:
		return result{Event: Event{Outcome: AgentTimedOut}, stop: &stop{Stop: stopreasons.Stop{Condition: "agent.timeout", Value: stopreasons.Duration(p.Duration),
			Threshold: stopreasons.TrimDuration(r.AgentTimeout), Message: fmt.Sprintf("the agent call ran past agent.timeout (%s)", stopreasons.TrimDuration(r.AgentTimeout))}}}
	case p.Idle:
		msg := fmt.Sprintf("the agent's call showed no sign of life (output, CPU time, I/O or a change in its processes) for %s", stopreasons.TrimDuration(r.IdleTimeout))
		var details *stopreasons.StopDetails
		if p.LastSign != "" {
			details = &stopreasons.StopDetails{LastSign: p.LastSign, LastSignAt: p.LastSignAt.UTC().Format(time.RFC3339)}
			msg += "; last seen: " + p.LastSign + " at " + details.LastSignAt
		}
		return result{Event: Event{Outcome: AgentStalled}, stop: &stop{Stop: stopreasons.Stop{Condition: "agent.idle_timeout", Threshold: stopreasons.TrimDuration(r.IdleTimeout),
			Message: msg, Details: details}}}
	}
	if g := f.Guard; g != nil {
		if res, stopped := d.guards(g, run, r); stopped {
			return res
		}
	}
	return d.agent(f, run)
}

// spent is the stop of a call the spend watch ended on a budget: the run's
// spend, the call's included.
func (d *Decision) spent(condition string, run Run) result {
	sp := &stop{}
	sp.Condition = condition
	ev := state.BudgetStopEvent{Condition: condition}
	if condition == "budget.max_cost_usd" {
		sp.Value, sp.Threshold = round2(run.CostUSD), run.Budget.MaxCostUSD
		ev.Value, ev.Threshold = round2(run.CostUSD), run.Budget.MaxCostUSD
		sp.Message = fmt.Sprintf("the agent call was stopped mid-call: cost $%.2f reached the $%.2f budget", run.CostUSD, run.Budget.MaxCostUSD)
		if run.CostEstimated {
			sp.Message += " (estimated from tokens)"
		}
	} else {
		sp.Value, sp.Threshold = run.Tokens, run.Budget.MaxTokens
		ev.Value, ev.Threshold = float64(run.Tokens), float64(run.Budget.MaxTokens)
		sp.Message = fmt.Sprintf("the agent call was stopped mid-call: %d tokens reached the budget of %d", run.Tokens, run.Budget.MaxTokens)
	}
	d.Events = append(d.Events, ev)
	return result{Event: Event{Outcome: AgentCostCap}, stop: sp}
}

// guards turns the guards' verdicts into the step's stop: a scope or
// protect violation, a changed lockfile without --allow-deps, or a failure
// of the guards themselves. It reports false when the tree is in order.
func (d *Decision) guards(g *GuardFacts, run Run, r Rules) (result, bool) {
	if g.Err != nil {
		if errors.Is(g.Err, guard.ErrBadGlob) {
			return result{Event: Event{Outcome: Fault, Code: stopreasons.ConfigInvalid}, stop: &stop{Stop: stopreasons.Stop{Message: g.Err.Error()}}}, true
		}
		return gitFault(g.Err, g.At, run.Budget), true
	}
	violations := append(append([]guard.Violation(nil), g.Meta...), g.Scope...)
	if len(violations) > 0 || len(g.Protected) > 0 {
		var files, rules, ruleNames, msgs []string
		// named lists the first violations of vs in the message and the
		// guard event, and counts the others (stopreasons.MaxDetailFiles);
		// every one goes into the details, which the stop's record bounds.
		named := func(vs []guard.Violation, kind string) ([]string, int) {
			var out, evFiles, evRules []string
			for i, v := range vs {
				rule := v.Rule
				if v.Pattern != "" {
					rule += " " + v.Pattern
				}
				files, rules = append(files, v.Path), append(rules, rule)
				if !slices.Contains(ruleNames, v.Rule) {
					ruleNames = append(ruleNames, v.Rule)
				}
				if i >= stopreasons.MaxDetailFiles {
					continue
				}
				evFiles, evRules = append(evFiles, v.Path), append(evRules, rule)
				if v.Change != "" {
					rule += ", " + v.Change
				}
				out = append(out, fmt.Sprintf("%q (%s%s)", v.Path, rule, committedNote(g.Committed, v.Path)))
			}
			omitted := len(vs) - len(out)
			if len(vs) > 0 {
				d.Events = append(d.Events, state.GuardEvent{Rule: kind, Files: evFiles, FilesOmitted: omitted, Rules: evRules})
			}
			return out, omitted
		}
		if out, omitted := named(violations, "scope"); len(out) > 0 {
			msg := fmt.Sprintf("%s outside the scope: %s", stopreasons.Plural(len(out)+omitted, "changed file"), listed(out, omitted))
			if len(g.Meta) > 0 {
				msg += " (" + guard.RuleGitMetadata + ": git's own config, info and hooks files, replace refs and the shallow file, which can make git run programs or hide changes, are outside every scope)"
			}
			msgs = append(msgs, msg)
		}
		if out, omitted := named(g.Protected, stopreasons.RuleProtect); len(out) > 0 {
			msgs = append(msgs, fmt.Sprintf("%s changed: %s; %s", stopreasons.Plural(len(out)+omitted, "protected file"), listed(out, omitted), stopreasons.ProtectAdvice))
		}
		return result{Event: Event{Outcome: ScopeViolated}, stop: &stop{Stop: stopreasons.Stop{Condition: strings.Join(ruleNames, ", "),
			Message: strings.Join(msgs, "; "),
			Details: &stopreasons.StopDetails{Files: files, Rules: rules, Committed: onlyIn(g.Committed, files)}}}}, true
	}
	if locks := g.Lockfiles; !r.AllowDeps && len(locks) > 0 {
		var rules, named []string
		first, omitted := stopreasons.FirstFiles(locks)
		for range locks {
			rules = append(rules, "scope.lockfiles")
		}
		for _, l := range first {
			named = append(named, fmt.Sprintf("%q (scope.lockfiles%s)", l, committedNote(g.Committed, l)))
		}
		d.Events = append(d.Events, state.GuardEvent{Rule: "lockfiles", Files: first, FilesOmitted: omitted})
		return result{Event: Event{Outcome: LockfileChanged}, stop: &stop{Stop: stopreasons.Stop{Condition: "scope.lockfiles",
			Message: fmt.Sprintf("lockfile(s) changed without --allow-deps: %s", listed(named, omitted)),
			Details: &stopreasons.StopDetails{Files: locks, Rules: rules, Committed: onlyIn(g.Committed, locks)}}}}, true
	}
	return result{}, false
}

// listed joins the named files of a guard's message, and says how many
// more it left out.
func listed(named []string, omitted int) string {
	s := strings.Join(named, ", ")
	if omitted > 0 {
		s += fmt.Sprintf(" and %d more", omitted)
	}
	return s
}

// agent judges a call that ended by itself from the adapter's reading of
// it: a limit, an auth failure, the cost cap, RUNR_STATUS, an error.
func (d *Decision) agent(f Facts, run Run) result {
	ar, p := f.Agent, f.Process
	switch ar.Class {
	case agents.ClassRateLimit:
		details := &stopreasons.StopDetails{AgentError: firstLine(ar.ErrorText, ""), LimitKind: string(ar.Limit)}
		msg := "the agent hit a rate or usage limit"
		if ar.Limit != agents.LimitNone {
			msg += " (" + string(ar.Limit) + ")"
		}
		if !ar.ResetAt.IsZero() {
			details.ResetAt = ar.ResetAt.UTC().Format(time.RFC3339)
			msg += "; it resets at " + details.ResetAt
		}
		return result{Event: Event{Outcome: AgentRateLimited}, errText: ar.ErrorText, resetAt: ar.ResetAt, limit: ar.Limit,
			stop: &stop{Stop: stopreasons.Stop{Condition: "agent", Message: msg, Details: details}}}
	case agents.ClassAuth:
		return result{Event: Event{Outcome: AgentAuthFailed}, errText: ar.ErrorText,
			stop: &stop{Stop: stopreasons.Stop{Condition: "agent", Message: firstLine(ar.ErrorText, "authentication failed"),
				Details: &stopreasons.StopDetails{AgentError: firstLine(ar.ErrorText, "")}}}}
	case agents.ClassBudget:
		return result{Event: Event{Outcome: AgentCostCap}, errText: ar.ErrorText,
			stop: &stop{Stop: stopreasons.Stop{Condition: "max_cost_usd", Value: round2(run.CostUSD), Threshold: run.Budget.MaxCostUSD,
				Message: fmt.Sprintf("the agent stopped on the cost cap: $%.2f of $%.2f", run.CostUSD, run.Budget.MaxCostUSD)}}}
	}
	if ar.Signal == agents.SignalBlocked {
		return result{Event: Event{Outcome: AgentBlocked}, errText: ar.SignalText,
			stop: &stop{Stop: stopreasons.Stop{Condition: "RUNR_STATUS", Message: firstLine(ar.SignalText, "the agent is blocked")}}}
	}
	if ar.IsError || ar.Signal == agents.SignalFailed || p.ExitCode != 0 {
		text := ar.ErrorText
		if text == "" {
			text = proc.Tail(p.Tail, feedbackLines)
		}
		sig := stopconditions.Signature(f.Command, text)
		d.Failure = &state.Failure{Tick: run.Tick, Phase: state.PhaseImplement, Command: f.Command, ExitCode: p.ExitCode,
			Tail: proc.Tail([]byte(text), feedbackLines), Signature: sig, Log: f.Log}
		return result{Event: Event{Outcome: AgentFailed}, signature: sig,
			errText:  firstLine(text, fmt.Sprintf("agent exited %d", p.ExitCode)),
			errEvent: &stopconditions.ErrorEvent{Source: stopconditions.SourceAgent, Text: text}}
	}
	return result{Event: Event{Outcome: AgentSucceeded, Done: ar.Signal == agents.SignalDone}}
}

// countTree counts the call's look at the tree: a changed tree is progress
// and ends the no-op streak; an unchanged one extends it, unless the call
// was handed to another agent (its limit, not a no-op).
func (d *Decision) countTree(tree string, switched bool) {
	c := &d.Counters
	if tree != c.TreeHash {
		c.Noop = 0
		d.progress()
	} else if !switched {
		c.Noop++
	}
	c.TreeHash = tree
}

// progress marks the attempt as one that made progress.
func (d *Decision) progress() {
	if d.Attempt != nil {
		d.Attempt.Progress = true
	}
}

// fault is the result of a step that could not be carried out.
func fault(err error) result {
	sp := internalStop(err)
	return result{Event: Event{Outcome: Fault, Code: sp.Code}, stop: sp}
}

// interruption is the result of a process that a signal or the time budget
// cut short (at says which), and false for one that ended by itself.
func interruption(p proc.Result, at Reading, budget state.Budget) (result, bool) {
	if !at.cuts(p) {
		return result{}, false
	}
	if at.Signal != nil {
		sp := at.Signal.stop()
		return result{Event: Event{Outcome: Interrupted, Code: sp.Code}, stop: sp}, true
	}
	limit := time.Duration(budget.TimeMS) * time.Millisecond
	return result{Event: Event{Outcome: Interrupted, Code: stopreasons.Timeout}, stop: &stop{Stop: stopreasons.Stop{Condition: "budget.time",
		Value: stopreasons.Duration(at.Elapsed), Threshold: stopreasons.TrimDuration(limit),
		Message: fmt.Sprintf("the time budget of %s ran out", stopreasons.TrimDuration(limit))}}}, true
}

// cuts reports whether a signal or the time budget cut process p short.
func (at Reading) cuts(p proc.Result) bool {
	return at.Signal != nil || p.Canceled && at.DeadlinePassed
}

// gitFault is the result of a failed git call of the guards or the
// checkpoint: the time budget's stop when its deadline ended the call (or
// the signal's, read at the same moment), else a fault.
func gitFault(err error, at Reading, budget state.Budget) result {
	// Canceled: a signal ended a read of the guard's (WithReadStop).
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		if res, cut := interruption(proc.Result{Canceled: true}, at, budget); cut {
			return res
		}
	}
	return fault(err)
}

// lostDir turns the fault of a step into environment_invalid when the
// run's working directory is gone: every process and git command there
// fails, whatever the step made of it.
func lostDir(res result, run Run) result {
	if res.Outcome != Fault || res.Code == stopreasons.EnvironmentInvalid || run.Dir == "" {
		return res
	}
	msg := ""
	if res.stop != nil {
		msg = " (" + res.stop.Message + ")"
	}
	return result{Event: Event{Outcome: Fault, Code: stopreasons.EnvironmentInvalid}, stop: &stop{Stop: stopreasons.Stop{
		Message: fmt.Sprintf("the run's working directory %s is gone%s; restore it, then run `runr resume %s`", run.Dir, msg, run.ID)}}}
}

// switchReason decides whether a call's result switches the run to a
// fallback agent: a rate or usage limit that resets beyond resume.max_wait
// (an auto-resume would wait no longer than that), a spend cap or a usage
// window that names no reset (an auto-resume does not wait for a spend cap,
// and a window lasts hours), or a missing program. A rate limit or an
// overload with no reset time is taken for a transient one: the run stops
// and an auto-resume retries it after its backoff.
func switchReason(res result, now time.Time, maxWait time.Duration) (string, string) {
	switch {
	case res.Outcome == AgentRateLimited && res.resetAt.IsZero() && (res.limit == agents.LimitSpendCap || res.limit == agents.LimitUsageWindow):
		return state.SwitchRateLimited, fmt.Sprintf("%s limit with no reset time", strings.ReplaceAll(string(res.limit), "_", " "))
	case res.Outcome == AgentRateLimited:
		if res.resetAt.IsZero() || res.resetAt.Sub(now) <= maxWait {
			return "", ""
		}
		return state.SwitchRateLimited, fmt.Sprintf("rate limited until %s, beyond resume.max_wait %s",
			res.resetAt.Local().Format("2006-01-02 15:04 MST"), config.FormatDuration(maxWait))
	case res.Outcome == Fault && res.Code == stopreasons.WorkerNotFound:
		msg := "the agent program is missing"
		if res.stop != nil {
			msg = res.stop.Message
		}
		return state.SwitchNotFound, msg
	}
	return "", ""
}

const feedbackLines = 40

// committedNote marks a path the agent committed itself, since undoing that
// takes more than a stash.
func committedNote(committed []string, p string) string {
	if slices.Contains(committed, p) {
		return ", committed"
	}
	return ""
}

// onlyIn returns the elements of list that are also in of.
func onlyIn(list, of []string) []string {
	var out []string
	for _, p := range list {
		if slices.Contains(of, p) {
			out = append(out, p)
		}
	}
	return out
}

func hasCheck(checks []state.CheckResult, cmd string) bool {
	for _, c := range checks {
		if c.Command == cmd {
			return true
		}
	}
	return false
}

// attemptEvent is the timeline's record of attempt a of milestone m (1-based).
func attemptEvent(m int, a *state.Attempt) state.AttemptEvent {
	return state.AttemptEvent{Milestone: m, Outcome: a.Outcome, Signature: a.ErrorSignature, AttemptTick: a.Tick, Iteration: a.Iteration,
		Error: a.Error, DurationMS: a.DurationMS, ExitCode: a.ExitCode, CostUSD: a.CostUSD, Log: a.Log, Progress: a.Progress, Agent: a.Agent}
}

func firstLine(s, fallback string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return fallback
	}
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	return line
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }
