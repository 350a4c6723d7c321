package supervisor

import (
	"context"
	"sync"
	"time"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/state"
)

// graceWatch ends an agent call whose CLI printed its final result but does
// not exit (a known Claude Code failure: a hook or an MCP server that keeps
// it alive). After each stdout line it asks the parser whether the result
// came; agent.result_grace after the first line that brought it, it cancels
// the call's own context, and worker stops the process group as it stops
// any (SIGTERM, kill_grace, SIGKILL). The call's result then counts as if
// the agent had exited 0: not a worker_timeout, not stalled.
type graceWatch struct {
	parser agents.Parser
	grace  time.Duration
	cancel context.CancelFunc

	mu     sync.Mutex
	timer  *time.Timer
	seenAt time.Time // when the result was printed
	fired  bool      // the grace ran out and the call was ended
}

// watchResult returns the context the agent call runs under and the watch
// that cancels it. With agent.result_grace 0 nothing is watched.
func (s *Supervisor) watchResult(ctx context.Context, parser agents.Parser) (context.Context, *graceWatch) {
	grace := s.cfg.Agent.ResultGrace
	if grace <= 0 || !agents.ReportsResult(parser) {
		// Nothing to watch: no grace, or an agent (a command) whose
		// output never says its result was printed.
		return ctx, nil
	}
	callCtx, cancel := context.WithCancel(ctx)
	return callCtx, &graceWatch{parser: parser, grace: grace, cancel: cancel}
}

// wrap returns next (the call's stdout line handler) with the watch looking
// at the parser after each line.
func (w *graceWatch) wrap(next func([]byte) bool) func([]byte) bool {
	if w == nil {
		return next
	}
	return func(line []byte) bool {
		ok := next(line)
		w.line()
		return ok
	}
}

func (w *graceWatch) line() {
	if !agents.ResultPrinted(w.parser) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		return
	}
	w.seenAt = time.Now()
	w.timer = time.AfterFunc(w.grace, func() {
		w.mu.Lock()
		w.fired = true
		w.mu.Unlock()
		w.cancel()
	})
}

// settle stops the watch once the call is over. When the grace ended the
// call, it records why and returns the process's result as that of an
// agent that exited 0 after its result.
func (s *Supervisor) settleResult(w *graceWatch, res proc.Result) proc.Result {
	if w == nil {
		return res
	}
	w.mu.Lock()
	if w.timer != nil {
		w.timer.Stop()
	}
	fired, seenAt := w.fired, w.seenAt
	w.mu.Unlock()
	w.cancel()
	// Only the grace's own cancel counts: a signal or the time budget that
	// ended the call at the same moment still names the stop.
	if !fired || !res.Canceled || s.signalled() != nil || (!s.deadline.IsZero() && !s.o.Now().Before(s.deadline)) {
		return res
	}
	s.event(state.ResultGraceEvent{Reason: "result_grace", GraceMS: w.grace.Milliseconds(),
		AfterResultMS: time.Since(seenAt).Milliseconds(), ExitCode: res.ExitCode, Killed: res.Killed})
	s.log.Info("the agent printed its result but did not exit: ended after agent.result_grace")
	res.Canceled = false
	res.ExitCode = 0
	return res
}
