package tests

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// receiver is a test OTLP collector on 127.0.0.1: OTLP/HTTP with protobuf
// bodies, or gRPC, decoded with the official protos. It keeps every span,
// metric, resource and the headers of the requests.
type receiver struct {
	addr string

	mu        sync.Mutex
	spans     []*tracepb.Span
	metrics   []*metricspb.Metric
	resources []map[string]string
	headers   []map[string]string
}

func (r *receiver) addTraces(req *colltrace.ExportTraceServiceRequest, hdr map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.headers = append(r.headers, hdr)
	for _, rs := range req.GetResourceSpans() {
		r.resources = append(r.resources, attrMap(rs.GetResource().GetAttributes()))
		for _, ss := range rs.GetScopeSpans() {
			r.spans = append(r.spans, ss.GetSpans()...)
		}
	}
}

func (r *receiver) addMetrics(req *collmetrics.ExportMetricsServiceRequest, hdr map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.headers = append(r.headers, hdr)
	for _, rm := range req.GetResourceMetrics() {
		r.resources = append(r.resources, attrMap(rm.GetResource().GetAttributes()))
		for _, sm := range rm.GetScopeMetrics() {
			r.metrics = append(r.metrics, sm.GetMetrics()...)
		}
	}
}

func newHTTPReceiver(t *testing.T) *receiver {
	r := &receiver{}
	mux := http.NewServeMux()
	header := func(req *http.Request) map[string]string {
		return map[string]string{"x-runr-test": req.Header.Get("X-Runr-Test"), "content-type": req.Header.Get("Content-Type")}
	}
	mux.HandleFunc("/v1/traces", func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var m colltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.addTraces(&m, header(req))
		out, _ := proto.Marshal(&colltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	})
	mux.HandleFunc("/v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var m collmetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.addMetrics(&m, header(req))
		out, _ := proto.Marshal(&collmetrics.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	r.addr = ln.Addr().String()
	return r
}

type grpcTraces struct {
	colltrace.UnimplementedTraceServiceServer
	r *receiver
}

func (g grpcTraces) Export(ctx context.Context, req *colltrace.ExportTraceServiceRequest) (*colltrace.ExportTraceServiceResponse, error) {
	g.r.addTraces(req, grpcHeader(ctx))
	return &colltrace.ExportTraceServiceResponse{}, nil
}

type grpcMetrics struct {
	collmetrics.UnimplementedMetricsServiceServer
	r *receiver
}

func (g grpcMetrics) Export(ctx context.Context, req *collmetrics.ExportMetricsServiceRequest) (*collmetrics.ExportMetricsServiceResponse, error) {
	g.r.addMetrics(req, grpcHeader(ctx))
	return &collmetrics.ExportMetricsServiceResponse{}, nil
}

func grpcHeader(ctx context.Context) map[string]string {
	md, _ := metadata.FromIncomingContext(ctx)
	h := map[string]string{"content-type": "application/grpc"}
	if v := md.Get("x-runr-test"); len(v) > 0 {
		h["x-runr-test"] = v[0]
	}
	return h
}

func newGRPCReceiver(t *testing.T) *receiver {
	r := &receiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	colltrace.RegisterTraceServiceServer(srv, grpcTraces{r: r})
	collmetrics.RegisterMetricsServiceServer(srv, grpcMetrics{r: r})
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	r.addr = ln.Addr().String()
	return r
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.GetKey()] = anyString(kv.GetValue())
	}
	return m
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return jsonString(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return jsonString(x.DoubleValue)
	case *commonpb.AnyValue_BoolValue:
		return jsonString(x.BoolValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, anyString(e))
		}
		return strings.Join(parts, ",")
	}
	return ""
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func spansNamed(spans []*tracepb.Span, name string) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range spans {
		if s.GetName() == name {
			out = append(out, s)
		}
	}
	return out
}

// metricPoints sums a metric's data points by one attribute's value ("" for
// all): counters by value, histograms by count.
func metricPoints(metrics []*metricspb.Metric, name, key string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range metrics {
		if m.GetName() != name {
			continue
		}
		switch d := m.GetData().(type) {
		case *metricspb.Metric_Sum:
			for _, p := range d.Sum.GetDataPoints() {
				v := p.GetAsDouble() + float64(p.GetAsInt())
				out[attrMap(p.GetAttributes())[key]] += v
			}
		case *metricspb.Metric_Histogram:
			for _, p := range d.Histogram.GetDataPoints() {
				out[attrMap(p.GetAttributes())[key]] += float64(p.GetCount())
			}
		}
	}
	return out
}

const (
	traceParentTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceParentSpanID  = "00f067aa0ba902b7"
)

// A two-milestone run (a fake agent reporting its usage, a verify command)
// sends its trace and metrics to a collector over OTLP/HTTP protobuf and
// over gRPC: the run span under the TRACEPARENT of the environment, one span
// per tick under it, the agent, verify, guard and checkpoint spans under
// their ticks with their attributes, the stop as the run span's event, and
// the metrics.
func TestTelemetryOTLPExport(t *testing.T) {
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(strings.ReplaceAll(proto, "/", "_"), func(t *testing.T) {
			var r *receiver
			var env []string
			if proto == "grpc" {
				r = newGRPCReceiver(t)
				// The standard variables: endpoint, protocol, headers, service
				// name, resource attributes.
				env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + r.addr, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
					"OTEL_SERVICE_NAME=nightly-agents", "OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=ci"}
			} else {
				r = newHTTPReceiver(t)
				env = []string{"RUNR_TELEMETRY_OTLP_ENDPOINT=http://" + r.addr}
			}
			env = append(env, "OTEL_EXPORTER_OTLP_HEADERS=x-runr-test=secret-token",
				"TRACEPARENT=00-"+traceParentTraceID+"-"+traceParentSpanID+"-01", "TRACESTATE=vendor=ci")
			repo := newRepo(t)
			task := "- [ ] first\n- [ ] second\n"
			code, stderr := runrNotified(t, repo, env, "run", "--prompt", task, "--verify", "test -f out.txt",
				"--", "fakeagent", "--do", "write out.txt m$RUNR_MILESTONE; usage 1200 300 0.25 test-model-1")
			require.Equal(t, 0, code, "stderr: %s", stderr)
			assert.NotContains(t, stderr, "telemetry", "a collector that answers is not reported")

			runDir, err := latestRunDir(repo)
			require.NoError(t, err)
			var st struct {
				RunID string `json:"run_id"`
				Tick  int    `json:"tick"`
			}
			b, err := os.ReadFile(filepath.Join(runDir, "state.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &st))

			r.mu.Lock()
			spans, metrics, resources, headers := r.spans, r.metrics, r.resources, r.headers
			r.mu.Unlock()

			for _, h := range headers {
				assert.Equal(t, "secret-token", h["x-runr-test"], "OTEL_EXPORTER_OTLP_HEADERS")
				if proto == "http/protobuf" {
					assert.Equal(t, "application/x-protobuf", h["content-type"])
				}
			}
			require.NotEmpty(t, resources)
			for _, res := range resources {
				if proto == "grpc" {
					assert.Equal(t, "nightly-agents", res["service.name"])
					assert.Equal(t, "ci", res["deployment.environment.name"])
				} else {
					assert.Equal(t, "runr", res["service.name"])
				}
			}

			// The run span: under TRACEPARENT, with the run's figures.
			runs := spansNamed(spans, "runr.run")
			require.Len(t, runs, 1)
			run := runs[0]
			assert.Equal(t, traceParentTraceID, hex.EncodeToString(run.GetTraceId()))
			assert.Equal(t, traceParentSpanID, hex.EncodeToString(run.GetParentSpanId()))
			assert.Equal(t, "vendor=ci", run.GetTraceState())
			ra := attrMap(run.GetAttributes())
			assert.Equal(t, st.RunID, ra["runr.run.id"])
			assert.Equal(t, "command", ra["runr.agent"])
			assert.Equal(t, "2", ra["runr.milestones"])
			assert.Equal(t, "2", ra["runr.milestones.approved"])
			assert.Equal(t, "complete", ra["runr.stop.reason"])
			assert.Equal(t, "0", ra["runr.exit_code"])
			assert.Equal(t, "done_success", ra["runr.terminal_status"])
			require.Len(t, run.GetEvents(), 1)
			stopEv := run.GetEvents()[0]
			assert.Equal(t, "runr.stop", stopEv.GetName())
			ea := attrMap(stopEv.GetAttributes())
			assert.Equal(t, "complete", ea["runr.stop.reason"])
			assert.Equal(t, "0", ea["runr.exit_code"])
			assert.Equal(t, "done_success", ea["runr.terminal_status"])
			runID := string(run.GetSpanId())
			for _, s := range spans {
				assert.Equal(t, run.GetTraceId(), s.GetTraceId(), "span %s in the run's trace", s.GetName())
			}

			// One span per tick, each under the run span.
			ticks := spansNamed(spans, "runr.tick")
			require.Len(t, ticks, st.Tick, "one span per tick")
			tickByID := map[string]map[string]string{}
			seen := map[string]bool{}
			for _, tk := range ticks {
				assert.Equal(t, runID, string(tk.GetParentSpanId()), "a tick's parent is the run")
				a := attrMap(tk.GetAttributes())
				tickByID[string(tk.GetSpanId())] = a
				seen[a["runr.tick"]] = true
				assert.NotEmpty(t, a["runr.phase"])
				assert.NotEmpty(t, a["runr.outcome"])
				assert.LessOrEqual(t, tk.GetStartTimeUnixNano(), tk.GetEndTimeUnixNano())
			}
			assert.Len(t, seen, st.Tick, "ticks 1..%d each once", st.Tick)

			// The agent calls: under implement ticks, with the GenAI usage.
			calls := spansNamed(spans, "runr.agent.call")
			require.Len(t, calls, 2)
			for _, c := range calls {
				parent, ok := tickByID[string(c.GetParentSpanId())]
				require.True(t, ok, "an agent call's parent is a tick")
				assert.Equal(t, "implement", parent["runr.phase"])
				a := attrMap(c.GetAttributes())
				assert.Equal(t, "command", a["gen_ai.provider.name"])
				assert.Equal(t, "command", a["gen_ai.system"])
				assert.Equal(t, "test-model-1", a["gen_ai.request.model"])
				assert.Equal(t, "1200", a["gen_ai.usage.input_tokens"])
				assert.Equal(t, "300", a["gen_ai.usage.output_tokens"])
				assert.Equal(t, "0.25", a["cost_usd"])
				assert.Equal(t, "reported", a["cost_source"])
				assert.Equal(t, "0", a["process.exit.code"])
			}
			// The verify commands: under verify ticks, with command and exit code.
			verifies := spansNamed(spans, "runr.verify")
			require.Len(t, verifies, 2)
			for _, v := range verifies {
				parent, ok := tickByID[string(v.GetParentSpanId())]
				require.True(t, ok, "a verify's parent is a tick")
				assert.Equal(t, "verify", parent["runr.phase"])
				a := attrMap(v.GetAttributes())
				assert.Equal(t, "test -f out.txt", a["process.command_line"])
				assert.Equal(t, "0", a["process.exit.code"])
			}
			for name, phase := range map[string]string{"runr.guard": "implement", "runr.checkpoint": "checkpoint"} {
				got := spansNamed(spans, name)
				require.Len(t, got, 2, name)
				for _, s := range got {
					assert.Equal(t, phase, tickByID[string(s.GetParentSpanId())]["runr.phase"], "%s's parent", name)
				}
			}

			// The metrics.
			assert.Equal(t, map[string]float64{"": float64(st.Tick)}, metricPoints(metrics, "runr.ticks", ""))
			assert.Equal(t, map[string]float64{"command": 2}, metricPoints(metrics, "runr.agent.calls", "runr.agent"))
			assert.Equal(t, map[string]float64{"input": 2400, "output": 600}, metricPoints(metrics, "runr.tokens", "type"))
			assert.Equal(t, map[string]float64{"reported": 0.5}, metricPoints(metrics, "runr.cost.usd", "cost_source"))
			assert.Equal(t, map[string]float64{"": 2}, metricPoints(metrics, "runr.agent.call.duration", ""))
			assert.Equal(t, map[string]float64{"test -f out.txt": 2}, metricPoints(metrics, "runr.verify.duration", "command"))
			assert.Equal(t, map[string]float64{"complete": 1}, metricPoints(metrics, "runr.stops", "reason"))
			for _, m := range metrics {
				if m.GetName() == "runr.agent.call.duration" || m.GetName() == "runr.verify.duration" {
					assert.Equal(t, "s", m.GetUnit(), m.GetName())
				}
			}
		})
	}
}

// silentCollector accepts connections and never answers.
func silentCollector(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// A collector that never answers delays runr's exit by at most
// telemetry.timeout: the exit code is the run's, and the failure is said
// once on stderr.
func TestTelemetryCollectorNeverAnswers(t *testing.T) {
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(strings.ReplaceAll(proto, "/", "_"), func(t *testing.T) {
			addr := silentCollector(t)
			repo := newRepo(t)
			env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + addr, "OTEL_EXPORTER_OTLP_PROTOCOL=" + proto, "RUNR_TELEMETRY_TIMEOUT=1s"}
			start := time.Now()
			code, stderr := runrNotified(t, repo, env, maxTicksRun...)
			elapsed := time.Since(start)
			assert.Equal(t, 125, code, "the run's own exit code; stderr: %s", stderr)
			assert.Equal(t, 1, strings.Count(stderr, "runr: telemetry: "), "said once; stderr: %s", stderr)
			assert.Contains(t, stderr, "telemetry.timeout (1s)")
			// Not a speed check: a bound far above the timeout, that a flush
			// waiting for the collector would pass.
			assert.Less(t, elapsed, 1*time.Second+5*time.Second+runBound(t, repo))
		})
	}
}

// runBound is how long the run itself took, by its state.json: what the
// exit's bound adds the timeout to.
func runBound(t *testing.T, repo string) time.Duration {
	runDir, err := latestRunDir(repo)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(runDir, "state.json"))
	require.NoError(t, err)
	var st struct {
		ElapsedMS int64 `json:"elapsed_ms"`
	}
	require.NoError(t, json.Unmarshal(b, &st))
	return time.Duration(st.ElapsedMS) * time.Millisecond
}

// runr resume and runr run --run-id of an existing run send the trace of
// their own invocation: a run span with the run's id, and its ticks.
func TestTelemetryContinuations(t *testing.T) {
	repo := newRepo(t)
	args := []string{"--prompt", "- [ ] one\n- [ ] two\n", "--verify", "true", "--", "fakeagent", "--do", "write a.txt m$RUNR_MILESTONE"}
	code, stderr := runrNotified(t, repo, nil, append([]string{"run", "--run-id", "tel1", "--max-ticks", "1"}, args...)...)
	require.Equal(t, 125, code, "stderr: %s", stderr)

	check := func(r *receiver, reason string, firstTick int) {
		t.Helper()
		r.mu.Lock()
		spans := r.spans
		r.mu.Unlock()
		runs := spansNamed(spans, "runr.run")
		require.Len(t, runs, 1)
		a := attrMap(runs[0].GetAttributes())
		assert.Equal(t, "tel1", a["runr.run.id"])
		assert.Equal(t, reason, a["runr.stop.reason"])
		ticks := spansNamed(spans, "runr.tick")
		require.NotEmpty(t, ticks)
		assert.Equal(t, jsonString(firstTick), attrMap(ticks[0].GetAttributes())["runr.tick"], "the ticks of this invocation")
	}

	resumed := newHTTPReceiver(t)
	code, stderr = runrNotified(t, repo, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + resumed.addr}, "resume", "tel1", "--max-ticks", "1")
	require.Equal(t, 125, code, "stderr: %s", stderr)
	check(resumed, "max_ticks", 2)

	continued := newHTTPReceiver(t)
	code, stderr = runrNotified(t, repo, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + continued.addr},
		append([]string{"run", "--run-id", "tel1", "--max-ticks", "10"}, args...)...)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	check(continued, "complete", 3)
}

// A parallel run is one run to the collector: one runr.run span, the ticks
// of both its workers under it, each tick naming its worker (runr.worker),
// each merge a runr.merge span, and the run's stop as its event.
func TestTelemetryParallelRun(t *testing.T) {
	r := newHTTPReceiver(t)
	repo := newRepo(t)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "TASK.md"), []byte("# Two\n- [ ] one\n- [ ] two\n"), 0o644))
	agent := `echo "$RUNR_MILESTONE" > "f$RUNR_MILESTONE.txt"; echo "RUNR_STATUS: done"`
	code, stderr := runrNotified(t, repo, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + r.addr},
		"run", "--task", "TASK.md", "--parallel", "2", "--verify", "true", "--", "sh", "-c", agent)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.NotContains(t, stderr, "telemetry", "a parallel run is traced, and a collector that answers is not reported")

	st := readState(t, repo)
	runID, tick := st["run_id"], int(st["tick"].(float64))

	r.mu.Lock()
	spans, metrics := r.spans, r.metrics
	r.mu.Unlock()

	runs := spansNamed(spans, "runr.run")
	require.Len(t, runs, 1, "one run span for the run, none for a worker's milestone")
	run := runs[0]
	ra := attrMap(run.GetAttributes())
	assert.Equal(t, runID, ra["runr.run.id"])
	assert.Equal(t, "2", ra["runr.milestones"])
	assert.Equal(t, "2", ra["runr.milestones.approved"])
	assert.Equal(t, "complete", ra["runr.stop.reason"])
	assert.Equal(t, "0", ra["runr.exit_code"])
	assert.Equal(t, "done_success", ra["runr.terminal_status"])
	require.Len(t, run.GetEvents(), 1)
	stopEv := run.GetEvents()[0]
	assert.Equal(t, "runr.stop", stopEv.GetName())
	ea := attrMap(stopEv.GetAttributes())
	assert.Equal(t, "complete", ea["runr.stop.reason"])
	assert.Equal(t, "0", ea["runr.exit_code"])
	assert.Equal(t, "done_success", ea["runr.terminal_status"])

	parent := map[string]string{}
	for _, s := range spans {
		assert.Equal(t, run.GetTraceId(), s.GetTraceId(), "span %s in the run's trace", s.GetName())
		parent[string(s.GetSpanId())] = string(s.GetParentSpanId())
	}
	under := func(id string) bool {
		for n := 0; id != "" && n < len(spans); n++ {
			if id = parent[id]; id == string(run.GetSpanId()) {
				return true
			}
		}
		return false
	}
	ticks := spansNamed(spans, "runr.tick")
	require.Len(t, ticks, tick, "one span per tick of every worker")
	workers := map[string]int{}
	for _, tk := range ticks {
		assert.True(t, under(string(tk.GetSpanId())), "a worker's tick is under the run span")
		a := attrMap(tk.GetAttributes())
		assert.Contains(t, []string{"1", "2"}, a["runr.worker"], "a tick names its worker")
		workers[a["runr.worker"]]++
		assert.NotEmpty(t, a["runr.phase"])
		assert.NotEmpty(t, a["runr.outcome"])
	}
	assert.Len(t, workers, 2, "the ticks of both workers: %v", workers)
	for _, name := range []string{"runr.agent.call", "runr.verify"} {
		got := spansNamed(spans, name)
		assert.Len(t, got, 2, name)
		for _, s := range got {
			assert.True(t, under(string(s.GetSpanId())), "%s under the run span", name)
		}
	}
	merges := spansNamed(spans, "runr.merge")
	require.Len(t, merges, 2)
	for _, m := range merges {
		assert.Equal(t, string(run.GetSpanId()), string(m.GetParentSpanId()), "a merge is the run's")
		assert.Equal(t, "merged", attrMap(m.GetAttributes())["runr.merge.outcome"])
	}
	assert.Equal(t, map[string]float64{"complete": 1}, metricPoints(metrics, "runr.stops", "reason"), "the run's stop, not its workers'")
	assert.Equal(t, map[string]float64{"": float64(tick)}, metricPoints(metrics, "runr.ticks", ""))
}
