package supervisor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/state"
)

// implement runs the agent once for the current milestone, and the guards
// on the tree after a call that ended by itself.
func (s *Supervisor) implement(ctx context.Context) Decision {
	s.markMilestoneStart(ctx)
	f := s.callAgent(ctx)
	if !f.CallDecides() {
		gctx, cancel := s.gitContext(ctx)
		defer cancel()
		s.delta = nil
		f.Guard = s.lookAtTree(gctx)
		if s.delta != nil {
			s.sum.files = countsOf(*s.delta)
		}
	}
	return s.decide(ctx, Implement, f)
}

// agentCall is an agent call made ready: its process, its parser, and the
// watches on its output.
type agentCall struct {
	ctx       context.Context // the call's own: the result grace ends it
	spec      proc.Spec
	parser    agents.Parser
	spend     *spendWatch
	grace     *graceWatch
	stopWatch func() // ends the activity watch
}

// prepareCall writes the iteration's prompt and makes its call ready.
func (s *Supervisor) prepareCall(ctx context.Context) (agentCall, error) {
	st := s.st
	prompt := BuildPrompt(st, s.cfg.Agent.CompletionPromise)
	promptFile := filepath.Join(s.store.RunDir(st.RunID), "prompts", fmt.Sprintf("tick-%04d.md", st.Tick))
	if err := state.WriteFileNoFollow(promptFile, []byte(prompt)); err != nil {
		return agentCall{}, err
	}
	req := s.request(prompt)
	req.PromptFile = promptFile
	inv, err := s.adapter.Invocation(req)
	if err != nil {
		return agentCall{}, err
	}
	parser := s.adapter.NewParser(req)
	spend := s.watchSpend(parser)
	spec := proc.Spec{
		Argv:         inv.Argv,
		Dir:          s.dir,
		Env:          append(agents.WithoutNestedSession(s.childEnv(state.PhaseImplement)), inv.Env...),
		LogPath:      s.store.LogPath(st.RunID, st.Tick, state.PhaseImplement),
		Timeout:      s.cfg.Agent.Timeout,
		IdleTimeout:  s.cfg.Agent.IdleTimeout,
		OnStdoutLine: func(line []byte) bool { return !parser.Line(line) && spend.line() },
	}
	if c, ok := parser.(agents.ChunkParser); ok && agents.TakesChunks(parser) {
		spec.OnStdout = c.Chunk
	}
	watch, stopWatch := s.watchActivity(s.cfg.Agent.Kind, s.dir)
	if watch != nil {
		spec.OnStdoutLine = func(line []byte) bool {
			watch(line)
			return !parser.Line(line) && spend.line()
		}
	}
	if inv.UseStdin {
		spec.Stdin = strings.NewReader(inv.Stdin)
	}
	spec.Argv = append([]string{s.program}, spec.Argv[1:]...)
	s.confine(&spec)
	callCtx, grace := s.watchResult(ctx, parser)
	spec.OnStdoutLine = grace.wrap(spec.OnStdoutLine)
	if spec.OnStdout != nil && watch == nil && grace == nil {
		// Nothing but the parser looks at the lines, and it takes the
		// final text from the chunks: the lines it cannot need (most of
		// a large output) are not handed over at all. The spend watch
		// looks only when the usage moved, which such a line cannot do.
		spec.LineStarts = agents.LineStarts(parser)
	}
	return agentCall{ctx: callCtx, spec: spec, parser: parser, spend: spend, grace: grace, stopWatch: stopWatch}, nil
}

// callAgent makes the iteration's agent call and gathers what came of it:
// the process's end, the adapter's reading of its output, the spend
// watch's stop, and the signal and the time budget as they are after it.
func (s *Supervisor) callAgent(ctx context.Context) Facts {
	st := s.st
	m := s.milestone()
	// A failed or rejected milestone is worked on again after a resume.
	m.Status = state.MilestoneInProgress
	st.Iteration++
	f := Facts{Command: s.program}
	c, err := s.prepareCall(ctx)
	if err != nil {
		f.Err = err
		return f
	}
	defer c.spend.close()
	ref := s.agentRef()
	f.Log = s.relLog(c.spec.LogPath)
	m.Attempts = append(m.Attempts, state.Attempt{Tick: st.Tick, Iteration: st.Iteration, Log: f.Log, Agent: &ref})
	res, err := s.runProcess(c.ctx, state.PhaseImplement, c.spec)
	res = s.settleResult(c.grace, res)
	c.stopWatch()
	if err != nil {
		// A call that ran and then failed runr (its log could not be
		// written) spent what it used: counted, not handed back on resume.
		u, ok := agents.UsageSoFar(c.parser)
		if ok && !errors.Is(err, proc.ErrNotFound) && (u.Tokens() > 0 || u.CacheReadTokens > 0 || u.CostUSD > 0) {
			s.account(c.parser.Finish(res.ExitCode, res.Tail), res)
		}
		f.Err = err
		return f
	}
	c.spend.close()
	f.Process = res
	if msg, failed := s.sandboxFailure(res); failed {
		f.Sandbox = msg
		return f
	}
	f.Agent = c.parser.Finish(res.ExitCode, res.Tail)
	s.account(f.Agent, res)
	s.lastOutput = proc.Tail(res.Tail, feedbackLines)
	if f.Agent.FinalText != "" {
		s.lastOutput = f.Agent.FinalText
	}
	f.Spend = c.spend.exceededBy()
	f.At = s.reading()
	return f
}

// request is the adapter request of the current iteration.
func (s *Supervisor) request(prompt string) agents.Request {
	a := s.cfg.Agent
	req := agents.Request{
		Prompt:         prompt,
		Dir:            s.dir,
		Model:          a.Model,
		PermissionMode: a.PermissionMode,
		Args:           a.Args,
		Command:        a.Command,
		Promise:        a.CompletionPromise,
	}
	if a.ContinueSession {
		req.SessionID = s.sessionID
	}
	if b := s.st; b != nil && b.Budget.MaxCostUSD > 0 {
		req.MaxBudgetUSD = b.Budget.MaxCostUSD - b.Usage.CostUSD
	}
	return req
}

// account adds the call's cost and tokens to the run's usage and its
// model's totals, and records the call in the cost ledger (an agent_call
// event): what the call reported, its cost estimated from tokens whether
// it reported one or not, and which of the two counts. A call cut short (a
// signal, a timeout, a budget) counts what it had used.
func (s *Supervisor) account(ar agents.Result, res proc.Result) {
	st := s.st
	u := ar.Usage()
	cost, src := s.callCost(u)
	call := state.Call{Agent: s.adapter.Kind(), Model: cmp.Or(u.Model, s.cfg.Agent.Model),
		InputTokens: u.InputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, OutputTokens: u.OutputTokens,
		CostSource: string(src), DurationMS: res.Duration.Milliseconds()}
	s.sum.call = callSummary{Usage: u, source: src}
	s.sum.call.CostUSD, s.sum.call.Model = cost, call.Model
	if src == agents.CostReported {
		call.CostReportedUSD = cost
		estimate := u
		estimate.CostUSD, estimate.CostKnown = 0, false
		call.CostEstimatedUSD, _ = s.callCost(estimate)
	} else {
		call.CostEstimatedUSD = cost
	}
	st.Usage.AddCall(call)
	s.event(state.AgentCallEvent{Call: call})
	if ar.SessionID != "" {
		st.Usage.AgentSessionID = ar.SessionID
		s.sessionID = ar.SessionID
	}
	if a := s.currentAttempt(); a != nil {
		a.CostUSD = cost
		a.Model = state.ModelKey(call.Model)
		a.ExitCode = res.ExitCode
		a.DurationMS = res.Duration.Milliseconds()
	}
}
