package resume

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/runr-dev/runr/internal/parallel"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/supervisor"
)

// Runner is one invocation's work on one run: `runr run` (a new run, or the
// existing run --run-id names) and `runr resume`, sequential or parallel,
// all go through its Run. Run wires, once for all of them, what every such
// invocation has: the signals runr catches, the run's telemetry, the
// notifications of its stops and approved milestones, and the run's lock.
// It owns the lock from the moment it is taken until the run stops for
// good, automatic continuations (Auto) and their waits included, so that no
// other runr can take the run between two continuations.
type Runner struct {
	// Supervisor configures the supervisor of every continuation: Store,
	// Repo, Environ, Version, Progress and LiveOutput; for a new run also
	// Config, Flags, the task and RunID, which a planned continuation takes
	// from its plan. Run fills in Signals, Observer and Milestones. Its
	// Store, Signals and Progress serve the auto-resume wait too: a signal
	// or a `runr stop` during the wait ends the run, and the wait is
	// reported as a Progress whose message is a supervisor.ProgressWait.
	Supervisor supervisor.Options
	// Auto continues after an auto-resumable stop (--auto-resume); a
	// parallel run has no auto-resume.
	Auto bool
	// Recovered is told, before a crashed run continues, whether the agent
	// process group its dead runr left behind was still alive and stopped.
	Recovered func(stopped bool)
	// Declined is told when an auto-resumable stop is not continued, and
	// why (a spend cap, a reset beyond resume.max_wait, the automatic
	// resumes used up): that stop stands and goes to Report.
	Declined func(st *state.State, d Decision)
	// Signaled is told of each signal as it arrives, before the run takes
	// it, so that what happens next can be said at once.
	Signaled func(os.Signal)
	// Report is told of the run's last stop (a nil state: no run was
	// created, and err says why) once the run's lock is released, before
	// that stop is notified and the telemetry flushed; what it returns is
	// what Run returns. Nil returns err.
	Report func(st *state.State, err error) error
	// TelemetryFailed is told when telemetry cannot be set up or flushed,
	// and NotifyFailed when a notification of a stop could not be sent:
	// the run goes on, its exit code unchanged.
	TelemetryFailed func(error)
	NotifyFailed    func(error)
	// Seed seeds the jitter added to a wait for a limit's reset; 0 takes
	// one from the clock. It is recorded with each wait (jitter_seed).
	Seed uint64
}

// stopPoll is how often the auto-resume wait looks for a `runr stop` request.
const stopPoll = 200 * time.Millisecond

// start creates a new run with the runner's supervisor options and works
// on it until it stops for good. A nil state means no run was created.
func (r *Runner) start(ctx context.Context) (*state.State, error) {
	if r.Supervisor.Config.Parallel.Workers > 1 {
		// The coordinator takes the new run's lock and releases it.
		return parallel.Run(ctx, parallel.Options{Supervisor: r.Supervisor})
	}
	sup := supervisor.New(r.Supervisor)
	st, err := sup.Start(ctx)
	lock := sup.HeldLock()
	defer release(lock)
	if err != nil || st == nil || !r.Auto {
		return st, err
	}
	return r.autoResume(ctx, r.Supervisor, lock, st)
}

// continuePlan resumes the run of plan, made by Open, under the lock Open
// took, and releases that lock when the run stops for good. A crashed run
// is recovered first; an error there returns a nil state.
func (r *Runner) continuePlan(ctx context.Context, plan *Plan) (*state.State, error) {
	defer plan.Release()
	st := plan.State
	if plan.Lock == nil {
		return nil, stopreasons.Errorf(stopreasons.InternalError, "run %s: a plan without the run's lock cannot be continued", plan.RunID)
	}
	o := r.Supervisor
	o.Config = plan.Config
	o.Flags = st.Flags
	o.TaskFile, o.Prompt = st.Task.File, st.Task.Prompt
	if st.Repo != "" {
		o.Repo = st.Repo
	}
	if st.Parallel != nil {
		// A parallel run's coordinator recovers its workers itself; it has
		// no auto-resume.
		return parallel.Continue(ctx, parallel.Options{Supervisor: o}, st)
	}
	sup := supervisor.New(o)
	sup.Lock(plan.Lock)
	if plan.Crashed {
		stopped, err := sup.RecoverCrash(st)
		if err != nil {
			return nil, err
		}
		if r.Recovered != nil {
			r.Recovered(stopped)
		}
	}
	st, err := sup.Continue(ctx, st)
	if err != nil || !r.Auto {
		return st, err
	}
	return r.autoResume(ctx, o, plan.Lock, st)
}

func release(l *state.Lock) {
	if l != nil {
		l.Release()
	}
}

// autoResume continues the run for as long as it stops with an
// auto-resumable reason, at most resume.max_auto_resumes times, after the
// backoff or the rate limit's reset time, holding lock throughout. A signal
// during a call ends the loop with the stop it caused (Decide); a signal or
// a `runr stop` during the wait ends the run there (user_stopped or
// terminated), recorded by the supervisor like any stop. It returns the last
// stop; the caller releases lock.
func (r *Runner) autoResume(ctx context.Context, o supervisor.Options, lock *state.Lock, st *state.State) (*state.State, error) {
	cfg, store := o.Config, o.Store
	if lock == nil {
		// Start and Continue hand over the lock they hold; waiting without
		// it would let another runr take the run meanwhile.
		return st, stopreasons.Errorf(stopreasons.InternalError, "run %s: the auto-resume wait needs the run's lock", st.RunID)
	}
	progress := o.Progress
	if progress == nil {
		progress = func(supervisor.Progress) {}
	}
	seed := r.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	jitter := Jitter(seed)
	for done := 0; ; done++ {
		d := Decide(st, cfg.Resume, done, time.Now(), jitter)
		if d.Action != ActionWait {
			// Only a stop that was auto-resumable is declined: a signal's
			// stop ends the loop as it is, with its code (130 or 143).
			if d.GiveUp != GiveUpNotResumable && d.GiveUp != GiveUpSignal {
				ev := state.AutoResumeDeclinedEvent{Reason: string(st.StopReason.Code), Declined: string(d.GiveUp), Why: d.Why, LimitKind: d.LimitKind}
				if !d.ResetAt.IsZero() {
					ev.ResetAt = d.ResetAt.UTC().Format(time.RFC3339)
				}
				appendEvent(store, st, ev)
				if r.Declined != nil {
					r.Declined(st, d)
				}
			}
			return st, nil
		}
		wait := d.Wait
		// The last stop is notified once it is reported; this one now,
		// before the wait.
		r.notifyStop(cfg, st)
		reason := st.StopReason.Code
		until := time.Now().Add(wait)
		ev := state.AutoResumeEvent{Attempt: done + 1, Max: cfg.Resume.MaxAutoResumes,
			Reason: string(reason), WaitMS: wait.Milliseconds(), Until: until.UTC().Format(time.RFC3339Nano)}
		msg := fmt.Sprintf("%s · attempt %d of %d", reason, done+1, cfg.Resume.MaxAutoResumes)
		if !d.ResetAt.IsZero() {
			ev.AutoResumeLimit = &state.AutoResumeLimit{ResetAt: d.ResetAt.UTC().Format(time.RFC3339), LimitKind: d.LimitKind,
				JitterMS: d.Jitter.Milliseconds(), JitterSeed: seed}
			msg = fmt.Sprintf("auto-resume %d of %d: %s", done+1, cfg.Resume.MaxAutoResumes, d.Why)
		}
		appendEvent(store, st, ev)
		progress(supervisor.Progress{RunID: st.RunID, Msg: supervisor.ProgressWait{Until: until, ResetAt: d.ResetAt, Message: msg}})

		if code, why := waitOrStop(store, o.Signals, st.RunID, until); code != "" {
			sup := supervisor.New(o)
			sup.Lock(lock)
			return sup.StopWaiting(st, code, why+" during the auto-resume wait")
		}

		RecordAuto(st, time.Now(), wait)
		plan, err := Prepare(st, cfg, Request{}, false)
		if err != nil {
			sup := supervisor.New(o)
			sup.Lock(lock)
			return sup.Fail(st, err)
		}
		sup := supervisor.New(o)
		sup.Lock(lock)
		if st, err = sup.Continue(ctx, plan.State); err != nil {
			return st, err
		}
	}
}

// waitOrStop waits until until; a signal or a stop request ends the wait
// early and names the stop: SIGINT and `runr stop` are user_stopped,
// SIGTERM and SIGHUP terminated.
func waitOrStop(store *state.Store, sigs <-chan os.Signal, id string, until time.Time) (stopreasons.Code, string) {
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	poll := time.NewTicker(stopPoll)
	defer poll.Stop()
	for {
		select {
		case <-timer.C:
			return "", ""
		case sig := <-sigs:
			return stopreasons.ForSignal(sig)
		case <-poll.C:
			if store.StopRequested(id) {
				return stopreasons.UserStopped, "runr stop"
			}
		}
	}
}

// appendEvent adds one event to the run's timeline outside a supervisor;
// the timeline is a record, so a failure to write it does not stop the run.
func appendEvent(store *state.Store, st *state.State, data state.EventData) {
	tl, err := store.OpenTimeline(st.RunID)
	if err != nil {
		return
	}
	defer tl.Close()
	tl.Append(st.Tick, st.Phase, data)
}
