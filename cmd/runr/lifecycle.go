package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/resume"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/supervisor"
	"github.com/runr-dev/runr/internal/termtext"
)

// workOn works on a run through the one runner of `runr run` and `runr
// resume` until it stops for good, and prints what happens: the live line,
// the notices, the summary. plan nil is a new run, which so describes
// (config, flags, task, id); else the planned continuation of a run.
func workOn(io *IOStreams, so supervisor.Options, plan *resume.Plan, auto, quiet, asJSON bool) error {
	cfg := so.Config
	if plan != nil {
		cfg = plan.Config
		if cfg != nil {
			warnConfig(io, cfg)
		}
	}
	// --json changes stdout only: progress stays on stderr unless --quiet.
	live := newLiveLine(io, quiet)
	var grace time.Duration
	if cfg != nil {
		grace = cfg.Agent.KillGrace
	}
	so.Progress, so.LiveOutput = live.update, live.watching()
	runner := &resume.Runner{
		Supervisor: so,
		Auto:       auto,
		Signaled:   signalNotice(live, grace),
		Declined:   live.declined,
		Recovered: func(stopped bool) {
			if quiet {
				return
			}
			if stopped {
				fmt.Fprintf(io.Err, "runr: run %s had crashed; stopped the agent process group it left behind\n", plan.RunID)
			} else {
				fmt.Fprintf(io.Err, "runr: run %s had crashed; continuing from its last saved state\n", plan.RunID)
			}
		},
		Report: func(st *state.State, err error) error {
			live.done()
			return finishRun(io, so.Store, st, err, asJSON, cfg)
		},
		TelemetryFailed: func(err error) {
			fmt.Fprintf(io.Err, "runr: telemetry: %s\n", termtext.Visible(err.Error()))
		},
		NotifyFailed: func(err error) {
			// errors.Join puts one failure on each line.
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintf(io.Err, "runr: warning: %s\n", termtext.Visible(line))
			}
		},
	}
	return runner.Run(context.Background(), plan)
}
