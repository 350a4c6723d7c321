package supervisor

import (
	"context"

	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/stopconditions"
)

// scriptTailBytes is how much of a script's output is kept: its last line
// goes into the condition's message.
const scriptTailBytes = 4 << 10

// runScripts runs the custom_script conditions' processes for one
// evaluation, one after the other, in the run's directory with the run's
// environment, each within its timeout. They are processes of the run like
// the agent: the run's context (Ctrl+C, SIGTERM) and time budget stop them
// with kill_grace, a second Ctrl+C kills them at once, and whatever is left
// of a script's group when it ends is stopped. Once a signal came or the
// budget ran out the run is stopping and no result could change that, so
// nothing more is started; the conditions then say they were not run.
func (s *Supervisor) runScripts(ctx context.Context) map[string]stopconditions.ScriptResult {
	r := s.cfg.Stop
	scripts := stopconditions.Scripts(r.Success, r.Failure, r.Conditions)
	if len(scripts) == 0 {
		return nil
	}
	if !s.deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, s.deadline)
		defer cancel()
	}
	env := s.childEnv("evaluate")
	results := make(map[string]stopconditions.ScriptResult, len(scripts))
	for _, sc := range scripts {
		if s.signalled() != nil || ctx.Err() != nil {
			break
		}
		res, err := proc.Run(ctx, proc.Spec{
			Argv:      append([]string{sc.Program}, sc.Args...),
			Dir:       s.dir,
			Env:       env,
			Timeout:   sc.Timeout,
			KillGrace: s.cfg.Agent.KillGrace,
			TailBytes: scriptTailBytes,
			KillNow:   s.killNow,
		})
		if err != nil {
			// The run may have begun to stop between the check above and
			// the start: then the script was not judged, not broken.
			results[sc.Key] = stopconditions.ScriptResult{ExitCode: -1, Err: err.Error(), Stopped: ctx.Err() != nil}
			continue
		}
		results[sc.Key] = stopconditions.ScriptResult{
			ExitCode: res.ExitCode,
			Signal:   res.Signal,
			TimedOut: res.TimedOut,
			Stopped:  res.Canceled,
			Output:   string(res.Tail),
		}
	}
	return results
}
