package resume

import (
	"context"
	"slices"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/notify"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/supervisor"
	"github.com/runr-dev/runr/internal/telemetry"
)

// Run works on a run until it stops for good and hands its last stop to
// Report: a new run when plan is nil (the runner's Supervisor options say
// what it is), else the continuation plan describes (Open made it and holds
// the run's lock). Around the work it catches the signals, sets up the
// run's telemetry and notifications, and after Report it notifies the last
// stop and flushes the telemetry, in that order, so that neither delays the
// summary.
func (r *Runner) Run(ctx context.Context, plan *Plan) error {
	cfg := r.Supervisor.Config
	if plan != nil {
		cfg = plan.Config
	}
	sigs, stopSignals := catchSignals(r.Signaled)
	defer stopSignals()
	tel := r.startTelemetry(cfg)
	// Deferred: the flush comes after the report, and bounds the exit.
	defer r.flushTelemetry(tel)

	w := *r
	w.Supervisor.Signals = sigs
	w.Supervisor.Observer = tel.Observer()
	w.Supervisor.Milestones = milestoneNotifier(cfg, r.Supervisor.Environ)
	var st *state.State
	var err error
	if plan == nil {
		st, err = w.start(ctx)
	} else {
		st, err = w.continuePlan(ctx, plan)
	}
	out := err
	if r.Report != nil {
		out = r.Report(st, err)
	}
	if st != nil && st.StopReason != nil {
		r.notifyStop(cfg, st)
	}
	return out
}

// startTelemetry is the OpenTelemetry of a run with config cfg (nil: the
// defaults), nil when it is off. One that cannot be set up is told to
// TelemetryFailed and the run goes on without it.
func (r *Runner) startTelemetry(cfg *config.Config) *telemetry.Telemetry {
	o := telemetry.Options{Environ: r.Supervisor.Environ, Version: r.Supervisor.Version}
	if cfg != nil {
		o.Endpoint, o.Timeout = cfg.Telemetry.OTLPEndpoint, cfg.Telemetry.Timeout
		o.Agent, o.Model = cfg.Agent.Kind, cfg.Agent.Model
	}
	t, err := telemetry.New(context.Background(), o)
	if err != nil {
		r.telemetryFailed(err)
		return nil
	}
	return t
}

// flushTelemetry sends what is left within telemetry.timeout; a collector
// down or slow is told to TelemetryFailed and changes no exit code.
func (r *Runner) flushTelemetry(t *telemetry.Telemetry) {
	if err := t.Shutdown(); err != nil {
		r.telemetryFailed(err)
	}
}

func (r *Runner) telemetryFailed(err error) {
	if r.TelemetryFailed != nil {
		r.TelemetryFailed(err)
	}
}

// notifyStop sends the stop of st to notify.command and the webhook. It
// returns within notify.timeout (and the command's kill grace); a failure
// goes to NotifyFailed and never changes the exit code.
func (r *Runner) notifyStop(cfg *config.Config, st *state.State) {
	if cfg == nil {
		return
	}
	n := notify.New(cfg.Notify, r.Supervisor.Environ, "")
	if !n.Enabled() {
		return
	}
	ev, err := notify.StopEvent(r.Supervisor.Store, st)
	if err == nil {
		err = n.Send(context.Background(), ev)
	}
	if err != nil && r.NotifyFailed != nil {
		r.NotifyFailed(err)
	}
}

// milestoneNotifier is the supervisor's hook for notify.on milestone; nil
// when nothing would be sent.
func milestoneNotifier(cfg *config.Config, environ []string) supervisor.MilestoneNotifier {
	if cfg == nil {
		return nil
	}
	n := notify.New(cfg.Notify, environ, "")
	if !n.Enabled() || !slices.Contains(cfg.Notify.On, config.NotifyOnMilestone) {
		return nil
	}
	return n
}
