package main

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/resume"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/supervisor"
)

// autoResumeEnv is what --auto-resume needs from `runr run` or `runr resume`.
type autoResumeEnv struct {
	io     *IOStreams
	store  *state.Store
	cfg    *config.Config
	sigs   <-chan os.Signal
	live   *liveLine
	newSup func() *supervisor.Supervisor
}

// stopPoll is how often the wait looks for a `runr stop` request.
const stopPoll = 200 * time.Millisecond

// autoResume continues a run in this process for as long as it stops with an
// auto-resumable reason, at most resume.max_auto_resumes times, after the
// backoff or the rate limit's reset time. The run's lock is held through the
// wait, so no other runr starts on it meanwhile. A signal or a `runr stop`
// during the wait ends the run there (user_stopped or terminated), recorded
// in state.json like any stop. It returns the last stop.
func autoResume(env autoResumeEnv, lock *state.Lock, st *state.State) (*state.State, error) {
	// The supervisors run with KeepLock, so the lock is held from one
	// continuation to the next and released here, whatever happens.
	defer func() {
		if lock != nil {
			lock.Release()
		}
	}()
	for done := 0; ; done++ {
		wait, ok := resume.NextWait(st, env.cfg.Resume, done, time.Now())
		if !ok {
			return st, nil
		}
		if lock == nil {
			var err error
			if lock, err = env.store.Acquire(st.RunID); err != nil {
				return st, err
			}
		}
		reason := st.StopReason.Code
		until := time.Now().Add(wait)
		appendEvent(env.store, st, "auto_resume", map[string]any{"attempt": done + 1, "max": env.cfg.Resume.MaxAutoResumes,
			"reason": string(reason), "wait_ms": wait.Milliseconds(), "until": until.UTC().Format(time.RFC3339)})
		env.live.update(supervisor.Progress{RunID: st.RunID, Event: "wait", WaitingTill: until,
			Message: fmt.Sprintf("%s · attempt %d of %d", reason, done+1, env.cfg.Resume.MaxAutoResumes)})

		if code, why := waitOrStop(env, st.RunID, until); code != "" {
			return env.newSup().StopWaiting(st, code, why+" during the auto-resume wait")
		}

		resume.RecordAuto(st, time.Now(), wait)
		plan, err := resume.Prepare(st, env.cfg, resume.Request{}, false)
		if err != nil {
			return st, err
		}
		sup := env.newSup()
		sup.Lock(lock)
		st, err = sup.Continue(context.Background(), plan.State)
		lock = sup.HeldLock()
		if err != nil {
			return st, err
		}
	}
}

// waitOrStop waits until until; a signal or a stop request ends the wait
// early and names the stop: SIGINT and `runr stop` are user_stopped,
// SIGTERM and SIGHUP terminated.
func waitOrStop(env autoResumeEnv, id string, until time.Time) (stopreasons.Code, string) {
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	poll := time.NewTicker(stopPoll)
	defer poll.Stop()
	for {
		select {
		case <-timer.C:
			return "", ""
		case sig := <-env.sigs:
			switch sig {
			case os.Interrupt:
				return stopreasons.UserStopped, "SIGINT"
			case syscall.SIGHUP:
				return stopreasons.Terminated, "SIGHUP"
			default:
				return stopreasons.Terminated, "SIGTERM"
			}
		case <-poll.C:
			if env.store.StopRequested(id) {
				return stopreasons.UserStopped, "runr stop"
			}
		}
	}
}

// appendEvent adds one event to the run's timeline outside a supervisor;
// the timeline is a record, so a failure to write it does not stop the run.
func appendEvent(store *state.Store, st *state.State, typ string, data map[string]any) {
	tl, err := store.OpenTimeline(st.RunID)
	if err != nil {
		return
	}
	defer tl.Close()
	tl.Append(typ, st.Tick, st.Phase, data)
}
