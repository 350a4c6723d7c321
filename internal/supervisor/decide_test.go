package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/coverage"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// The run every row of TestDecide starts from, unless the row says
// otherwise: milestone 2 ("second") at tick 7, its attempt of this tick
// open, with counters that every rule can move either way.
const (
	agentProg = "/usr/bin/agent"
	implLog   = "logs/tick-0007-implement.log"
	verifyLog = "logs/tick-0007-verify.log"
	reviewLog = "logs/tick-0007-review.log"
	reviewCmd = "./review.sh"
	goTest    = "go test ./..."
	goVet     = "go vet ./..."
)

var (
	t0     = time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	claude = state.AgentRef{Kind: "claude", Model: "opus"}
	codex  = state.AgentRef{Kind: "codex"}
)

func baseCounters() Counters {
	return Counters{
		Counters: state.Counters{Attempts: 4, SameError: 2, Noop: 1, NoProgress: 2, ConsecutiveFails: 1, TestFailStreak: 1,
			Edges: map[string]int{edgeVerify: 1}},
		LastErrorSignature: "sig-earlier", LastProgressTick: 3, ReviewNotesHash: "notes-earlier", TreeHash: "tree0",
		Retries: 1, MilestoneEdges: map[string]int{edgeVerify: 1}}
}

func baseAttempt() *state.Attempt {
	return &state.Attempt{Tick: 7, Iteration: 3, Log: implLog, Agent: &claude, DurationMS: 90000, CostUSD: 0.25}
}

func baseRun() Run {
	return Run{Counters: baseCounters(), ID: "r1", Dir: "/repo", Tick: 7, Milestone: 2, Goal: "second", Attempt: baseAttempt(),
		CostUSD: 1.5, Tokens: 1200, Budget: state.Budget{TimeMS: 30 * 60 * 1000, MaxCostUSD: 2, MaxTokens: 5000}}
}

// counters is baseCounters as changed.
func counters(change func(*Counters)) Counters {
	c := baseCounters()
	change(&c)
	return c
}

// attempt is baseAttempt as changed.
func attempt(change func(*state.Attempt)) *state.Attempt {
	a := baseAttempt()
	change(a)
	return a
}

func runWith(change func(*Run)) Run {
	r := baseRun()
	change(&r)
	return r
}

// call is an agent call that exited 0 and changed the tree, as changed.
func call(change func(*Facts)) Facts {
	f := Facts{Command: agentProg, Log: implLog, Now: t0, Process: proc.Result{Duration: 90 * time.Second},
		Guard: &GuardFacts{Looked: true, Tree: "tree1"}}
	if change != nil {
		change(&f)
	}
	return f
}

func checks(cs ...CheckFacts) Facts { return Facts{Log: verifyLog, Now: t0, Checks: cs} }

func reviewed(p proc.Result) Facts {
	return Facts{Command: reviewCmd, Log: reviewLog, Now: t0, Process: p}
}

// attemptEv is the timeline's record of a closed attempt of milestone 2.
func attemptEv(a *state.Attempt) state.EventData {
	return state.AttemptEvent{Milestone: 2, Outcome: a.Outcome, Signature: a.ErrorSignature, AttemptTick: a.Tick, Iteration: a.Iteration,
		Error: a.Error, DurationMS: a.DurationMS, ExitCode: a.ExitCode, CostUSD: a.CostUSD, Log: a.Log, Progress: a.Progress, Agent: a.Agent}
}

func notesHash(notes string) string {
	h := sha256.Sum256([]byte(notes))
	return hex.EncodeToString(h[:8])
}

func stopAt(phase Phase, s stopreasons.Stop) *stop { return &stop{Stop: s, resumePhase: string(phase)} }

func evs(es ...state.EventData) []state.EventData { return es }

type decideRow struct {
	row   string
	phase Phase
	facts Facts
	run   Run
	rules Rules
	want  Decision
}

// TestDecide has a row for each row of DESIGN §2's outcome table and for
// each counter rule of §4 a step changes; each asserts the whole decision.
func TestDecide(t *testing.T) {
	var rows []decideRow
	rows = append(rows, implementRows()...)
	rows = append(rows, guardRows()...)
	rows = append(rows, verifyRows()...)
	rows = append(rows, untestedRows()...)
	rows = append(rows, reviewRows()...)
	rows = append(rows, laterRows()...)
	for _, tt := range rows {
		t.Run(tt.row, func(t *testing.T) {
			assert.Equal(t, tt.want, Decide(tt.phase, tt.facts, tt.run, tt.rules))
		})
	}
}

var (
	verifyOnly = Rules{Verify: true, MaxRetries: 3, MaxWait: 6 * time.Hour, AgentTimeout: 10 * time.Minute, IdleTimeout: 2 * time.Minute, VerifyTimeout: 5 * time.Minute}
	bare       = Rules{MaxRetries: 3, MaxWait: 6 * time.Hour, AgentTimeout: 10 * time.Minute, IdleTimeout: 2 * time.Minute, VerifyTimeout: 5 * time.Minute}
)

func rulesWith(r Rules, change func(*Rules)) Rules {
	change(&r)
	return r
}

func implementRows() []decideRow {
	withFallback := rulesWith(verifyOnly, func(r *Rules) { r.Fallbacks = 1 })

	approved := attempt(func(a *state.Attempt) { a.Outcome, a.Progress = state.OutcomeApproved, true })
	incomplete := attempt(func(a *state.Attempt) { a.Outcome = state.OutcomeIncomplete })

	exitText := "compile error\nboom"
	exitSig := stopconditions.Signature(agentProg, exitText)
	exitFailed := attempt(func(a *state.Attempt) {
		a.Outcome, a.ErrorSignature, a.Error, a.Progress = state.OutcomeFailed, exitSig, "compile error", true
	})
	isErrSig := stopconditions.Signature(agentProg, "API Error: 500")
	isErrFailed := attempt(func(a *state.Attempt) {
		a.Outcome, a.ErrorSignature, a.Error = state.OutcomeFailed, isErrSig, "API Error: 500"
	})
	statusText := "RUNR_STATUS: failed the tests need a database"
	statusSig := stopconditions.Signature(agentProg, statusText)
	statusFailed := attempt(func(a *state.Attempt) {
		a.Outcome, a.ErrorSignature, a.Error, a.Progress = state.OutcomeFailed, statusSig, statusText, true
	})

	stopped := func(errText string, progress bool) *state.Attempt {
		return attempt(func(a *state.Attempt) { a.Outcome, a.Error, a.Progress = state.OutcomeStopped, errText, progress })
	}
	changedTree := counters(func(c *Counters) { c.Noop, c.TreeHash = 0, "tree1" })

	window := agents.Result{Class: agents.ClassRateLimit, Limit: agents.LimitUsageWindow, ErrorText: "usage limit reached"}
	switched := attempt(func(a *state.Attempt) {
		a.Outcome, a.Error = state.OutcomeSwitched, fmt.Sprintf("usage window limit with no reset time: switched from %s to %s", claude, codex)
	})
	missing := fmt.Errorf("start %s: %w", agentProg, proc.ErrNotFound)
	missingSwitched := attempt(func(a *state.Attempt) {
		a.Outcome, a.Error = state.OutcomeSwitched, fmt.Sprintf("%s: switched from %s to %s", missing, claude, codex)
	})
	sigint, intName := stopreasons.ForSignal(os.Interrupt)
	closedEarlier := &state.Attempt{Tick: 5, Iteration: 2, Outcome: state.OutcomeFailed, ErrorSignature: "sig-earlier", Log: "logs/tick-0005-implement.log"}

	return []decideRow{
		// verify passed (or, with no verify commands, the agent signalled
		// completion), review approved or none: approved.
		{"agent succeeded, verify configured: verify next; a changed tree is progress and ends the noop streak", Implement,
			call(nil), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: AgentSucceeded}, Step: Step{Next: Verify}, Counters: changedTree,
				Attempt: attempt(func(a *state.Attempt) { a.Progress = true })}},
		{"no verify, the agent signalled completion: approved; approval resets same_error and no_progress", Implement,
			call(func(f *Facts) { f.Agent.Signal = agents.SignalDone }), baseRun(), bare,
			Decision{Event: Event{Outcome: AgentSucceeded, Done: true}, Step: Step{Attempt: state.OutcomeApproved, Next: Checkpoint},
				Counters: counters(func(c *Counters) {
					c.Noop, c.TreeHash, c.Attempts, c.SameError, c.NoProgress, c.LastProgressTick = 0, "tree1", 5, 0, 0, 7
				}),
				Attempt: approved, Events: evs(attemptEv(approved))}},

		// no verify commands, succeeded without the signal: incomplete.
		{"no verify, no completion signal: incomplete, no retry; an unchanged tree extends noop and no_progress", Implement,
			call(func(f *Facts) { f.Guard.Tree = "tree0" }), baseRun(), bare,
			Decision{Event: Event{Outcome: AgentSucceeded}, Step: Step{Attempt: state.OutcomeIncomplete, Next: Implement},
				Counters: counters(func(c *Counters) { c.Noop, c.Attempts, c.NoProgress = 2, 5, 3 }),
				Attempt:  incomplete, Events: evs(attemptEv(incomplete))}},

		// the agent exited non-zero, reported is_error, or said
		// RUNR_STATUS: failed: failed, retry.
		{"agent exited non-zero: failed, retry; a new signature sets same_error to 1, progress resets no_progress", Implement,
			call(func(f *Facts) { f.Process.ExitCode, f.Process.Tail = 2, []byte(exitText+"\n") }), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: AgentFailed}, Step: Step{Attempt: state.OutcomeFailed, Retry: true, Next: Implement},
				Counters: counters(func(c *Counters) {
					c.Noop, c.TreeHash, c.Attempts, c.Retries, c.SameError, c.LastErrorSignature, c.NoProgress, c.LastProgressTick = 0, "tree1", 5, 2, 1, exitSig, 0, 7
				}),
				Attempt: exitFailed,
				Failure: &state.Failure{Tick: 7, Phase: state.PhaseImplement, Command: agentProg, ExitCode: 2, Tail: exitText, Signature: exitSig, Log: implLog},
				Events:  evs(attemptEv(exitFailed)), ErrEvent: &stopconditions.ErrorEvent{Source: stopconditions.SourceAgent, Text: exitText}}},
		{"agent reported is_error with exit 0: failed; the same signature again increments same_error", Implement,
			call(func(f *Facts) { f.Agent.IsError, f.Agent.ErrorText, f.Guard.Tree = true, "API Error: 500", "tree0" }),
			runWith(func(r *Run) { r.LastErrorSignature = isErrSig }), verifyOnly,
			Decision{Event: Event{Outcome: AgentFailed}, Step: Step{Attempt: state.OutcomeFailed, Retry: true, Next: Implement},
				Counters: counters(func(c *Counters) {
					c.LastErrorSignature, c.Noop, c.Attempts, c.Retries, c.SameError, c.NoProgress = isErrSig, 2, 5, 2, 3, 3
				}),
				Attempt: isErrFailed,
				Failure: &state.Failure{Tick: 7, Phase: state.PhaseImplement, Command: agentProg, Tail: "API Error: 500", Signature: isErrSig, Log: implLog},
				Events:  evs(attemptEv(isErrFailed)), ErrEvent: &stopconditions.ErrorEvent{Source: stopconditions.SourceAgent, Text: "API Error: 500"}}},
		{"agent said RUNR_STATUS: failed: failed", Implement,
			call(func(f *Facts) { f.Agent.Signal, f.Process.Tail = agents.SignalFailed, []byte(statusText+"\n") }), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: AgentFailed}, Step: Step{Attempt: state.OutcomeFailed, Retry: true, Next: Implement},
				Counters: counters(func(c *Counters) {
					c.Noop, c.TreeHash, c.Attempts, c.Retries, c.SameError, c.LastErrorSignature, c.NoProgress, c.LastProgressTick = 0, "tree1", 5, 2, 1, statusSig, 0, 7
				}),
				Attempt: statusFailed,
				Failure: &state.Failure{Tick: 7, Phase: state.PhaseImplement, Command: agentProg, Tail: statusText, Signature: statusSig, Log: implLog},
				Events:  evs(attemptEv(statusFailed)), ErrEvent: &stopconditions.ErrorEvent{Source: stopconditions.SourceAgent, Text: statusText}}},

		// the agent said RUNR_STATUS: blocked: stop worker_blocked.
		{"agent said RUNR_STATUS: blocked: stop worker_blocked, no retry counted", Implement,
			call(func(f *Facts) {
				f.Agent.Signal, f.Agent.SignalText = agents.SignalBlocked, "need the staging credentials"
			}), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: AgentBlocked}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.WorkerBlocked},
				Stop:     stopAt(Implement, stopreasons.Stop{Code: stopreasons.WorkerBlocked, Condition: "RUNR_STATUS", Message: "need the staging credentials"}),
				Counters: changedTree, Attempt: stopped("need the staging credentials", true)}},

		// the agent ran past agent.timeout / showed no sign of life.
		{"agent ran past agent.timeout: stop worker_timeout", Implement,
			call(func(f *Facts) {
				f.Process, f.Guard = proc.Result{TimedOut: true, ExitCode: -1, Duration: 10*time.Minute + 400*time.Millisecond}, nil
			}),
			baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: AgentTimedOut}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.WorkerTimeout},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.WorkerTimeout, Condition: "agent.timeout", Value: "10m", Threshold: "10m",
					Message: "the agent call ran past agent.timeout (10m)"}),
				Counters: baseCounters(), Attempt: stopped("", false)}},
		{"no sign of life from the call for agent.idle_timeout: stop stalled, with what was last seen and when", Implement,
			call(func(f *Facts) {
				f.Process, f.Guard = proc.Result{Idle: true, ExitCode: -1, Duration: 3 * time.Minute, LastSign: proc.SignCPU, LastSignAt: t0.Add(-2 * time.Minute)}, nil
			}),
			baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: AgentStalled}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.Stalled},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.Stalled, Condition: "agent.idle_timeout", Threshold: "2m",
					Message: "the agent's call showed no sign of life (output, CPU time, I/O or a change in its processes) for 2m; last seen: CPU time at 2026-11-21T22:58:00Z",
					Details: &stopreasons.StopDetails{LastSign: proc.SignCPU, LastSignAt: "2026-11-21T22:58:00Z"}}),
				Counters: baseCounters(), Attempt: stopped("", false)}},

		// the agent hit a rate or usage limit / could not authenticate.
		{"rate limit that resets within resume.max_wait: stop worker_rate_limited, no switch", Implement,
			call(func(f *Facts) {
				f.Agent = agents.Result{Class: agents.ClassRateLimit, Limit: agents.LimitRate, ResetAt: t0.Add(time.Hour), ErrorText: "429 Too Many Requests"}
			}), baseRun(), withFallback,
			Decision{Event: Event{Outcome: AgentRateLimited}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.WorkerRateLimited},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.WorkerRateLimited, Condition: "agent",
					Message: "the agent hit a rate or usage limit (rate); it resets at 2026-11-22T00:00:00Z",
					Details: &stopreasons.StopDetails{AgentError: "429 Too Many Requests", LimitKind: "rate", ResetAt: "2026-11-22T00:00:00Z"}}),
				Counters: changedTree, Attempt: stopped("429 Too Many Requests", true)}},
		{"usage window with no reset time, a fallback agent left: the decision asks for the switch", Implement,
			call(func(f *Facts) { f.Agent = window }), baseRun(), withFallback,
			Decision{Switch: &Switch{Reason: state.SwitchRateLimited, Why: "usage window limit with no reset time"}}},
		{"switched to the fallback agent: the same milestone again, no retry, and the unchanged tree is no noop", Implement,
			call(func(f *Facts) {
				f.Agent, f.Guard.Tree, f.Switch = window, "tree0", &SwitchFacts{Switched: true, From: claude, To: codex}
			}), baseRun(), withFallback,
			Decision{Event: Event{Outcome: AgentSwitched}, Step: Step{Attempt: state.OutcomeSwitched, Next: Implement},
				Counters: baseCounters(), Attempt: switched, Events: evs(attemptEv(switched))}},
		{"no fallback agent could be used: stop worker_rate_limited, saying so; the unchanged tree counts", Implement,
			call(func(f *Facts) { f.Agent, f.Guard.Tree, f.Switch = window, "tree0", &SwitchFacts{From: claude} }), baseRun(), withFallback,
			Decision{Event: Event{Outcome: AgentRateLimited}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.WorkerRateLimited},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.WorkerRateLimited, Condition: "agent",
					Message: "the agent hit a rate or usage limit (usage_window); no fallback agent left to switch to (agent.fallback)",
					Details: &stopreasons.StopDetails{AgentError: "usage limit reached", LimitKind: "usage_window"}}),
				Counters: counters(func(c *Counters) { c.Noop = 2 }), Attempt: stopped("usage limit reached", false)}},
		{"usage window without fallback agents: stop worker_rate_limited, no switch asked for", Implement,
			call(func(f *Facts) { f.Agent = window }), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: AgentRateLimited}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.WorkerRateLimited},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.WorkerRateLimited, Condition: "agent",
					Message: "the agent hit a rate or usage limit (usage_window)",
					Details: &stopreasons.StopDetails{AgentError: "usage limit reached", LimitKind: "usage_window"}}),
				Counters: changedTree, Attempt: stopped("usage limit reached", true)}},
		{"agent could not authenticate: stop worker_auth_failed", Implement,
			call(func(f *Facts) {
				f.Agent = agents.Result{Class: agents.ClassAuth, ErrorText: "Invalid API key\nPlease run /login"}
			}), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: AgentAuthFailed}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.WorkerAuthFailed},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.WorkerAuthFailed, Condition: "agent", Message: "Invalid API key",
					Details: &stopreasons.StopDetails{AgentError: "Invalid API key"}}),
				Counters: changedTree, Attempt: stopped("Invalid API key\nPlease run /login", true)}},

		// the agent stopped itself on a cost cap runr passed it; the spend
		// watch stopped the call on a budget.
		{"agent stopped itself on the cost cap: stop budget_exceeded", Implement,
			call(func(f *Facts) {
				f.Agent = agents.Result{Class: agents.ClassBudget, ErrorText: "Exceeded USD budget (2)"}
			}), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: AgentCostCap}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.BudgetExceeded},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.BudgetExceeded, Condition: "max_cost_usd", Value: 1.5, Threshold: 2.0,
					Message: "the agent stopped on the cost cap: $1.50 of $2.00"}),
				Counters: changedTree, Attempt: stopped("Exceeded USD budget (2)", true)}},
		{"the spend watch stopped the call on max_cost_usd: stop budget_exceeded", Implement,
			call(func(f *Facts) { f.Spend, f.Guard = "budget.max_cost_usd", nil }), runWith(func(r *Run) { r.CostEstimated = true }), verifyOnly,
			Decision{Event: Event{Outcome: AgentCostCap}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.BudgetExceeded},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.BudgetExceeded, Condition: "budget.max_cost_usd", Value: 1.5, Threshold: 2.0,
					Message: "the agent call was stopped mid-call: cost $1.50 reached the $2.00 budget (estimated from tokens)"}),
				Counters: baseCounters(), Attempt: stopped("", false),
				Events: evs(state.BudgetStopEvent{Condition: "budget.max_cost_usd", Value: 1.5, Threshold: 2})}},
		{"the spend watch stopped the call on max_tokens: stop budget_exceeded", Implement,
			call(func(f *Facts) { f.Spend, f.Guard = "budget.max_tokens", nil }), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: AgentCostCap}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.BudgetExceeded},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.BudgetExceeded, Condition: "budget.max_tokens", Value: int64(1200), Threshold: int64(5000),
					Message: "the agent call was stopped mid-call: 1200 tokens reached the budget of 5000"}),
				Counters: baseCounters(), Attempt: stopped("", false),
				Events: evs(state.BudgetStopEvent{Condition: "budget.max_tokens", Value: 1200, Threshold: 5000})}},

		// the time budget ran out while a process ran; SIGINT / SIGTERM.
		{"time budget ran out during the call: stop timeout", Implement,
			call(func(f *Facts) {
				f.Process, f.Guard = proc.Result{Canceled: true, ExitCode: -1}, nil
				f.At = Reading{DeadlinePassed: true, Elapsed: 30*time.Minute + 200*time.Millisecond}
			}), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: Interrupted, Code: stopreasons.Timeout}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.Timeout},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.Timeout, Condition: "budget.time", Value: "30m", Threshold: "30m",
					Message: "the time budget of 30m ran out"}),
				Counters: baseCounters(), Attempt: stopped("", false)}},
		{"SIGINT during the call: stop user_stopped", Implement,
			call(func(f *Facts) {
				f.Process, f.Guard, f.At = proc.Result{Canceled: true, ExitCode: -1}, nil, Reading{Signal: &signalStop{code: sigint, name: intName}}
			}), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: Interrupted, Code: stopreasons.UserStopped}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.UserStopped},
				Stop:     stopAt(Implement, stopreasons.Stop{Code: stopreasons.UserStopped, Condition: "signal", Message: "SIGINT"}),
				Counters: baseCounters(), Attempt: stopped("", false)}},

		// the agent's program is missing; runr's own failures.
		{"agent program missing, no fallback agent: stop worker_not_found", Implement,
			call(func(f *Facts) { f.Err, f.Process, f.Guard = missing, proc.Result{}, nil }), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: Fault, Code: stopreasons.WorkerNotFound}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.WorkerNotFound},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.WorkerNotFound, Condition: "agent.command", Message: missing.Error(),
					Details: &stopreasons.StopDetails{Command: agentProg}}),
				Counters: baseCounters(), Attempt: stopped("", false)}},
		{"agent program missing, a fallback agent left: the decision asks for the switch", Implement,
			call(func(f *Facts) { f.Err, f.Process, f.Guard = missing, proc.Result{}, nil }), baseRun(), withFallback,
			Decision{Switch: &Switch{Reason: state.SwitchNotFound, Why: missing.Error()}}},
		{"agent program missing, switched: implement again with the fallback agent", Implement,
			call(func(f *Facts) {
				f.Err, f.Process, f.Guard, f.Switch = missing, proc.Result{}, nil, &SwitchFacts{Switched: true, From: claude, To: codex}
			}), baseRun(), withFallback,
			Decision{Event: Event{Outcome: AgentSwitched}, Step: Step{Attempt: state.OutcomeSwitched, Next: Implement},
				Counters: baseCounters(), Attempt: missingSwitched, Events: evs(attemptEv(missingSwitched))}},
		{"runr could not write the prompt: stop internal_error; the attempt judged before stays as it was", Implement,
			Facts{Command: agentProg, Now: t0, Err: errors.New("write prompts/tick-0007.md: permission denied")},
			runWith(func(r *Run) { r.Attempt = closedEarlier }), verifyOnly,
			Decision{Event: Event{Outcome: Fault, Code: stopreasons.InternalError}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.InternalError},
				Stop:     stopAt(Implement, stopreasons.Stop{Code: stopreasons.InternalError, Message: "write prompts/tick-0007.md: permission denied"}),
				Counters: baseCounters(), Attempt: closedEarlier}},
		{"a full disk: stop environment_invalid", Implement,
			Facts{Command: agentProg, Now: t0, Err: fmt.Errorf("write prompt: %w", syscall.ENOSPC)}, baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: Fault, Code: stopreasons.EnvironmentInvalid}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.EnvironmentInvalid},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.EnvironmentInvalid,
					Message: environmentError(fmt.Errorf("write prompt: %w", syscall.ENOSPC), "").Error()}),
				Counters: baseCounters(), Attempt: stopped("", false)}},
		{"the sandbox helper failed: stop environment_invalid", Implement,
			call(func(f *Facts) {
				f.Sandbox, f.Process, f.Guard = "runr sandbox: landlock: operation not permitted", proc.Result{ExitCode: 125}, nil
			}), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: Fault, Code: stopreasons.EnvironmentInvalid}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.EnvironmentInvalid},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.EnvironmentInvalid, Condition: "sandbox.mode",
					Message: "runr sandbox: landlock: operation not permitted"}),
				Counters: baseCounters(), Attempt: stopped("", false)}},
		{"the working directory is gone: the fault is environment_invalid", Implement,
			Facts{Command: agentProg, Now: t0, Err: errors.New("chdir /repo: no such file or directory"), DirGone: true}, baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: Fault, Code: stopreasons.EnvironmentInvalid}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.EnvironmentInvalid},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.EnvironmentInvalid,
					Message: "the run's working directory /repo is gone (chdir /repo: no such file or directory); restore it, then run `runr resume r1`"}),
				Counters: baseCounters(), Attempt: stopped("", false)}},
	}
}

func guardRows() []decideRow {
	stopped := attempt(func(a *state.Attempt) { a.Outcome, a.Progress = state.OutcomeStopped, true })
	changedTree := counters(func(c *Counters) { c.Noop, c.TreeHash = 0, "tree1" })
	guarded := func(change func(g *GuardFacts)) Facts {
		return call(func(f *Facts) { change(f.Guard) })
	}
	scopeFiles := []string{"secrets/key.pem", "docs/x.md"}
	scopeRules := []string{"scope.deny secrets/**", "scope.allow"}
	badGlob := fmt.Errorf("scope.allow: %w \"[\": check its brackets", guard.ErrBadGlob)
	deadline := fmt.Errorf("git status: %w", context.DeadlineExceeded)
	return []decideRow{
		// a guard found a violation: stop guard_violation /
		// lockfile_violation.
		{"files outside the scope: stop guard_violation", Implement,
			guarded(func(g *GuardFacts) {
				g.Scope = []guard.Violation{{Path: "secrets/key.pem", Rule: guard.RuleDeny, Pattern: "secrets/**"}, {Path: "docs/x.md", Rule: guard.RuleAllow}}
				g.Committed = []string{"docs/x.md"}
			}), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: ScopeViolated}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.GuardViolation},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.GuardViolation, Condition: "scope.deny, scope.allow",
					Message: `2 changed files outside the scope: "secrets/key.pem" (scope.deny secrets/**), "docs/x.md" (scope.allow, committed)`,
					Details: &stopreasons.StopDetails{Files: scopeFiles, Rules: scopeRules, Committed: []string{"docs/x.md"}}}),
				Counters: changedTree, Attempt: stopped,
				Events: evs(state.GuardEvent{Rule: "scope", Files: scopeFiles, Rules: scopeRules})}},
		{"git's own hooks changed: stop guard_violation", Implement,
			guarded(func(g *GuardFacts) {
				g.Meta = []guard.Violation{{Path: ".git/hooks/pre-commit", Rule: guard.RuleGitMetadata}}
			}), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: ScopeViolated}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.GuardViolation},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.GuardViolation, Condition: guard.RuleGitMetadata,
					Message: `1 changed file outside the scope: ".git/hooks/pre-commit" (git-metadata) (git-metadata: git's own config, info and hooks files, replace refs and the shallow file, which can make git run programs or hide changes, are outside every scope)`,
					Details: &stopreasons.StopDetails{Files: []string{".git/hooks/pre-commit"}, Rules: []string{guard.RuleGitMetadata}}}),
				Counters: changedTree, Attempt: stopped,
				Events: evs(state.GuardEvent{Rule: "scope", Files: []string{".git/hooks/pre-commit"}, Rules: []string{guard.RuleGitMetadata}})}},
		{"a protected file deleted: stop guard_violation", Implement,
			guarded(func(g *GuardFacts) {
				g.Protected = []guard.Violation{{Path: "README.md", Rule: stopreasons.RuleProtect, Pattern: "*.md", Change: guard.ChangeDeleted}}
			}), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: ScopeViolated}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.GuardViolation},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.GuardViolation, Condition: stopreasons.RuleProtect,
					Message: `1 protected file changed: "README.md" (protect *.md, ` + guard.ChangeDeleted + `); ` + stopreasons.ProtectAdvice,
					Details: &stopreasons.StopDetails{Files: []string{"README.md"}, Rules: []string{"protect *.md"}}}),
				Counters: changedTree, Attempt: stopped,
				Events: evs(state.GuardEvent{Rule: stopreasons.RuleProtect, Files: []string{"README.md"}, Rules: []string{"protect *.md"}})}},
		{"a lockfile changed: stop lockfile_violation", Implement,
			guarded(func(g *GuardFacts) { g.Lockfiles = []string{"package-lock.json"} }), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: LockfileChanged}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.LockfileViolation},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.LockfileViolation, Condition: "scope.lockfiles",
					Message: `lockfile(s) changed without --allow-deps: "package-lock.json" (scope.lockfiles)`,
					Details: &stopreasons.StopDetails{Files: []string{"package-lock.json"}, Rules: []string{"scope.lockfiles"}}}),
				Counters: changedTree, Attempt: stopped,
				Events: evs(state.GuardEvent{Rule: "lockfiles", Files: []string{"package-lock.json"}})}},
		{"a lockfile changed with --allow-deps: the call is judged as any", Implement,
			guarded(func(g *GuardFacts) { g.Lockfiles = []string{"package-lock.json"} }), baseRun(), rulesWith(verifyOnly, func(r *Rules) { r.AllowDeps = true }),
			Decision{Event: Event{Outcome: AgentSucceeded}, Step: Step{Next: Verify}, Counters: changedTree,
				Attempt: attempt(func(a *state.Attempt) { a.Progress = true })}},
		{"a scope glob is invalid: stop config_invalid; the tree read before counts", Implement,
			guarded(func(g *GuardFacts) { g.Err = badGlob }), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: Fault, Code: stopreasons.ConfigInvalid}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.ConfigInvalid},
				Stop:     stopAt(Implement, stopreasons.Stop{Code: stopreasons.ConfigInvalid, Message: badGlob.Error()}),
				Counters: changedTree, Attempt: stopped}},
		{"the guards' git call ran into the time budget: stop timeout", Implement,
			call(func(f *Facts) {
				f.Guard = &GuardFacts{Err: deadline, At: Reading{DeadlinePassed: true, Elapsed: 30 * time.Minute}}
			}), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: Interrupted, Code: stopreasons.Timeout}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.Timeout},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.Timeout, Condition: "budget.time", Value: "30m", Threshold: "30m",
					Message: "the time budget of 30m ran out"}),
				Counters: baseCounters(), Attempt: attempt(func(a *state.Attempt) { a.Outcome = state.OutcomeStopped })}},
		{"the guards' git call failed: stop internal_error", Implement,
			call(func(f *Facts) { f.Guard = &GuardFacts{Err: errors.New("git status: exit status 128")} }), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: Fault, Code: stopreasons.InternalError}, Step: Step{Attempt: state.OutcomeStopped, Stop: stopreasons.InternalError},
				Stop:     stopAt(Implement, stopreasons.Stop{Code: stopreasons.InternalError, Message: "git status: exit status 128"}),
				Counters: baseCounters(), Attempt: attempt(func(a *state.Attempt) { a.Outcome = state.OutcomeStopped })}},
	}
}

func verifyRows() []decideRow {
	verifyReview := rulesWith(verifyOnly, func(r *Rules) { r.Review = true })
	skip := rulesWith(verifyOnly, func(r *Rules) { r.Skip = true })
	wasFailing := runWith(func(r *Run) { r.Checks = []state.CheckResult{{Command: goTest, ExitCode: 1}} })
	passedBoth := []state.CheckResult{{Command: goTest, Passed: true}, {Command: goVet, Passed: true}}
	approved := attempt(func(a *state.Attempt) { a.Outcome, a.Progress = state.OutcomeApproved, true })
	progressed := attempt(func(a *state.Attempt) { a.Progress = true })

	vetTail := "x.go:3: unreachable code"
	vetSig := stopconditions.Signature(goVet, vetTail)
	vetFailed := attempt(func(a *state.Attempt) {
		a.Outcome, a.ErrorSignature, a.Error = state.OutcomeFailed, vetSig, "go vet ./... exited 1"
	})
	testSig := stopconditions.Signature(goTest, "FAIL")
	testFailed := attempt(func(a *state.Attempt) {
		a.Outcome, a.ErrorSignature, a.Error = state.OutcomeFailed, testSig, "go test ./... exited 1"
	})
	sigterm, termName := stopreasons.ForSignal(syscall.SIGTERM)

	return []decideRow{
		{"verify passed, no review: approved; a check that went from failing to passing is progress; test_failure_streak ends", Verify,
			checks(CheckFacts{Command: goTest}, CheckFacts{Command: goVet}), wasFailing, verifyOnly,
			Decision{Event: Event{Outcome: VerifyPassed}, Step: Step{Attempt: state.OutcomeApproved, Next: Checkpoint},
				Counters: counters(func(c *Counters) {
					c.Attempts, c.SameError, c.NoProgress, c.LastProgressTick, c.TestFailStreak = 5, 0, 0, 7, 0
				}),
				Attempt: approved, Checks: passedBoth, SetChecks: true, Events: evs(attemptEv(approved)), Verify: "passed"}},
		{"verify passed, review configured: review next", Verify,
			checks(CheckFacts{Command: goTest}, CheckFacts{Command: goVet}), wasFailing, verifyReview,
			Decision{Event: Event{Outcome: VerifyPassed}, Step: Step{Next: Review},
				Counters: counters(func(c *Counters) { c.TestFailStreak = 0 }),
				Attempt:  progressed, Checks: passedBoth, SetChecks: true, Verify: "passed"}},
		{"a verify command failed: failed, retry along verify->implement; test_failure_streak and no_progress grow", Verify,
			checks(CheckFacts{Command: goTest}, CheckFacts{Command: goVet, Process: proc.Result{ExitCode: 1, Tail: []byte(vetTail + "\n")}}), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: VerifyFailed}, Step: Step{Attempt: state.OutcomeFailed, Retry: true, Edge: edgeVerify, Next: Implement},
				Counters: counters(func(c *Counters) {
					c.Attempts, c.Retries, c.SameError, c.LastErrorSignature, c.NoProgress, c.TestFailStreak = 5, 2, 1, vetSig, 3, 2
					c.Edges, c.MilestoneEdges = map[string]int{edgeVerify: 2}, map[string]int{edgeVerify: 2}
				}),
				Attempt: vetFailed,
				Failure: &state.Failure{Tick: 7, Phase: state.PhaseVerify, Command: goVet, ExitCode: 1, Tail: vetTail, Signature: vetSig, Log: verifyLog},
				Checks:  []state.CheckResult{{Command: goTest, Passed: true}, {Command: goVet, ExitCode: 1}}, SetChecks: true,
				Events: evs(attemptEv(vetFailed)), ErrEvent: &stopconditions.ErrorEvent{Source: stopconditions.SourceVerify, Text: vetTail},
				Verify: "failed"}},
		{"verify failed in skip mode past the retries: milestone failed, go on; consecutive_fails grows, the milestone's edges and notes start afresh", Verify,
			checks(CheckFacts{Command: goTest, Process: proc.Result{ExitCode: 1, Tail: []byte("FAIL\n")}}), runWith(func(r *Run) { r.Retries = 3 }), skip,
			Decision{Event: Event{Outcome: VerifyFailed},
				Step: Step{Attempt: state.OutcomeFailed, Retry: true, Edge: edgeVerify, Milestone: state.MilestoneFailed, NextMilestone: true, Next: Implement},
				Counters: counters(func(c *Counters) {
					c.Retries, c.Attempts, c.SameError, c.LastErrorSignature, c.NoProgress, c.TestFailStreak, c.ConsecutiveFails = 4, 5, 1, testSig, 3, 2, 2
					c.Edges, c.MilestoneEdges, c.ReviewNotesHash = map[string]int{}, map[string]int{edgeVerify: 2}, ""
				}),
				Attempt: testFailed,
				Failure: &state.Failure{Tick: 7, Phase: state.PhaseVerify, Command: goTest, ExitCode: 1, Tail: "FAIL", Signature: testSig, Log: verifyLog},
				Checks:  []state.CheckResult{{Command: goTest, ExitCode: 1}}, SetChecks: true,
				Events:   evs(attemptEv(testFailed), state.MilestoneFailedEvent{Milestone: 2, Retries: 4}),
				ErrEvent: &stopconditions.ErrorEvent{Source: stopconditions.SourceVerify, Text: "FAIL"}, Verify: "failed"}},
		{"a verify command ran past verify.timeout: stop verification_timeout, the attempt left open", Verify,
			checks(CheckFacts{Command: goTest, Process: proc.Result{TimedOut: true, ExitCode: -1, Tail: []byte("=== RUN TestSlow\n")}}), baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: VerifyTimedOut}, Step: Step{Stop: stopreasons.VerificationTimeout},
				Stop: stopAt(Verify, stopreasons.Stop{Code: stopreasons.VerificationTimeout, Condition: "verify.timeout", Threshold: "5m",
					Message: `"go test ./..." ran past verify.timeout (5m)`, Details: &stopreasons.StopDetails{Command: goTest}}),
				Counters: baseCounters(), Attempt: baseAttempt(),
				Failure: &state.Failure{Tick: 7, Phase: state.PhaseVerify, Command: goTest, ExitCode: -1, Tail: "=== RUN TestSlow", Log: verifyLog},
				Verify:  "timed out"}},
		{"time budget ran out during a check: stop timeout, the attempt left open", Verify,
			checks(CheckFacts{Command: goTest, Process: proc.Result{Canceled: true, ExitCode: -1}, At: Reading{DeadlinePassed: true, Elapsed: 31 * time.Minute}}),
			baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: Interrupted, Code: stopreasons.Timeout}, Step: Step{Stop: stopreasons.Timeout},
				Stop: stopAt(Verify, stopreasons.Stop{Code: stopreasons.Timeout, Condition: "budget.time", Value: "31m", Threshold: "30m",
					Message: "the time budget of 30m ran out"}),
				Counters: baseCounters(), Attempt: baseAttempt()}},
		{"SIGTERM during a check: stop terminated, the attempt left open", Verify,
			checks(CheckFacts{Command: goTest, Process: proc.Result{Canceled: true, ExitCode: -1}, At: Reading{Signal: &signalStop{code: sigterm, name: termName}}}),
			baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: Interrupted, Code: stopreasons.Terminated}, Step: Step{Stop: stopreasons.Terminated},
				Stop:     stopAt(Verify, stopreasons.Stop{Code: stopreasons.Terminated, Condition: "signal", Message: "SIGTERM"}),
				Counters: baseCounters(), Attempt: baseAttempt()}},
		{"runr could not start the second check: stop internal_error; the first check's progress stays", Verify,
			Facts{Log: verifyLog, Now: t0, Checks: []CheckFacts{{Command: goTest}}, Err: errors.New("open logs/tick-0007-verify.log: bad file descriptor")},
			wasFailing, verifyOnly,
			Decision{Event: Event{Outcome: Fault, Code: stopreasons.InternalError}, Step: Step{Stop: stopreasons.InternalError},
				Stop:     stopAt(Verify, stopreasons.Stop{Code: stopreasons.InternalError, Message: "open logs/tick-0007-verify.log: bad file descriptor"}),
				Counters: baseCounters(), Attempt: progressed}},
	}
}

// untestedRows are verifies whose commands all passed, judged on what
// they showed they tested (verify.require_tests, verify.coverage).
func untestedRows() []decideRow {
	strict := rulesWith(verifyOnly, func(r *Rules) { r.RequireTests, r.MinChanged = config.RequireTestsAuto, 0.8 })
	passed := []state.CheckResult{{Command: goTest, Passed: true}}
	tested := func(ran map[string]int, cov *coverage.Verdict) Facts {
		f := checks(CheckFacts{Command: goTest})
		f.Tested = &TestedFacts{Tests: coverage.Tests{Ran: ran}, Coverage: cov}
		return f
	}
	low := &coverage.Verdict{Executable: 10, Run: 3, Uncovered: []stopreasons.Uncovered{{File: "calc.go", Lines: "8-12"}, {File: "more.go", Lines: "1,3-4"}}}
	lowText := "verify passed, but ran 3 of the 10 changed executable lines (30%), below verify.coverage.min_changed 80%.\n" +
		"Changed lines that no verify command ran:\n  calc.go: lines 8-12\n  more.go: lines 1,3-4\nAdd tests that call this code, so that the verify commands run it."
	lowSig := stopconditions.Signature("verify.coverage.min_changed", "coverage calc.go more.go")
	covered := 0.3
	lowUntested := &stopreasons.Untested{Kind: stopreasons.UntestedCoverage, Covered: &covered, MinChanged: 0.8,
		Uncovered: []stopreasons.Uncovered{{File: "calc.go", Lines: "8-12"}, {File: "more.go", Lines: "1,3-4"}}}
	noneText := "verify passed, but ran no test: go test reported 0 tests run. Add tests for the milestone's work, " +
		"or make the verify commands run them (a -run or -k filter that matches nothing runs none)."
	noneSig := stopconditions.Signature("verify.require_tests", "no_tests ")
	unknownText := "verify passed, but its output holds no summary of a test runner runr recognises (verify.require_tests: on): " +
		"make the verify commands run the tests with go test, pytest, cargo test, node --test, Jest or Vitest, or print a line \"N passed, N failed\"."
	failedWith := func(sig, text string) *state.Attempt {
		return attempt(func(a *state.Attempt) {
			a.Outcome, a.ErrorSignature, a.Error = state.OutcomeFailed, sig, firstLine(text, "")
		})
	}
	// A failed attempt of a verify that passed: retried along
	// verify->implement, no progress, but no failing test either.
	retried := func(sig string) Counters {
		return counters(func(c *Counters) {
			c.Attempts, c.Retries, c.SameError, c.LastErrorSignature, c.NoProgress, c.TestFailStreak = 5, 2, 1, sig, 3, 0
			c.Edges, c.MilestoneEdges = map[string]int{edgeVerify: 2}, map[string]int{edgeVerify: 2}
		})
	}
	approvedNow := attempt(func(a *state.Attempt) { a.Outcome = state.OutcomeApproved })
	approvedCounters := counters(func(c *Counters) {
		c.Attempts, c.SameError, c.NoProgress, c.LastProgressTick, c.TestFailStreak = 5, 0, 0, 7, 0
	})
	untested := func(kind, cond, sig, text string, u *stopreasons.Untested, ev state.UntestedEvent) Decision {
		a := failedWith(sig, text)
		return Decision{Event: Event{Outcome: VerifyUntested}, Step: Step{Attempt: state.OutcomeFailed, Retry: true, Edge: edgeVerify, Next: Implement},
			Counters: retried(sig), Attempt: a,
			Failure: &state.Failure{Tick: 7, Phase: state.PhaseVerify, Command: cond, Tail: text, Signature: sig, Log: verifyLog, Untested: u},
			Checks:  passed, SetChecks: true, Events: evs(ev, attemptEv(a)),
			ErrEvent: &stopconditions.ErrorEvent{Source: stopconditions.SourceVerify, Text: text}, Verify: "passed, " + kind}
	}
	return []decideRow{
		{"verify passed but ran fewer changed lines than min_changed: failed, retry, the files and ranges as feedback", Verify,
			tested(map[string]int{coverage.RunnerGo: 1}, low), baseRun(), strict,
			untested(stopreasons.UntestedCoverage, "verify.coverage.min_changed", lowSig, lowText, lowUntested,
				state.UntestedEvent{Untested: *lowUntested, Executable: 10, Run: 3})},
		{"verify passed and every recognised runner ran no test: failed, retry, kind no_tests", Verify,
			tested(map[string]int{coverage.RunnerGo: 0}, &coverage.Verdict{}), baseRun(), strict,
			untested(stopreasons.UntestedNoTests, "verify.require_tests", noneSig, noneText, &stopreasons.Untested{Kind: stopreasons.UntestedNoTests},
				state.UntestedEvent{Untested: stopreasons.Untested{Kind: stopreasons.UntestedNoTests}})},
		{"require_tests on and no runner recognised: failed, retry, kind no_tests", Verify,
			tested(map[string]int{}, nil), baseRun(), rulesWith(verifyOnly, func(r *Rules) { r.RequireTests = config.RequireTestsOn }),
			untested(stopreasons.UntestedNoTests, "verify.require_tests", noneSig, unknownText, &stopreasons.Untested{Kind: stopreasons.UntestedNoTests},
				state.UntestedEvent{Untested: stopreasons.Untested{Kind: stopreasons.UntestedNoTests}})},
		{"require_tests auto and no runner recognised: approved", Verify,
			tested(map[string]int{}, nil), baseRun(), strict,
			Decision{Event: Event{Outcome: VerifyPassed}, Step: Step{Attempt: state.OutcomeApproved, Next: Checkpoint},
				Counters: approvedCounters, Attempt: approvedNow, Checks: passed, SetChecks: true, Events: evs(attemptEv(approvedNow)), Verify: "passed"}},
		{"require_tests off and no test ran: approved as before", Verify,
			tested(map[string]int{coverage.RunnerGo: 0}, nil), baseRun(), rulesWith(verifyOnly, func(r *Rules) { r.RequireTests = config.RequireTestsOff }),
			Decision{Event: Event{Outcome: VerifyPassed}, Step: Step{Attempt: state.OutcomeApproved, Next: Checkpoint},
				Counters: approvedCounters, Attempt: approvedNow, Checks: passed, SetChecks: true, Events: evs(attemptEv(approvedNow)), Verify: "passed"}},
		{"verify ran enough of the changed lines: approved", Verify,
			tested(map[string]int{coverage.RunnerGo: 2}, &coverage.Verdict{Executable: 10, Run: 8}), baseRun(), strict,
			Decision{Event: Event{Outcome: VerifyPassed}, Step: Step{Attempt: state.OutcomeApproved, Next: Checkpoint},
				Counters: approvedCounters, Attempt: approvedNow, Checks: passed, SetChecks: true, Events: evs(attemptEv(approvedNow)), Verify: "passed"}},
		{"a change with no executable line: approved whatever min_changed", Verify,
			tested(map[string]int{coverage.RunnerGo: 2}, &coverage.Verdict{}), baseRun(), strict,
			Decision{Event: Event{Outcome: VerifyPassed}, Step: Step{Attempt: state.OutcomeApproved, Next: Checkpoint},
				Counters: approvedCounters, Attempt: approvedNow, Checks: passed, SetChecks: true, Events: evs(attemptEv(approvedNow)), Verify: "passed"}},
	}
}

func reviewRows() []decideRow {
	verifyReview := rulesWith(verifyOnly, func(r *Rules) { r.Review = true })
	skipReview := rulesWith(verifyReview, func(r *Rules) { r.Skip = true })
	progressed := runWith(func(r *Run) { r.Attempt.Progress = true })

	approved := attempt(func(a *state.Attempt) { a.Outcome = state.OutcomeApproved })
	changes := "please add tests"
	changed := attempt(func(a *state.Attempt) {
		a.Outcome, a.Error, a.Progress = state.OutcomeRejected, "the review requested changes", true
	})
	changedAgain := attempt(func(a *state.Attempt) { a.Outcome, a.Error = state.OutcomeRejected, "the review requested changes" })
	rejected := attempt(func(a *state.Attempt) { a.Outcome, a.Error = state.OutcomeRejected, "the review rejected the work" })
	failedReview := func(why string) (Counters, *state.Attempt, *state.Failure) {
		sig := stopconditions.Signature(reviewCmd, why)
		return counters(func(c *Counters) {
				c.Attempts, c.Retries, c.SameError, c.LastErrorSignature, c.NoProgress = 5, 2, 1, sig, 3
				c.Edges, c.MilestoneEdges = map[string]int{edgeVerify: 1, edgeReview: 1}, map[string]int{edgeVerify: 1, edgeReview: 1}
			}),
			attempt(func(a *state.Attempt) { a.Outcome, a.ErrorSignature, a.Error = state.OutcomeFailed, sig, why }),
			&state.Failure{Tick: 7, Phase: state.PhaseReview, Command: reviewCmd, Signature: sig, Log: reviewLog}
	}
	row := func(name string, p proc.Result, why string) decideRow {
		c, a, f := failedReview(why)
		f.ExitCode, f.Tail = p.ExitCode, proc.Tail(p.Tail, feedbackLines)
		return decideRow{name, Review, reviewed(p), baseRun(), verifyReview,
			Decision{Event: Event{Outcome: ReviewFailed}, Step: Step{Attempt: state.OutcomeFailed, Retry: true, Edge: edgeReview, Next: Implement},
				Counters: c, Attempt: a, Failure: f, Events: evs(attemptEv(a))}}
	}
	missing := fmt.Errorf("start %s: %w", reviewCmd, proc.ErrNotFound)
	sigterm, termName := stopreasons.ForSignal(syscall.SIGTERM)

	return []decideRow{
		{"the review approved: approved; the notes of the last request are forgotten", Review,
			reviewed(proc.Result{}), baseRun(), verifyReview,
			Decision{Event: Event{Outcome: ReviewApproved}, Step: Step{Attempt: state.OutcomeApproved, Next: Checkpoint},
				Counters: counters(func(c *Counters) {
					c.ReviewNotesHash, c.Attempts, c.SameError, c.NoProgress, c.LastProgressTick = "", 5, 0, 0, 7
				}),
				Attempt: approved, Events: evs(attemptEv(approved))}},
		{"the review requested changes: rejected, retry along review->implement; a review round counted", Review,
			reviewed(proc.Result{ExitCode: 1, Tail: []byte(changes + "\n")}), progressed, verifyReview,
			Decision{Event: Event{Outcome: ReviewChanges}, Step: Step{Attempt: state.OutcomeRejected, Retry: true, Edge: edgeReview, Next: Implement},
				Counters: counters(func(c *Counters) {
					c.ReviewNotesHash, c.ReviewRounds, c.Attempts, c.Retries, c.NoProgress, c.LastProgressTick = notesHash(changes), 1, 5, 2, 0, 7
					c.Edges, c.MilestoneEdges = map[string]int{edgeVerify: 1, edgeReview: 1}, map[string]int{edgeVerify: 1, edgeReview: 1}
				}),
				Attempt: changed,
				Failure: &state.Failure{Tick: 7, Phase: state.PhaseReview, Command: reviewCmd, ExitCode: 1, Tail: changes, Notes: changes, Log: reviewLog},
				Events:  evs(attemptEv(changed))}},
		{"the review requested the same changes again: a review loop for the stop rules", Review,
			reviewed(proc.Result{ExitCode: 1, Tail: []byte(changes + "\n")}),
			runWith(func(r *Run) { r.ReviewNotesHash, r.ReviewRounds = notesHash(changes), 1 }), verifyReview,
			Decision{Event: Event{Outcome: ReviewChanges}, Step: Step{Attempt: state.OutcomeRejected, Retry: true, Edge: edgeReview, Next: Implement},
				Counters: counters(func(c *Counters) {
					c.ReviewNotesHash, c.ReviewRounds, c.Attempts, c.Retries, c.NoProgress = notesHash(changes), 2, 5, 2, 3
					c.Edges, c.MilestoneEdges = map[string]int{edgeVerify: 1, edgeReview: 1}, map[string]int{edgeVerify: 1, edgeReview: 1}
				}),
				Attempt: changedAgain,
				Failure: &state.Failure{Tick: 7, Phase: state.PhaseReview, Command: reviewCmd, ExitCode: 1, Tail: changes, Notes: changes, Log: reviewLog},
				Events:  evs(attemptEv(changedAgain)), ReviewRepeated: true}},
		{"the review rejected: stop review_rejected, a resume implements again", Review,
			reviewed(proc.Result{ExitCode: 2, Tail: []byte("wrong approach\n")}), baseRun(), verifyReview,
			Decision{Event: Event{Outcome: ReviewRejected}, Step: Step{Attempt: state.OutcomeRejected, Retry: true, Stop: stopreasons.ReviewRejected, ResumeAt: Implement},
				Stop: stopAt(Implement, stopreasons.Stop{Code: stopreasons.ReviewRejected, Condition: "review.command", Message: "the review rejected milestone 2",
					Details: &stopreasons.StopDetails{Command: reviewCmd}}),
				Counters: counters(func(c *Counters) { c.Attempts, c.Retries, c.NoProgress = 5, 2, 3 }),
				Attempt:  rejected,
				Failure:  &state.Failure{Tick: 7, Phase: state.PhaseReview, Command: reviewCmd, ExitCode: 2, Tail: "wrong approach", Notes: "wrong approach", Log: reviewLog},
				Events:   evs(attemptEv(rejected))}},
		{"the review rejected in skip mode: milestone rejected, go on; consecutive_fails grows", Review,
			reviewed(proc.Result{ExitCode: 2, Tail: []byte("wrong approach\n")}), baseRun(), skipReview,
			Decision{Event: Event{Outcome: ReviewRejected},
				Step: Step{Attempt: state.OutcomeRejected, Retry: true, Milestone: state.MilestoneRejected, NextMilestone: true, Next: Implement},
				Counters: counters(func(c *Counters) {
					c.Attempts, c.Retries, c.NoProgress, c.ConsecutiveFails, c.Edges, c.ReviewNotesHash = 5, 2, 3, 2, map[string]int{}, ""
				}),
				Attempt: rejected,
				Failure: &state.Failure{Tick: 7, Phase: state.PhaseReview, Command: reviewCmd, ExitCode: 2, Tail: "wrong approach", Notes: "wrong approach", Log: reviewLog},
				Events:  evs(attemptEv(rejected))}},
		row("the review ran past verify.timeout: failed, not a request for changes",
			proc.Result{TimedOut: true, ExitCode: -1, Tail: []byte("reviewing...\n")}, "the review ran past verify.timeout (5m)"),
		row("the review was killed by a signal: failed", proc.Result{ExitCode: -1, Signal: "killed"}, "the review was ended by a signal (killed)"),
		row("the review exited 3: failed", proc.Result{ExitCode: 3, Tail: []byte("panic\n")}, "the review exited 3"),
		func() decideRow {
			// It was there at the start (the preflight refuses one that
			// is not): a review that could not run judged nothing.
			r := row("the review program went missing: a failed attempt, retried", proc.Result{}, "the review could not be run: "+missing.Error())
			r.facts = Facts{Command: reviewCmd, Log: reviewLog, Now: t0, Err: missing}
			return r
		}(),
		{"SIGTERM during the review: stop terminated, the attempt left open", Review,
			Facts{Command: reviewCmd, Log: reviewLog, Now: t0, Process: proc.Result{Canceled: true, ExitCode: -1}, At: Reading{Signal: &signalStop{code: sigterm, name: termName}}},
			baseRun(), verifyReview,
			Decision{Event: Event{Outcome: Interrupted, Code: stopreasons.Terminated}, Step: Step{Stop: stopreasons.Terminated},
				Stop:     stopAt(Review, stopreasons.Stop{Code: stopreasons.Terminated, Condition: "signal", Message: "SIGTERM"}),
				Counters: baseCounters(), Attempt: baseAttempt()}},
	}
}

func laterRows() []decideRow {
	judged := runWith(func(r *Run) { r.Attempt.Outcome = state.OutcomeApproved })
	judgedAttempt := attempt(func(a *state.Attempt) { a.Outcome = state.OutcomeApproved })
	finished := runWith(func(r *Run) { r.Milestone, r.Goal, r.Attempt = 3, "", nil })
	deadline := fmt.Errorf("git commit: %w", context.DeadlineExceeded)
	return []decideRow{
		{"checkpoint: milestone approved, next milestone; consecutive_fails ends, the milestone's edges and notes start afresh", Checkpoint,
			Facts{Now: t0}, judged, verifyOnly,
			Decision{Event: Event{Outcome: Checkpointed}, Step: Step{Milestone: state.MilestoneApproved, NextMilestone: true, Next: Implement},
				Counters: counters(func(c *Counters) { c.ConsecutiveFails, c.Edges, c.ReviewNotesHash = 0, map[string]int{}, "" }),
				Attempt:  judgedAttempt, Events: evs(state.MilestoneApprovedEvent{Milestone: 2, Goal: "second"})}},
		{"the checkpoint commit failed: stop internal_error", Checkpoint,
			Facts{Now: t0, Err: errors.New("git commit: exit status 1")}, judged, verifyOnly,
			Decision{Event: Event{Outcome: Fault, Code: stopreasons.InternalError}, Step: Step{Stop: stopreasons.InternalError},
				Stop:     stopAt(Checkpoint, stopreasons.Stop{Code: stopreasons.InternalError, Message: "git commit: exit status 1"}),
				Counters: baseCounters(), Attempt: judgedAttempt}},
		{"the checkpoint's git ran into the time budget: stop timeout", Checkpoint,
			Facts{Now: t0, Err: deadline, At: Reading{DeadlinePassed: true, Elapsed: 30 * time.Minute}}, judged, verifyOnly,
			Decision{Event: Event{Outcome: Interrupted, Code: stopreasons.Timeout}, Step: Step{Stop: stopreasons.Timeout},
				Stop: stopAt(Checkpoint, stopreasons.Stop{Code: stopreasons.Timeout, Condition: "budget.time", Value: "30m", Threshold: "30m",
					Message: "the time budget of 30m ran out"}),
				Counters: baseCounters(), Attempt: judgedAttempt}},
		{"every milestone approved: complete", Finalize, Facts{Now: t0}, finished, verifyOnly,
			Decision{Event: Event{Outcome: Finalized}, Step: Step{Stop: stopreasons.Complete, ResumeAt: Finalize},
				Stop:     stopAt(Finalize, stopreasons.Stop{Code: stopreasons.Complete, Condition: stopconditions.RuleMilestones, Message: "all milestones approved"}),
				Counters: baseCounters()}},
		{"a phase state.json should not hold: stop state_corrupt", Phase("bogus"), Facts{Now: t0}, baseRun(), verifyOnly,
			Decision{Event: Event{Outcome: Fault, Code: stopreasons.StateCorrupt}, Step: Step{Stop: stopreasons.StateCorrupt},
				Stop:     stopAt(Phase("bogus"), stopreasons.Stop{Code: stopreasons.StateCorrupt, Message: `state.json: unknown phase "bogus"`}),
				Counters: baseCounters(), Attempt: baseAttempt()}},
	}
}

// TestDecideGuardsOnlyAfterACallThatEndedByItself: the loop runs the guards
// only when the call's own end does not decide the step, and the verify
// commands only until one ends it.
func TestDecideGuardsOnlyAfterACallThatEndedByItself(t *testing.T) {
	sig := &signalStop{code: stopreasons.UserStopped, name: "SIGINT"}
	assert.False(t, Facts{}.CallDecides())
	assert.False(t, Facts{Process: proc.Result{ExitCode: 1}}.CallDecides(), "a failed call is judged after the guards")
	for name, f := range map[string]Facts{
		"runr failed":         {Err: errors.New("x")},
		"sandbox":             {Sandbox: "x"},
		"spend":               {Spend: "budget.max_tokens"},
		"signal":              {At: Reading{Signal: sig}},
		"deadline":            {Process: proc.Result{Canceled: true}, At: Reading{DeadlinePassed: true}},
		"agent.timeout":       {Process: proc.Result{TimedOut: true}},
		"idle_timeout":        {Process: proc.Result{Idle: true}},
		"signal and deadline": {Process: proc.Result{Canceled: true}, At: Reading{DeadlinePassed: true, Signal: sig}},
	} {
		assert.True(t, f.CallDecides(), name)
	}
	assert.False(t, Facts{Process: proc.Result{Canceled: true}}.CallDecides(), "a cancel that was neither a signal nor the budget")
	assert.False(t, CheckFacts{}.Ends())
	assert.True(t, CheckFacts{Process: proc.Result{ExitCode: 1}}.Ends())
	assert.True(t, CheckFacts{Process: proc.Result{TimedOut: true}}.Ends())
	assert.True(t, CheckFacts{At: Reading{Signal: sig}}.Ends())
}

func TestSwitchReason(t *testing.T) {
	now := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	maxWait := 6 * time.Hour
	limited := func(resetAt time.Time, limit agents.LimitKind) result {
		return result{Event: Event{Outcome: AgentRateLimited}, resetAt: resetAt, limit: limit}
	}
	tests := []struct {
		name   string
		r      result
		reason string
		why    string
	}{
		{"reset beyond max_wait", limited(now.Add(6*time.Hour+time.Second), agents.LimitUsageWindow), state.SwitchRateLimited, "beyond resume.max_wait 6h"},
		{"reset at max_wait: the auto-resume waits", limited(now.Add(6*time.Hour), agents.LimitUsageWindow), "", ""},
		{"reset soon", limited(now.Add(time.Minute), agents.LimitRate), "", ""},
		{"no reset known: transient", limited(time.Time{}, agents.LimitRate), "", ""},
		{"overloaded, no reset: transient", limited(time.Time{}, agents.LimitOverloaded), "", ""},
		{"spend cap, no reset: never lifts by waiting", limited(time.Time{}, agents.LimitSpendCap), state.SwitchRateLimited, "spend cap limit with no reset time"},
		{"usage window, no reset: hours", limited(time.Time{}, agents.LimitUsageWindow), state.SwitchRateLimited, "usage window limit with no reset time"},
		{"spend cap resetting soon: waited for", limited(now.Add(time.Minute), agents.LimitSpendCap), "", ""},
		{"program missing", result{Event: Event{Outcome: Fault, Code: stopreasons.WorkerNotFound}, stop: &stop{Stop: stopreasons.Stop{Message: "gone"}}}, state.SwitchNotFound, "gone"},
		{"another fault", result{Event: Event{Outcome: Fault, Code: stopreasons.InternalError}}, "", ""},
		{"auth failure", result{Event: Event{Outcome: AgentAuthFailed}, resetAt: now.Add(24 * time.Hour)}, "", ""},
		{"failed attempt", result{Event: Event{Outcome: AgentFailed}, resetAt: now.Add(24 * time.Hour)}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, why := switchReason(tt.r, now, maxWait)
			assert.Equal(t, tt.reason, reason)
			assert.Contains(t, why, tt.why)
		})
	}
}
