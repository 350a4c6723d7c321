// Package telemetry sends a run's traces and metrics to an OpenTelemetry
// collector over OTLP (http/protobuf or grpc, from the standard OTEL_*
// variables). It is on only when telemetry.otlp_endpoint or
// OTEL_EXPORTER_OTLP_ENDPOINT is set; off, New returns nil and the run has
// no observer at all. Shutdown flushes within telemetry.timeout, whatever
// the collector does.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/runr-dev/runr/internal/supervisor"
)

// The OTLP protocols (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise.
const DefaultServiceName = "runr"

// Options configure the telemetry of one runr invocation.
type Options struct {
	// Endpoint is telemetry.otlp_endpoint: the collector's base URL; ""
	// leaves it to OTEL_EXPORTER_OTLP_ENDPOINT.
	Endpoint string
	// Timeout bounds the flush at the stop (telemetry.timeout).
	Timeout time.Duration
	// Environ is runr's environment: it decides whether telemetry is on,
	// the protocol, and TRACEPARENT / TRACESTATE. (The exporters read the
	// other OTEL_* variables from the process's environment.)
	Environ []string
	Agent   string // agent.kind
	Model   string // agent.model
	Version string // runr's version (service.version)
}

// Telemetry is the OpenTelemetry of a run: the providers with their
// exporters, and the observer the supervisor tells of every event.
type Telemetry struct {
	tp       *sdktrace.TracerProvider
	mp       *sdkmetric.MeterProvider
	obs      *observer
	timeout  time.Duration
	endpoint string

	mu       sync.Mutex
	firstErr error // the first export error the SDK reported on its own
}

// Enabled reports whether telemetry is on for endpoint (telemetry.otlp_endpoint)
// and environment env: an endpoint is set, and OTEL_SDK_DISABLED is not true.
func Enabled(endpoint string, env []string) bool {
	if strings.EqualFold(strings.TrimSpace(lookup(env, "OTEL_SDK_DISABLED")), "true") {
		return false
	}
	return endpoint != "" || lookup(env, "OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// New builds the telemetry of o; nil (and no error) when it is off, in
// which case nothing is created. An error (an unknown protocol) leaves
// telemetry off; it never stops a run.
func New(ctx context.Context, o Options) (*Telemetry, error) {
	if !Enabled(o.Endpoint, o.Environ) {
		return nil, nil
	}
	t := &Telemetry{timeout: o.Timeout, endpoint: o.Endpoint}
	if t.endpoint == "" {
		t.endpoint = lookup(o.Environ, "OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if t.timeout <= 0 {
		t.timeout = 5 * time.Second
	}
	// The SDK reports export failures to a global handler that would print
	// them as they happen; runr reports one line, at the flush.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(t.keepError))
	otel.SetLogger(logr.Discard())

	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName), attribute.String("service.version", o.Version)),
		resource.WithTelemetrySDK(),
		// Last: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
		resource.WithFromEnv(),
	)
	if err != nil {
		// A malformed OTEL_RESOURCE_ATTRIBUTES still leaves the rest.
		t.keepError(err)
	}
	var tp *sdktrace.TracerProvider
	var tracers trace.TracerProvider // nil when traces are off
	if !disabledSignal(o.Environ, "OTEL_TRACES_EXPORTER") {
		exp, err := traceExporter(ctx, o.Endpoint, o.Environ)
		if err != nil {
			return nil, err
		}
		tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		tracers = tp
	}
	var mp *sdkmetric.MeterProvider
	var meters metric.MeterProvider // nil when metrics are off
	if !disabledSignal(o.Environ, "OTEL_METRICS_EXPORTER") {
		exp, err := metricExporter(ctx, o.Endpoint, o.Environ)
		if err != nil {
			if tp != nil {
				_ = tp.Shutdown(ctx)
			}
			return nil, err
		}
		mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
		meters = mp
	}
	t.tp, t.mp = tp, mp
	parent := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{
		"traceparent": lookup(o.Environ, "TRACEPARENT"),
		"tracestate":  lookup(o.Environ, "TRACESTATE"),
	})
	t.obs = newObserver(parent, tracers, meters, o.Agent, o.Model)
	return t, nil
}

// Observer is what the supervisor tells of the run's events; nil when t is
// nil (telemetry off), so that the supervisor has none.
func (t *Telemetry) Observer() supervisor.Observer {
	if t == nil {
		return nil
	}
	return t.obs
}

// Shutdown ends what is still open, flushes the spans and metrics and stops
// the exporters, within the timeout: a collector that is down or slow
// costs at most that. The error says what could not be sent, for one line
// on stderr; it never changes how the run ended.
func (t *Telemetry) Shutdown() error {
	if t == nil {
		return nil
	}
	t.obs.close(time.Now())
	ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
	defer cancel()
	// Both at once, so that a hung trace export does not leave the metrics
	// no time; each returns when ctx ends, and the select makes sure of it.
	done := make(chan error, 2)
	go func() { done <- shutdown(ctx, t.tp) }()
	go func() { done <- shutdown(ctx, t.mp) }()
	var errs []error
	for range 2 {
		select {
		case err := <-done:
			errs = append(errs, err)
		case <-ctx.Done():
			errs = append(errs, ctx.Err())
		}
		if ctx.Err() != nil {
			break
		}
	}
	err := errors.Join(errs...)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("could not send traces and metrics to %s within telemetry.timeout (%s); the run's outcome is unchanged", t.endpoint, t.timeout)
	}
	if err == nil {
		t.mu.Lock()
		err = t.firstErr
		t.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("sending traces and metrics to %s: %w", t.endpoint, err)
	}
	return nil
}

func shutdown[P interface {
	comparable
	Shutdown(context.Context) error
}](ctx context.Context, p P) error {
	// A nil provider (a signal turned off with OTEL_*_EXPORTER=none) has
	// nothing to send.
	var none P
	if p == none {
		return nil
	}
	return p.Shutdown(ctx)
}

func (t *Telemetry) keepError(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.firstErr == nil {
		t.firstErr = err
	}
}

// protocol is the OTLP protocol of a signal: its own variable, else
// OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf, as the specification says.
func protocol(env []string, signal string) (string, error) {
	p := lookup(env, "OTEL_EXPORTER_OTLP_"+signal+"_PROTOCOL")
	if p == "" {
		p = lookup(env, "OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch strings.TrimSpace(p) {
	case "", ProtocolHTTP:
		return ProtocolHTTP, nil
	case ProtocolGRPC:
		return ProtocolGRPC, nil
	}
	return "", fmt.Errorf("OTLP protocol %q is not supported: use %s or %s (OTEL_EXPORTER_OTLP_PROTOCOL); telemetry is off for this run", p, ProtocolHTTP, ProtocolGRPC)
}

// endpointFor is the URL telemetry.otlp_endpoint gives a signal's exporter,
// or "" to let the exporter read its OTEL_* variables: a signal's own
// endpoint variable wins over the base URL. Over HTTP the base URL gets
// the signal's path, as OTEL_EXPORTER_OTLP_ENDPOINT does.
func endpointFor(base string, env []string, signal, proto string) string {
	if base == "" || lookup(env, "OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != "" {
		return ""
	}
	if proto == ProtocolGRPC {
		return base
	}
	return strings.TrimRight(base, "/") + "/v1/" + strings.ToLower(signal)
}

func traceExporter(ctx context.Context, base string, env []string) (sdktrace.SpanExporter, error) {
	proto, err := protocol(env, "TRACES")
	if err != nil {
		return nil, err
	}
	url := endpointFor(base, env, "TRACES", proto)
	if proto == ProtocolGRPC {
		var opts []otlptracegrpc.Option
		if url != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(url))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	var opts []otlptracehttp.Option
	if url != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(url))
	}
	return otlptracehttp.New(ctx, opts...)
}

func metricExporter(ctx context.Context, base string, env []string) (sdkmetric.Exporter, error) {
	proto, err := protocol(env, "METRICS")
	if err != nil {
		return nil, err
	}
	url := endpointFor(base, env, "METRICS", proto)
	if proto == ProtocolGRPC {
		var opts []otlpmetricgrpc.Option
		if url != "" {
			opts = append(opts, otlpmetricgrpc.WithEndpointURL(url))
		}
		return otlpmetricgrpc.New(ctx, opts...)
	}
	var opts []otlpmetrichttp.Option
	if url != "" {
		opts = append(opts, otlpmetrichttp.WithEndpointURL(url))
	}
	return otlpmetrichttp.New(ctx, opts...)
}

// disabledSignal: OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER=none turns
// that signal off.
func disabledSignal(env []string, key string) bool {
	return strings.TrimSpace(lookup(env, key)) == "none"
}

// lookup is the value of key in env, the last one when it is set twice,
// as os.Getenv does.
func lookup(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
