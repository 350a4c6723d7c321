package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/supervisor"
)

// Off: no endpoint, no telemetry: New creates nothing and the supervisor
// gets no observer at all.
func TestNewOff(t *testing.T) {
	for name, o := range map[string]Options{
		"no endpoint":          {Environ: []string{"OTEL_SERVICE_NAME=x", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}},
		"only a signal's own":  {Environ: []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:1"}},
		"OTEL_SDK_DISABLED":    {Endpoint: "http://127.0.0.1:1", Environ: []string{"OTEL_SDK_DISABLED=true"}},
		"disabled, env as set": {Environ: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_SDK_DISABLED=TRUE"}},
	} {
		t.Run(name, func(t *testing.T) {
			tel, err := New(context.Background(), o)
			require.NoError(t, err)
			assert.Nil(t, tel)
			// A nil interface, not a typed nil: the supervisor's nil check
			// skips every observation.
			assert.True(t, tel.Observer() == nil)
			assert.NoError(t, tel.Shutdown())
		})
	}
}

func TestNewOn(t *testing.T) {
	for name, env := range map[string][]string{
		"config endpoint, http": nil,
		"config endpoint, grpc": {"OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
		"traces off":            {"OTEL_TRACES_EXPORTER=none"},
	} {
		t.Run(name, func(t *testing.T) {
			tel, err := New(context.Background(), Options{Endpoint: "http://127.0.0.1:1", Environ: env, Timeout: time.Second})
			require.NoError(t, err)
			require.NotNil(t, tel)
			assert.NotNil(t, tel.Observer())
			// Nobody listens there: the flush says so, within the timeout.
			assert.ErrorContains(t, tel.Shutdown(), "http://127.0.0.1:1")
		})
	}
	_, err := New(context.Background(), Options{Endpoint: "http://127.0.0.1:1", Environ: []string{"OTEL_EXPORTER_OTLP_PROTOCOL=http/json"}})
	assert.ErrorContains(t, err, `"http/json" is not supported`)
}

func TestProtocolAndEndpoint(t *testing.T) {
	tests := []struct {
		name     string
		env      []string
		signal   string
		base     string
		proto    string
		endpoint string
	}{
		{"default http", nil, "TRACES", "http://c:4318", ProtocolHTTP, "http://c:4318/v1/traces"},
		{"trailing slash", nil, "METRICS", "http://c:4318/", ProtocolHTTP, "http://c:4318/v1/metrics"},
		{"grpc", []string{"OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, "TRACES", "http://c:4317", ProtocolGRPC, "http://c:4317"},
		{"the signal's own protocol wins", []string{"OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/protobuf"},
			"METRICS", "http://c:4318", ProtocolHTTP, "http://c:4318/v1/metrics"},
		{"the signal's own endpoint wins", []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://t:1/x"}, "TRACES", "http://c:4318", ProtocolHTTP, ""},
		{"no base: the exporter reads OTEL_*", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://e:4318"}, "TRACES", "", ProtocolHTTP, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := protocol(tt.env, tt.signal)
			require.NoError(t, err)
			assert.Equal(t, tt.proto, p)
			assert.Equal(t, tt.endpoint, endpointFor(tt.base, tt.env, tt.signal, p))
		})
	}
}

// recorder is an observer whose spans and metrics a test reads back.
type recorder struct {
	obs    *observer
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
}

func newRecorder(parent context.Context) *recorder {
	sr := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	return &recorder{obs: newObserver(parent, tp, mp, "claude", "claude-sonnet-4-5"), spans: sr, reader: reader}
}

func (r *recorder) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func (r *recorder) sum(t *testing.T, name string, key attribute.Key) map[string]float64 {
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					v, _ := p.Attributes.Value(key)
					out[v.String()] += float64(p.Value)
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					v, _ := p.Attributes.Value(key)
					out[v.String()] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					v, _ := p.Attributes.Value(key)
					out[v.String()] += float64(p.Count)
				}
			}
		}
	}
	return out
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// feed sends the observations, one millisecond apart.
func feed(o supervisor.Observer, obs ...supervisor.Observation) {
	at := time.Date(2026, 11, 24, 23, 0, 0, 0, time.UTC)
	for _, ob := range obs {
		ob.RunID = "r1"
		ob.Time = at
		at = at.Add(time.Millisecond)
		o.Observe(ob)
	}
}

// The ledger's agent_call event, when the run records one, gives the agent
// span its usage and cost (cache tokens too), before the tick record.
func TestObserverAgentCallLedger(t *testing.T) {
	r := newRecorder(context.Background())
	feed(r.obs,
		supervisor.Observation{Event: state.RunStartedEvent{Milestones: 1}},
		supervisor.Observation{Event: supervisor.TickStarted{}, Tick: 1, Phase: "implement"},
		supervisor.Observation{Event: state.ProcessStartedEvent{PID: 1}, Tick: 1, Phase: "implement"},
		supervisor.Observation{Event: state.ProcessEndedEvent{ExitCode: 0, DurationMS: 2500}, Tick: 1, Phase: "implement"},
		supervisor.Observation{Event: state.AgentCallEvent{Call: state.Call{Agent: "claude", Model: "claude-opus-4-1",
			InputTokens: 10, CacheReadTokens: 5000, CacheWriteTokens: 700, OutputTokens: 90,
			CostReportedUSD: 0.42, CostEstimatedUSD: 0.40, CostSource: "reported", DurationMS: 2500}}, Tick: 1, Phase: "implement"},
		// The tick record's own figures do not count the call twice.
		supervisor.Observation{Event: state.TickEvent{Phase: "implement", Milestone: 1, Outcome: "agent done",
			TickCall: &state.TickCall{InputTokens: 10, OutputTokens: 90, CallCostUSD: 0.42, CostSource: "reported"}}, Tick: 1, Phase: "verify"},
	)
	calls := r.named(SpanAgentCall)
	require.Len(t, calls, 1)
	a := attrs(calls[0])
	assert.Equal(t, "anthropic", a["gen_ai.provider.name"])
	assert.Equal(t, "anthropic", a["gen_ai.system"])
	assert.Equal(t, "claude-sonnet-4-5", a["gen_ai.request.model"], "the model asked for")
	assert.Equal(t, "claude-opus-4-1", a["gen_ai.response.model"], "the model that answered")
	assert.Equal(t, "10", a["gen_ai.usage.input_tokens"])
	assert.Equal(t, "90", a["gen_ai.usage.output_tokens"])
	assert.Equal(t, "5000", a["gen_ai.usage.cache_read.input_tokens"])
	assert.Equal(t, "700", a["gen_ai.usage.cache_creation.input_tokens"])
	assert.Equal(t, "0.42", a["cost_usd"])
	assert.Equal(t, "reported", a["cost_source"])
	assert.Equal(t, time.Millisecond, calls[0].EndTime().Sub(calls[0].StartTime()), "the call's span ends when its process did")

	assert.Equal(t, map[string]float64{"input": 10, "output": 90, "cache_read": 5000, "cache_write": 700}, r.sum(t, "runr.tokens", "type"))
	assert.Equal(t, map[string]float64{"reported": 0.42}, r.sum(t, "runr.cost.usd", "cost_source"))
	assert.Equal(t, map[string]float64{"claude": 1}, r.sum(t, "runr.agent.calls", "runr.agent"))
	assert.Equal(t, map[string]float64{"claude-opus-4-1": 1}, r.sum(t, "runr.agent.call.duration", "gen_ai.request.model"))
	assert.Equal(t, map[string]float64{"implement": 1}, r.sum(t, "runr.ticks", "runr.phase"))
}

// A stop in the middle of a call ends the open spans with it: the agent
// call and the tick as errors, the run with the stop as its event; an
// automatic resume in the same invocation is a run span of its own.
func TestObserverStopMidCall(t *testing.T) {
	parent := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true}))
	r := newRecorder(parent)
	feed(r.obs,
		supervisor.Observation{Event: state.RunStartedEvent{Milestones: 3}},
		supervisor.Observation{Event: supervisor.TickStarted{}, Tick: 1, Phase: "implement"},
		supervisor.Observation{Event: state.ProcessStartedEvent{}, Tick: 1, Phase: "implement"},
		supervisor.Observation{Event: state.ProcessEndedEvent{ExitCode: -1, DurationMS: 1000, TimedOut: true}, Tick: 1, Phase: "implement"},
		supervisor.Observation{Event: state.StopEvent{Code: "worker_timeout", ExitCode: 32,
			TerminalStatus: "aborted_error", Milestones: 3, Approved: 0, Condition: "agent.timeout"}, Tick: 1, Phase: "implement"},
		supervisor.Observation{Event: state.RunResumedEvent{}, Tick: 1, Phase: "implement"},
		supervisor.Observation{Event: state.StopEvent{Code: "user_stopped", ExitCode: 130,
			TerminalStatus: "aborted_user", Milestones: 3, Approved: 0}, Tick: 1, Phase: "implement"},
	)
	runs := r.named(SpanRun)
	require.Len(t, runs, 2)
	for _, run := range runs {
		assert.Equal(t, trace.SpanID{2}, run.Parent().SpanID(), "each under TRACEPARENT")
		assert.Equal(t, trace.TraceID{1}, run.SpanContext().TraceID())
		require.Len(t, run.Events(), 1)
		assert.Equal(t, EventStop, run.Events()[0].Name)
	}
	a := attrs(runs[0])
	assert.Equal(t, "worker_timeout", a["runr.stop.reason"])
	assert.Equal(t, "32", a["runr.exit_code"])
	assert.Equal(t, "aborted_error", a["runr.terminal_status"])
	assert.Equal(t, "3", a["runr.milestones"])
	assert.Equal(t, "Error", runs[0].Status().Code.String())
	assert.Equal(t, "130", attrs(runs[1])["runr.exit_code"])

	calls := r.named(SpanAgentCall)
	require.Len(t, calls, 1)
	assert.Equal(t, "Error", calls[0].Status().Code.String())
	assert.Equal(t, "timed out", calls[0].Status().Description)
	assert.Empty(t, r.named(SpanGuard), "no guard runs after a call cut short")
	ticks := r.named(SpanTick)
	require.Len(t, ticks, 1)
	assert.Equal(t, "stopped: worker_timeout", attrs(ticks[0])["runr.outcome"])
	assert.Equal(t, runs[0].SpanContext().SpanID(), ticks[0].Parent().SpanID())
	assert.Equal(t, map[string]float64{"worker_timeout": 1, "user_stopped": 1}, r.sum(t, "runr.stops", "reason"))
}

// Shutdown ends a run span that never saw its stop (runr returned an
// error before recording one).
func TestObserverClose(t *testing.T) {
	r := newRecorder(context.Background())
	feed(r.obs, supervisor.Observation{Event: state.RunStartedEvent{}}, supervisor.Observation{Event: supervisor.TickStarted{}, Tick: 1, Phase: "verify"})
	assert.Empty(t, r.spans.Ended())
	r.obs.close(time.Now())
	assert.Len(t, r.named(SpanRun), 1)
	assert.Len(t, r.named(SpanTick), 1)
}

// A parallel run's workers tick at once: each worker's observations open
// and close its own tick and process spans, whatever the other worker does
// meanwhile; a worker's own start and stop are not the run's, so the run
// has one span, opened and closed by its coordinator; a merge is a span of
// its own under the run.
func TestObserverInterleavedWorkers(t *testing.T) {
	r := newRecorder(context.Background())
	w := func(worker int, ob supervisor.Observation) supervisor.Observation {
		ob.Worker = worker
		return ob
	}
	feed(r.obs,
		supervisor.Observation{Event: state.RunStartedEvent{Milestones: 2, Workers: 2}},
		w(1, supervisor.Observation{Event: state.RunStartedEvent{Milestones: 7}}),
		w(2, supervisor.Observation{Event: state.RunStartedEvent{Milestones: 7}}),
		w(1, supervisor.Observation{Event: supervisor.TickStarted{}, Tick: 1, Phase: "implement"}),
		w(2, supervisor.Observation{Event: supervisor.TickStarted{}, Tick: 1, Phase: "implement"}),
		w(1, supervisor.Observation{Event: state.ProcessStartedEvent{}, Tick: 1, Phase: "implement"}),
		w(2, supervisor.Observation{Event: state.ProcessStartedEvent{}, Tick: 1, Phase: "implement"}),
		w(2, supervisor.Observation{Event: state.ProcessEndedEvent{DurationMS: 10}, Tick: 1, Phase: "implement"}),
		w(1, supervisor.Observation{Event: state.ProcessEndedEvent{DurationMS: 20}, Tick: 1, Phase: "implement"}),
		w(2, supervisor.Observation{Event: state.AgentCallEvent{Call: state.Call{Agent: "claude", InputTokens: 200, OutputTokens: 20,
			CostReportedUSD: 0.2, CostSource: "reported"}}, Tick: 1, Phase: "implement"}),
		w(1, supervisor.Observation{Event: state.AgentCallEvent{Call: state.Call{Agent: "claude", InputTokens: 100, OutputTokens: 10,
			CostReportedUSD: 0.1, CostSource: "reported"}}, Tick: 1, Phase: "implement"}),
		w(2, supervisor.Observation{Event: state.TickEvent{Phase: "implement", Milestone: 2, Outcome: "agent done"}, Tick: 1, Phase: "verify"}),
		w(2, supervisor.Observation{Event: supervisor.TickStarted{}, Tick: 2, Phase: "verify"}),
		w(1, supervisor.Observation{Event: state.TickEvent{Phase: "implement", Milestone: 1, Outcome: "agent done"}, Tick: 1, Phase: "verify"}),
		w(2, supervisor.Observation{Event: state.ProcessStartedEvent{Command: "go test ./..."}, Tick: 2, Phase: "verify"}),
		w(1, supervisor.Observation{Event: supervisor.TickStarted{}, Tick: 2, Phase: "implement"}),
		w(1, supervisor.Observation{Event: state.ProcessStartedEvent{}, Tick: 2, Phase: "implement"}),
		w(2, supervisor.Observation{Event: state.ProcessEndedEvent{DurationMS: 5}, Tick: 2, Phase: "verify"}),
		w(2, supervisor.Observation{Event: state.TickEvent{Phase: "verify", Milestone: 2, Outcome: "verify passed"}, Tick: 2, Phase: "checkpoint"}),
		w(2, supervisor.Observation{Event: state.StopEvent{Code: "complete", TerminalStatus: "done_success", Milestones: 7, Approved: 1}, Tick: 2, Phase: "stopped"}),
		supervisor.Observation{Event: state.WorkerDoneEvent{Worker: 2, Milestone: 2, Code: "complete"}},
		supervisor.Observation{Event: state.MergeEvent{Worker: 2, Milestone: 2, Outcome: state.MergeMerged, Commit: "abc123"}},
		// Worker 1 is still in its call when the run is stopped.
		w(1, supervisor.Observation{Event: state.StopEvent{Code: "user_stopped", ExitCode: 130, TerminalStatus: "aborted_user"}, Tick: 2, Phase: "implement"}),
		supervisor.Observation{Event: state.StopEvent{Code: "user_stopped", ExitCode: 130, TerminalStatus: "aborted_user", Milestones: 2, Approved: 1}},
	)
	runs := r.named(SpanRun)
	require.Len(t, runs, 1, "one run span, the coordinator's")
	run := runs[0]
	ra := attrs(run)
	assert.Equal(t, "2", ra["runr.milestones"], "the run's milestones, not a worker's")
	assert.Equal(t, "1", ra["runr.milestones.approved"])
	assert.Equal(t, "user_stopped", ra["runr.stop.reason"])
	require.Len(t, run.Events(), 1)
	assert.Equal(t, EventStop, run.Events()[0].Name)
	assert.Equal(t, map[string]float64{"user_stopped": 1}, r.sum(t, "runr.stops", "reason"), "a worker's stop is not a run's")

	type tickKey struct{ worker, tick string }
	ticks := map[tickKey]sdktrace.ReadOnlySpan{}
	for _, tk := range r.named(SpanTick) {
		assert.Equal(t, run.SpanContext().SpanID(), tk.Parent().SpanID(), "a worker's tick is under the run")
		a := attrs(tk)
		ticks[tickKey{a["runr.worker"], a["runr.tick"]}] = tk
	}
	require.Len(t, ticks, 4)
	outcome := func(worker, tick string) string { return attrs(ticks[tickKey{worker, tick}])["runr.outcome"] }
	assert.Equal(t, "agent done", outcome("1", "1"))
	assert.Equal(t, "stopped: user_stopped", outcome("1", "2"), "cut short by the stop")
	assert.Equal(t, "agent done", outcome("2", "1"))
	assert.Equal(t, "verify passed", outcome("2", "2"))
	assert.Equal(t, "implement", attrs(ticks[tickKey{"2", "1"}])["runr.phase"])
	assert.Equal(t, "verify", attrs(ticks[tickKey{"2", "2"}])["runr.phase"])

	// Each call is under its own worker's tick, with its own usage.
	calls := map[string]sdktrace.ReadOnlySpan{}
	for _, c := range r.named(SpanAgentCall) {
		calls[c.Parent().SpanID().String()] = c
	}
	require.Len(t, calls, 3)
	assert.Equal(t, "100", attrs(calls[ticks[tickKey{"1", "1"}].SpanContext().SpanID().String()])["gen_ai.usage.input_tokens"])
	assert.Equal(t, "200", attrs(calls[ticks[tickKey{"2", "1"}].SpanContext().SpanID().String()])["gen_ai.usage.input_tokens"])
	cut := calls[ticks[tickKey{"1", "2"}].SpanContext().SpanID().String()]
	require.NotNil(t, cut, "worker 1's second call, under its second tick")
	assert.Equal(t, "Error", cut.Status().Code.String())
	verifies := r.named(SpanVerify)
	require.Len(t, verifies, 1)
	assert.Equal(t, ticks[tickKey{"2", "2"}].SpanContext().SpanID(), verifies[0].Parent().SpanID())
	assert.Equal(t, map[string]float64{"input": 300, "output": 30}, r.sum(t, "runr.tokens", "type"))

	merges := r.named(SpanMerge)
	require.Len(t, merges, 1)
	m := attrs(merges[0])
	assert.Equal(t, "2", m["runr.worker"])
	assert.Equal(t, "2", m["runr.milestone"])
	assert.Equal(t, "merged", m["runr.merge.outcome"])
	assert.Equal(t, "abc123", m["runr.checkpoint.commit"])
	assert.Equal(t, run.SpanContext().SpanID(), merges[0].Parent().SpanID())
	assert.Equal(t, time.Millisecond, merges[0].EndTime().Sub(merges[0].StartTime()), "from the worker's report to the merge")
}
