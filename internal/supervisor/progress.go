package supervisor

import (
	"time"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/state"
)

// Progress is what the live line shows: where the run is, and the message
// that says what happened (a tick started or ended, the agent did
// something, a warning...). The message is one of the Progress* types
// below; a reader switches on it once.
type Progress struct {
	RunID      string
	Tick       int
	Phase      string
	Milestone  int // 1-based
	Milestones int
	Elapsed    time.Duration
	Budget     time.Duration
	CostUSD    float64
	Closest    *state.ConditionProg
	// Worker is the worker of a parallel run the progress is of (1-based);
	// 0 for a sequential run and the parallel run's own messages.
	Worker int
	Msg    ProgressMsg
}

// ProgressMsg is one of the progress messages below.
type ProgressMsg interface{ progressMsg() }

// ProgressTick: a tick starts.
type ProgressTick struct{}

// ProgressTickDone: a tick ended; the Progress's Phase and Milestone are
// the ones it worked on.
type ProgressTickDone struct {
	Outcome    string
	Files      *FileCounts   // the changes of the tick's agent call
	Verify     string        // "passed" or "failed", when the tick ran the checks
	VerifyTime time.Duration // how long the checks took
}

// ProgressActivity is what the agent is doing now; of the Progress, only
// Worker is set beside it.
type ProgressActivity struct {
	agents.Activity
}

// ProgressStop: the run (or a parallel run's worker) stopped.
type ProgressStop struct {
	Message string
}

// ProgressWait: the run waits to resume (--auto-resume).
type ProgressWait struct {
	Until time.Time
	// ResetAt is the limit's reset the wait runs to; zero for a backoff.
	ResetAt time.Time
	Message string
}

// ProgressWarning is said once, whatever else the live line shows.
type ProgressWarning struct {
	Message string
}

// ProgressNote is a parallel run's own news: a milestone merged or
// requeued.
type ProgressNote struct {
	Message string
}

func (ProgressTick) progressMsg()     {}
func (ProgressTickDone) progressMsg() {}
func (ProgressActivity) progressMsg() {}
func (ProgressStop) progressMsg()     {}
func (ProgressWait) progressMsg()     {}
func (ProgressWarning) progressMsg()  {}
func (ProgressNote) progressMsg()     {}
