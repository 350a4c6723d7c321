package telemetry

import (
	"context"
	"fmt"
	"maps"
	"slices"
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
	SpanMerge      = "runr.merge"
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
	attrWorker         = "runr.worker"
	attrMergeOutcome   = "runr.merge.outcome"
	attrMergeFiles     = "runr.merge.files"
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

// observer turns the supervisor's observations into spans and metrics. A
// sequential run's supervisor calls it from one goroutine; a parallel run's
// coordinator and each of its workers' supervisors call it from goroutines
// of their own, so every observation is taken under the lock (which also
// serves Shutdown's close).
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

	// lanes hold what is open in each worker's tick, by worker (0: a
	// sequential run): the workers of a parallel run tick at once.
	lanes map[int]*lane
	// merges are the times a parallel run's approved milestones went to the
	// merge queue, by milestone, for their runr.merge spans.
	merges map[int]time.Time
}

// lane is one worker's tick and the spans open in it.
type lane struct {
	worker      int
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
		lanes:  map[int]*lane{},
		merges: map[int]time.Time{},
	}
}

// lane is worker w's lane, made on its first observation.
func (o *observer) lane(w int) *lane {
	l := o.lanes[w]
	if l == nil {
		l = &lane{worker: w}
		o.lanes[w] = l
	}
	return l
}

// Observe implements supervisor.Observer.
func (o *observer) Observe(ev supervisor.Observation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.run == nil {
		o.startRun(ev)
	}
	l := o.lane(ev.Worker)
	switch e := ev.Event.(type) {
	case state.RunStartedEvent:
		if ev.Worker == 0 {
			o.run.SetAttributes(attribute.Int(attrMilestones, e.Milestones))
		}
	case supervisor.TickStarted:
		o.endTick(l, ev.Time, "", nil)
		l.tickPhase = ev.Phase
		attrs := []attribute.KeyValue{attribute.Int(attrTick, ev.Tick), attribute.String(attrPhase, ev.Phase)}
		if l.worker > 0 {
			attrs = append(attrs, attribute.Int(attrWorker, l.worker))
		}
		l.tickCtx, l.tick = o.tracer.Start(o.runCtx, SpanTick, trace.WithTimestamp(ev.Time), trace.WithAttributes(attrs...))
		if ev.Phase == "checkpoint" {
			_, l.checkpoint = o.tracer.Start(l.tickCtx, SpanCheckpoint, trace.WithTimestamp(ev.Time))
		}
	case state.ProcessStartedEvent:
		o.processStarted(l, ev, e)
	case state.ProcessEndedEvent:
		o.processEnded(l, ev, e)
	case state.AgentCallEvent:
		o.finishCall(l, callUsage{agent: e.Agent, model: e.Model, in: e.InputTokens, out: e.OutputTokens, cacheRead: e.CacheReadTokens,
			cacheWrite: e.CacheWriteTokens, src: e.CostSource, cost: e.CostUSD()})
	case state.GuardEvent:
		if l.guard != nil {
			l.guard.SetAttributes(attribute.String(attrGuardRule, e.Rule), attribute.StringSlice(attrGuardFiles, e.Files))
			l.guard.SetStatus(codes.Error, "guard violation: "+e.Rule)
		}
	case state.CheckpointCommitEvent:
		if l.checkpoint != nil {
			l.checkpoint.SetAttributes(attribute.String(attrCommit, e.SHA))
		}
	case state.AttemptEvent:
		if l.tick != nil {
			l.tick.AddEvent("runr.attempt", trace.WithTimestamp(ev.Time), trace.WithAttributes(attribute.String(attrOutcome, e.Outcome)))
		}
	case state.TickEvent:
		o.endTick(l, ev.Time, "", &e)
	case state.WorkerDoneEvent:
		if e.Code == string(stopreasons.Complete) {
			o.merges[e.Milestone] = ev.Time
		}
	case state.MergeEvent:
		o.merge(ev.Time, e)
	case state.StopEvent:
		if ev.Worker > 0 {
			// A worker's run stops when its milestone is done or given up:
			// that ends the worker's tick, not the run.
			o.endTick(l, ev.Time, "stopped: "+e.Code, nil)
			return
		}
		o.stop(ev.Time, e)
	}
}

func (o *observer) startRun(ev supervisor.Observation) {
	o.runID = ev.RunID
	o.runCtx, o.run = o.tracer.Start(o.parent, SpanRun, trace.WithTimestamp(ev.Time),
		trace.WithAttributes(attribute.String(attrRunID, ev.RunID), attribute.String(attrAgent, o.agent)))
}

func (o *observer) processStarted(l *lane, ev supervisor.Observation, e state.ProcessStartedEvent) {
	o.endProcess(l, ev.Time, nil)
	parent := l.tickCtx
	if parent == nil {
		parent = o.runCtx
	}
	l.procPhase = ev.Phase
	switch ev.Phase {
	case "implement":
		o.endCall(l)
		attrs := []attribute.KeyValue{attribute.String(attrAgent, o.agent), attribute.String(attrGenAIProvider, providerOf(o.agent)),
			attribute.String(attrGenAISystem, providerOf(o.agent)), attribute.String(attrGenAIOperation, "invoke_agent")}
		if o.model != "" {
			attrs = append(attrs, attribute.String(attrGenAIModel, o.model))
		}
		_, l.proc = o.tracer.Start(parent, SpanAgentCall, trace.WithTimestamp(ev.Time), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	case "verify", "review":
		name := SpanVerify
		if ev.Phase == "review" {
			name = SpanReview
		}
		l.procCommand = e.Command
		_, l.proc = o.tracer.Start(parent, name, trace.WithTimestamp(ev.Time), trace.WithAttributes(attribute.String(attrCommandLine, e.Command)))
	default:
		l.proc = nil
	}
}

func (o *observer) processEnded(l *lane, ev supervisor.Observation, e state.ProcessEndedEvent) {
	if l.proc == nil {
		return
	}
	exit := e.ExitCode
	d := time.Duration(e.DurationMS) * time.Millisecond
	l.proc.SetAttributes(attribute.Int(attrProcExitCode, exit))
	cut := e.TimedOut || e.Idle || e.Canceled
	if exit != 0 || cut {
		l.proc.SetStatus(codes.Error, processError(e))
	}
	switch l.procPhase {
	case "implement":
		l.call = &pendingCall{span: l.proc, end: ev.Time, duration: d}
		l.proc = nil
		if !cut {
			// The scope and lockfile guards run after the call, till the
			// tick's end.
			_, l.guard = o.tracer.Start(l.tickCtx, SpanGuard, trace.WithTimestamp(ev.Time))
		}
		return
	case "verify":
		o.m.verifyTime.Record(context.Background(), d.Seconds(), metric.WithAttributes(attribute.String("command", l.procCommand), attribute.Int(attrProcExitCode, exit)))
	}
	l.proc.End(trace.WithTimestamp(ev.Time))
	l.proc = nil
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

// finishCall ends the lane's pending agent call with its usage.
func (o *observer) finishCall(l *lane, u callUsage) {
	c := l.call
	if c == nil {
		return
	}
	l.call = nil
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
func (o *observer) endCall(l *lane) {
	if l.call != nil {
		o.finishCall(l, callUsage{})
	}
}

// endProcess ends a process span still open: the run stopped while it ran.
func (o *observer) endProcess(l *lane, at time.Time, why *string) {
	if l.proc == nil {
		return
	}
	msg := "ended with the run"
	if why != nil {
		msg = *why
	}
	l.proc.SetStatus(codes.Error, msg)
	if l.procPhase == "implement" {
		l.call = &pendingCall{span: l.proc, end: at}
	} else {
		l.proc.End(trace.WithTimestamp(at))
	}
	l.proc = nil
}

// endTick ends the lane's open tick, with the tick record d (nil when the
// tick was cut short: outcome says why).
func (o *observer) endTick(l *lane, at time.Time, outcome string, d *state.TickEvent) {
	if d != nil && l.call != nil {
		var u callUsage
		if c := d.TickCall; c != nil {
			u = callUsage{model: c.Model, in: c.InputTokens, out: c.OutputTokens, cacheRead: c.CacheReadTokens,
				cacheWrite: c.CacheWriteTokens, src: c.CostSource, cost: c.CallCostUSD}
		}
		o.finishCall(l, u)
	}
	o.endProcess(l, at, nil)
	o.endCall(l)
	if l.guard != nil {
		l.guard.End(trace.WithTimestamp(at))
		l.guard = nil
	}
	if l.checkpoint != nil {
		l.checkpoint.End(trace.WithTimestamp(at))
		l.checkpoint = nil
	}
	if l.tick == nil {
		return
	}
	phase := ""
	if d != nil {
		phase, outcome = d.Phase, d.Outcome
		l.tick.SetAttributes(attribute.String(attrOutcome, outcome), attribute.Int(attrMilestone, d.Milestone))
	} else {
		l.tick.SetAttributes(attribute.String(attrOutcome, outcome))
	}
	if phase == "" {
		phase = l.tickPhase
	}
	o.m.ticks.Add(context.Background(), 1, metric.WithAttributes(attribute.String(attrPhase, phase), attribute.String(attrOutcome, outcome)))
	l.tick.End(trace.WithTimestamp(at))
	l.tick, l.tickCtx = nil, nil
}

// endTicks ends every worker's open tick: the run stopped.
func (o *observer) endTicks(at time.Time, outcome string) {
	for _, w := range slices.Sorted(maps.Keys(o.lanes)) {
		o.endTick(o.lanes[w], at, outcome, nil)
	}
	clear(o.lanes)
}

// merge is a parallel run's merge of an approved milestone into the
// integration branch: from the moment its worker finished to the merge's
// outcome.
func (o *observer) merge(at time.Time, e state.MergeEvent) {
	start, ok := o.merges[e.Milestone]
	if !ok {
		start = at
	}
	delete(o.merges, e.Milestone)
	attrs := []attribute.KeyValue{attribute.Int(attrWorker, e.Worker), attribute.Int(attrMilestone, e.Milestone), attribute.String(attrMergeOutcome, e.Outcome)}
	switch {
	case e.Commit != "":
		attrs = append(attrs, attribute.String(attrCommit, e.Commit))
	case len(e.Files) > 0:
		attrs = append(attrs, attribute.StringSlice(attrMergeFiles, e.Files))
	case e.Command != "":
		attrs = append(attrs, attribute.String(attrCommandLine, e.Command))
	}
	_, span := o.tracer.Start(o.runCtx, SpanMerge, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	if e.Outcome != state.MergeMerged {
		span.SetStatus(codes.Error, "merge "+e.Outcome)
	}
	span.End(trace.WithTimestamp(at))
}

// stop ends the run span with the stop as its event.
func (o *observer) stop(at time.Time, e state.StopEvent) {
	code := e.Code
	o.endTicks(at, "stopped: "+code)
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
	clear(o.merges)
}

// close ends whatever is still open when runr exits without a stop event.
func (o *observer) close(at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.run == nil {
		return
	}
	o.endTicks(at, "unfinished")
	o.run.End(trace.WithTimestamp(at))
	o.run, o.runCtx = nil, nil
}
