package telemetry

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/supervisor"
)

// instrumentation is the name of runr's tracer and meter.
const instrumentation = "github.com/runr-dev/runr"

// Span names (DESIGN §12).
const (
	SpanRun        = "runr.run"
	SpanTick       = "runr.tick"
	SpanAgentCall  = "runr.agent.call"
	SpanVerify     = "runr.verify"
	SpanReview     = "runr.review"
	SpanGuard      = "runr.guard"
	SpanCheckpoint = "runr.checkpoint"
	EventStop      = "runr.stop"
)

// Attribute keys: the semantic conventions' where one exists (gen_ai.*,
// process.*), runr.* for what none covers.
const (
	attrRunID          = "runr.run.id"
	attrAgent          = "runr.agent"
	attrMilestones     = "runr.milestones"
	attrApproved       = "runr.milestones.approved"
	attrStopReason     = "runr.stop.reason"
	attrStopCondition  = "runr.stop.condition"
	attrStopMessage    = "runr.stop.message"
	attrExitCode       = "runr.exit_code"
	attrTerminalStatus = "runr.terminal_status"
	attrTick           = "runr.tick"
	attrPhase          = "runr.phase"
	attrMilestone      = "runr.milestone"
	attrOutcome        = "runr.outcome"
	attrCostUSD        = "cost_usd"
	attrCostSource     = "cost_source"
	attrGuardRule      = "runr.guard.rule"
	attrGuardFiles     = "runr.guard.files"
	attrCommit         = "runr.checkpoint.commit"
	attrGenAIProvider  = "gen_ai.provider.name"
	attrGenAISystem    = "gen_ai.system"
	attrGenAIOperation = "gen_ai.operation.name"
	attrGenAIModel     = "gen_ai.request.model"
	attrGenAIRespModel = "gen_ai.response.model"
	attrGenAIInput     = "gen_ai.usage.input_tokens"
	attrGenAIOutput    = "gen_ai.usage.output_tokens"
	attrCacheRead      = "gen_ai.usage.cache_read.input_tokens"
	attrCacheWrite     = "gen_ai.usage.cache_creation.input_tokens"
	attrCommandLine    = "process.command_line"
	attrProcExitCode   = "process.exit.code"
)

// providerOf is gen_ai.provider.name for an agent kind's calls: the
// provider's well-known value where the kind's CLI talks to one provider,
// else the kind's own name. The kind's adapter knows which.
func providerOf(agent string) string { return supervisor.GenAIProvider(agent) }

// instruments are the run's metrics (DESIGN §12).
type instruments struct {
	ticks        metric.Int64Counter
	calls        metric.Int64Counter
	tokens       metric.Int64Counter
	cost         metric.Float64Counter
	callDuration metric.Float64Histogram
	verifyTime   metric.Float64Histogram
	stops        metric.Int64Counter
}

func newInstruments(m metric.Meter) instruments {
	var in instruments
	// The instruments' errors are for invalid names and units, which are
	// constants here; a failed one is a no-op instrument.
	in.ticks, _ = m.Int64Counter("runr.ticks", metric.WithUnit("{tick}"), metric.WithDescription("Ticks (phase steps) run"))
	in.calls, _ = m.Int64Counter("runr.agent.calls", metric.WithUnit("{call}"), metric.WithDescription("Agent calls"))
	in.tokens, _ = m.Int64Counter("runr.tokens", metric.WithUnit("{token}"), metric.WithDescription("Tokens the agent calls used, by type"))
	in.cost, _ = m.Float64Counter("runr.cost.usd", metric.WithUnit("USD"), metric.WithDescription("Cost of the agent calls in US dollars"))
	in.callDuration, _ = m.Float64Histogram("runr.agent.call.duration", metric.WithUnit("s"), metric.WithDescription("Duration of an agent call"))
	in.verifyTime, _ = m.Float64Histogram("runr.verify.duration", metric.WithUnit("s"), metric.WithDescription("Duration of a verify command"))
	in.stops, _ = m.Int64Counter("runr.stops", metric.WithUnit("{stop}"), metric.WithDescription("Run stops, by reason"))
	return in
}

// observer turns the supervisor's observations into spans and metrics. The
// supervisor calls it from one goroutine; the lock is for Shutdown's close.
type observer struct {
	mu     sync.Mutex
	parent context.Context // TRACEPARENT's span, or none
	tracer trace.Tracer
	m      instruments
	agent  string
	model  string

	run    trace.Span
	runCtx context.Context
	runID  string

	tick        trace.Span
	tickCtx     context.Context
	tickPhase   string
	proc        trace.Span // the process span open now (agent call, verify, review)
	procPhase   string
	procCommand string
	call        *pendingCall // an agent call that ended, waiting for its usage
	guard       trace.Span
	checkpoint  trace.Span
}

// pendingCall is an agent call whose process ended; its span ends (at the
// process's end) when its usage is known: the agent_call event, else the
// tick's record.
type pendingCall struct {
	span     trace.Span
	end      time.Time
	duration time.Duration
}

// newObserver returns the observer that records into tp and mp; a nil one
// (a signal turned off) records nothing.
func newObserver(parent context.Context, tp trace.TracerProvider, mp metric.MeterProvider, agent, model string) *observer {
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	return &observer{
		parent: parent,
		tracer: tp.Tracer(instrumentation),
		m:      newInstruments(mp.Meter(instrumentation)),
		agent:  agent,
		model:  model,
	}
}

// Observe implements supervisor.Observer.
func (o *observer) Observe(ev supervisor.Observation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.run == nil {
		o.startRun(ev)
	}
	switch e := ev.Event.(type) {
	case state.RunStartedEvent:
		o.run.SetAttributes(attribute.Int(attrMilestones, e.Milestones))
	case supervisor.TickStarted:
		o.endTick(ev.Time, "", nil)
		o.tickPhase = ev.Phase
		o.tickCtx, o.tick = o.tracer.Start(o.runCtx, SpanTick, trace.WithTimestamp(ev.Time),
			trace.WithAttributes(attribute.Int(attrTick, ev.Tick), attribute.String(attrPhase, ev.Phase)))
		if ev.Phase == "checkpoint" {
			_, o.checkpoint = o.tracer.Start(o.tickCtx, SpanCheckpoint, trace.WithTimestamp(ev.Time))
		}
	case state.ProcessStartedEvent:
		o.processStarted(ev, e)
	case state.ProcessEndedEvent:
		o.processEnded(ev, e)
	case state.AgentCallEvent:
		o.finishCall(callUsage{agent: e.Agent, model: e.Model, in: e.InputTokens, out: e.OutputTokens, cacheRead: e.CacheReadTokens,
			cacheWrite: e.CacheWriteTokens, src: e.CostSource, cost: e.CostUSD()})
	case state.GuardEvent:
		if o.guard != nil {
			o.guard.SetAttributes(attribute.String(attrGuardRule, e.Rule), attribute.StringSlice(attrGuardFiles, e.Files))
			o.guard.SetStatus(codes.Error, "guard violation: "+e.Rule)
		}
	case state.CheckpointCommitEvent:
		if o.checkpoint != nil {
			o.checkpoint.SetAttributes(attribute.String(attrCommit, e.SHA))
		}
	case state.AttemptEvent:
		if o.tick != nil {
			o.tick.AddEvent("runr.attempt", trace.WithTimestamp(ev.Time), trace.WithAttributes(attribute.String(attrOutcome, e.Outcome)))
		}
	case state.TickEvent:
		o.endTick(ev.Time, "", &e)
	case state.StopEvent:
		o.stop(ev.Time, e)
	}
}

func (o *observer) startRun(ev supervisor.Observation) {
	o.runID = ev.RunID
	o.runCtx, o.run = o.tracer.Start(o.parent, SpanRun, trace.WithTimestamp(ev.Time),
		trace.WithAttributes(attribute.String(attrRunID, ev.RunID), attribute.String(attrAgent, o.agent)))
}

func (o *observer) processStarted(ev supervisor.Observation, e state.ProcessStartedEvent) {
	o.endProcess(ev.Time, nil)
	parent := o.tickCtx
	if parent == nil {
		parent = o.runCtx
	}
	o.procPhase = ev.Phase
	switch ev.Phase {
	case "implement":
		o.endCall()
		attrs := []attribute.KeyValue{attribute.String(attrAgent, o.agent), attribute.String(attrGenAIProvider, providerOf(o.agent)),
			attribute.String(attrGenAISystem, providerOf(o.agent)), attribute.String(attrGenAIOperation, "invoke_agent")}
		if o.model != "" {
			attrs = append(attrs, attribute.String(attrGenAIModel, o.model))
		}
		_, o.proc = o.tracer.Start(parent, SpanAgentCall, trace.WithTimestamp(ev.Time), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	case "verify", "review":
		name := SpanVerify
		if ev.Phase == "review" {
			name = SpanReview
		}
		o.procCommand = e.Command
		_, o.proc = o.tracer.Start(parent, name, trace.WithTimestamp(ev.Time), trace.WithAttributes(attribute.String(attrCommandLine, e.Command)))
	default:
		o.proc = nil
	}
}

func (o *observer) processEnded(ev supervisor.Observation, e state.ProcessEndedEvent) {
	if o.proc == nil {
		return
	}
	exit := e.ExitCode
	d := time.Duration(e.DurationMS) * time.Millisecond
	o.proc.SetAttributes(attribute.Int(attrProcExitCode, exit))
	cut := e.TimedOut || e.Idle || e.Canceled
	if exit != 0 || cut {
		o.proc.SetStatus(codes.Error, processError(e))
	}
	switch o.procPhase {
	case "implement":
		o.call = &pendingCall{span: o.proc, end: ev.Time, duration: d}
		o.proc = nil
		if !cut {
			// The scope and lockfile guards run after the call, till the
			// tick's end.
			_, o.guard = o.tracer.Start(o.tickCtx, SpanGuard, trace.WithTimestamp(ev.Time))
		}
		return
	case "verify":
		o.m.verifyTime.Record(context.Background(), d.Seconds(), metric.WithAttributes(attribute.String("command", o.procCommand), attribute.Int(attrProcExitCode, exit)))
	}
	o.proc.End(trace.WithTimestamp(ev.Time))
	o.proc = nil
}

func processError(e state.ProcessEndedEvent) string {
	switch {
	case e.TimedOut:
		return "timed out"
	case e.Idle:
		return "no output for the idle timeout"
	case e.Canceled:
		return "canceled"
	}
	return fmt.Sprintf("exit code %d", e.ExitCode)
}

// callUsage is what an agent call used, as an event tells it: the ledger's
// agent_call, or a tick's record of its call; the zero value when no
// event told it.
type callUsage struct {
	agent, model                   string // agent "": the run's
	in, out, cacheRead, cacheWrite int64
	src                            string
	cost                           float64 // the cost that counts
}

// finishCall ends the pending agent call with its usage.
func (o *observer) finishCall(u callUsage) {
	c := o.call
	if c == nil {
		return
	}
	o.call = nil
	agent, model, src, cost := u.agent, u.model, u.src, u.cost
	if agent == "" {
		agent = o.agent
	}
	attrs := []attribute.KeyValue{attribute.String(attrAgent, agent), attribute.String(attrGenAIProvider, providerOf(agent)), attribute.String(attrGenAISystem, providerOf(agent)),
		attribute.Int64(attrGenAIInput, u.in), attribute.Int64(attrGenAIOutput, u.out), attribute.Float64(attrCostUSD, cost), attribute.String(attrCostSource, src)}
	if u.cacheRead > 0 {
		attrs = append(attrs, attribute.Int64(attrCacheRead, u.cacheRead))
	}
	if u.cacheWrite > 0 {
		attrs = append(attrs, attribute.Int64(attrCacheWrite, u.cacheWrite))
	}
	if model != "" {
		attrs = append(attrs, attribute.String(attrGenAIRespModel, model))
		if o.model == "" {
			attrs = append(attrs, attribute.String(attrGenAIModel, model))
		}
	}
	c.span.SetAttributes(attrs...)
	c.span.End(trace.WithTimestamp(c.end))

	ctx := context.Background()
	if model == "" {
		model = o.model
	}
	who := metric.WithAttributes(attribute.String(attrAgent, agent), attribute.String(attrGenAIModel, model))
	o.m.calls.Add(ctx, 1, who)
	o.m.callDuration.Record(ctx, c.duration.Seconds(), who)
	for _, t := range []struct {
		typ string
		n   int64
	}{{"input", u.in}, {"output", u.out}, {"cache_read", u.cacheRead}, {"cache_write", u.cacheWrite}} {
		if t.n > 0 {
			o.m.tokens.Add(ctx, t.n, metric.WithAttributes(attribute.String("type", t.typ), attribute.String(attrGenAIModel, model)))
		}
	}
	if cost > 0 {
		o.m.cost.Add(ctx, cost, metric.WithAttributes(attribute.String(attrCostSource, src), attribute.String(attrGenAIModel, model)))
	}
}

// endCall ends a pending call whose usage never came (a stop mid-tick).
func (o *observer) endCall() {
	if o.call != nil {
		o.finishCall(callUsage{})
	}
}

// endProcess ends a process span still open: the run stopped while it ran.
func (o *observer) endProcess(at time.Time, why *string) {
	if o.proc == nil {
		return
	}
	msg := "ended with the run"
	if why != nil {
		msg = *why
	}
	o.proc.SetStatus(codes.Error, msg)
	if o.procPhase == "implement" {
		o.call = &pendingCall{span: o.proc, end: at}
	} else {
		o.proc.End(trace.WithTimestamp(at))
	}
	o.proc = nil
}

// endTick ends the open tick, with the tick record d (nil when the tick
// was cut short: outcome says why).
func (o *observer) endTick(at time.Time, outcome string, d *state.TickEvent) {
	if d != nil && o.call != nil {
		var u callUsage
		if c := d.TickCall; c != nil {
			u = callUsage{model: c.Model, in: c.InputTokens, out: c.OutputTokens, cacheRead: c.CacheReadTokens,
				cacheWrite: c.CacheWriteTokens, src: c.CostSource, cost: c.CallCostUSD}
		}
		o.finishCall(u)
	}
	o.endProcess(at, nil)
	o.endCall()
	if o.guard != nil {
		o.guard.End(trace.WithTimestamp(at))
		o.guard = nil
	}
	if o.checkpoint != nil {
		o.checkpoint.End(trace.WithTimestamp(at))
		o.checkpoint = nil
	}
	if o.tick == nil {
		return
	}
	phase := ""
	if d != nil {
		phase, outcome = d.Phase, d.Outcome
		o.tick.SetAttributes(attribute.String(attrOutcome, outcome), attribute.Int(attrMilestone, d.Milestone))
	} else {
		o.tick.SetAttributes(attribute.String(attrOutcome, outcome))
	}
	if phase == "" {
		phase = o.tickPhase
	}
	o.m.ticks.Add(context.Background(), 1, metric.WithAttributes(attribute.String(attrPhase, phase), attribute.String(attrOutcome, outcome)))
	o.tick.End(trace.WithTimestamp(at))
	o.tick, o.tickCtx = nil, nil
}

// stop ends the run span with the stop as its event.
func (o *observer) stop(at time.Time, e state.StopEvent) {
	code := e.Code
	o.endTick(at, "stopped: "+code, nil)
	attrs := []attribute.KeyValue{attribute.String(attrStopReason, code), attribute.Int(attrExitCode, e.ExitCode), attribute.String(attrTerminalStatus, e.TerminalStatus)}
	o.run.AddEvent(EventStop, trace.WithTimestamp(at),
		trace.WithAttributes(append(attrs, attribute.String(attrStopCondition, e.Condition), attribute.String(attrStopMessage, e.Message))...))
	attrs = append(attrs, attribute.Int(attrMilestones, e.Milestones), attribute.Int(attrApproved, e.Approved))
	o.run.SetAttributes(attrs...)
	switch {
	case code == string(stopreasons.Complete):
		o.run.SetStatus(codes.Ok, "")
	case e.TerminalStatus == stopreasons.AbortedError:
		o.run.SetStatus(codes.Error, code)
	}
	o.m.stops.Add(context.Background(), 1, metric.WithAttributes(attribute.String("reason", code)))
	o.run.End(trace.WithTimestamp(at))
	// A continuation in the same invocation (an automatic resume) is a
	// run span of its own.
	o.run, o.runCtx = nil, nil
}

// close ends whatever is still open when runr exits without a stop event.
func (o *observer) close(at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.run == nil {
		return
	}
	o.endTick(at, "unfinished", nil)
	o.run.End(trace.WithTimestamp(at))
	o.run, o.runCtx = nil, nil
}
