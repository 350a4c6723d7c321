package main

import (
	"context"
	"fmt"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/telemetry"
	"github.com/runr-dev/runr/internal/termtext"
)

// startTelemetry is the OpenTelemetry of a run with config cfg (nil: the
// defaults), nil when it is off. One that cannot be set up is said once on
// stderr and the run goes on without it.
func startTelemetry(io *IOStreams, cfg *config.Config, version string) *telemetry.Telemetry {
	o := telemetry.Options{Environ: io.Environ, Version: version}
	if cfg != nil {
		o.Endpoint, o.Timeout = cfg.Telemetry.OTLPEndpoint, cfg.Telemetry.Timeout
		o.Agent, o.Model = cfg.Agent.Kind, cfg.Agent.Model
	}
	t, err := telemetry.New(context.Background(), o)
	if err != nil {
		fmt.Fprintf(io.Err, "runr: telemetry: %s\n", termtext.Visible(err.Error()))
		return nil
	}
	if t != nil && cfg != nil && cfg.Parallel.Workers > 1 {
		// Said, not left to be found out at the collector.
		fmt.Fprintf(io.Err, "runr: telemetry: a parallel run (parallel.workers %d) is not traced yet: it sends no spans or metrics\n", cfg.Parallel.Workers)
	}
	return t
}

// flushTelemetry sends what is left within telemetry.timeout; a collector
// down or slow is said once on stderr and changes no exit code.
func flushTelemetry(io *IOStreams, t *telemetry.Telemetry) {
	if err := t.Shutdown(); err != nil {
		fmt.Fprintf(io.Err, "runr: telemetry: %s\n", termtext.Visible(err.Error()))
	}
}
