package supervisor

import (
	"time"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/coverage"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/state"
)

// Facts are what the loop saw in one phase step, gathered into one value
// for Decide: implement fills in the call, the adapter's reading of it and
// the guards' verdicts; verify its checks; review its process; checkpoint
// the failure of its git calls.
type Facts struct {
	// Err is runr's own failure to carry out the step: its I/O, a program
	// it needs (proc.ErrNotFound), a git call of the checkpoint (At is
	// read when it failed).
	Err error
	// Command is what the step ran: the agent's program, the review's
	// words.
	Command string
	// Log is the step's log, relative to the run dir.
	Log string
	// Process is how the step's process ended (implement, review); At is
	// the signal and the time budget as read right after it.
	Process proc.Result
	At      Reading
	// Sandbox is the sandbox helper's own failure line; "" for none.
	Sandbox string
	// Spend is the budget the spend watch stopped the call on
	// ("budget.max_cost_usd" or "budget.max_tokens"); "" for none.
	Spend string
	// Agent is the adapter's reading of the call's output.
	Agent agents.Result
	// Guard is what the guards found after the call; nil when the call
	// decided the step by itself (CallDecides).
	Guard *GuardFacts
	// Checks are the verify commands run, in order, up to the one that
	// ended the step (CheckFacts.Ends).
	Checks []CheckFacts
	// Tested is what a verify whose commands all passed showed it tested;
	// nil when they did not all pass, or nothing was asked.
	Tested *TestedFacts
	// Switch is the loop's try at the switch the decision asked for; nil
	// before it.
	Switch *SwitchFacts
	// Now is when the step ended: a limit's reset time is judged from it.
	Now time.Time
	// DirGone: the run's working directory is gone (a deleted worktree).
	DirGone bool
	// StoreDamaged: the run's own directory in the store was swapped or
	// removed under the run (state.Store.CheckRunDir); nil when it is whole.
	StoreDamaged error
}

// Reading is the run's signal and time budget as read at one moment.
type Reading struct {
	Signal         *signalStop   // the first signal; nil for none
	DeadlinePassed bool          // the time budget's deadline has passed
	Elapsed        time.Duration // the run's elapsed time, over every invocation
}

// GuardFacts are the guards' verdicts on the tree after an agent call.
type GuardFacts struct {
	// Err is a failure of the guards' git calls or globs, At read when it
	// happened; the verdicts after it are missing.
	Err error
	At  Reading
	// Looked: the tree was read, and Tree is its fingerprint.
	Looked bool
	Tree   string
	// Meta are git's own files changed since the start, Scope the changed
	// files outside scope.allow or inside scope.deny, Protected the
	// protected files changed (not already among those).
	Meta, Scope, Protected []guard.Violation
	// Lockfiles are the changed files that match scope.lockfiles.
	Lockfiles []string
	// Committed are the changed files the agent committed itself.
	Committed []string
}

// stops reports whether the verdicts stop the run (Decide's guards), the
// lockfiles counting unless allowDeps.
func (g *GuardFacts) stops(allowDeps bool) bool {
	return len(g.Meta)+len(g.Scope)+len(g.Protected) > 0 || !allowDeps && len(g.Lockfiles) > 0
}

// CheckFacts is one verify command's run.
type CheckFacts struct {
	Command string
	Process proc.Result
	At      Reading
}

// TestedFacts are what a passing verify showed it tested: the tests its
// runners' summaries counted, and the share of the milestone's changed
// lines it ran (nil when verify.coverage.min_changed is 0).
type TestedFacts struct {
	Tests    coverage.Tests
	Coverage *coverage.Verdict
}

// SwitchFacts are what came of a switch to a fallback agent.
type SwitchFacts struct {
	Switched bool
	From, To state.AgentRef
}

// Switch asks the loop to switch the run to its next usable fallback agent
// (agent.fallback).
type Switch struct {
	Reason  string    // state.SwitchRateLimited or state.SwitchNotFound
	Why     string    // in words
	ResetAt time.Time // the limit's reset; zero when none is known
}

// Counters are the run's counters one step reads and changes (DESIGN §4),
// with what they are judged on.
type Counters struct {
	// The run's counters as state.json keeps them: finished attempts
	// (circuit_breaker), identical failures in a row (same_error), calls
	// that left the tree as it was (noop), attempts without progress
	// (no_progress), failed or rejected milestones in a row
	// (consecutive_fails), failed verify runs in a row
	// (test_failure_streak), the backward edges within the milestone
	// (max_edge).
	state.Counters
	// LastErrorSignature is the last failure's (same_error compares with
	// it), LastProgressTick the tick of the last progress.
	LastErrorSignature string
	LastProgressTick   int
	// ReviewNotesHash is the last request for changes (a repeated one is
	// a review loop); TreeHash the tree's fingerprint after the last call.
	ReviewNotesHash string
	TreeHash        string
	// The milestone's: its failed and rejected attempts
	// (max_milestone_retries), its review rounds that asked for changes,
	// and its backward edges as recorded.
	Retries        int
	ReviewRounds   int
	MilestoneEdges map[string]int
}

// Rules are the parts of the configuration the decision reads.
type Rules struct {
	Verify     bool // verify commands are configured
	Review     bool // a review command is configured
	Skip       bool // on_milestone_failure: skip
	MaxRetries int  // max_milestone_retries; 0 retries without limit
	AllowDeps  bool // --allow-deps: lockfiles may change
	Fallbacks  int  // the number of fallback agents (agent.fallback)
	// MaxWait is resume.max_wait: a limit that resets later switches agents.
	MaxWait time.Duration
	// RequireTests is verify.require_tests; MinChanged
	// verify.coverage.min_changed (0: off).
	RequireTests string
	MinChanged   float64
	// The timeouts, for the stops' messages.
	AgentTimeout, IdleTimeout, VerifyTimeout time.Duration
}

// Run is what Decide reads of the run: its counters, and what the records
// and messages of an outcome name.
type Run struct {
	Counters
	ID        string
	Dir       string // where the agent works
	Tick      int
	Milestone int // 1-based
	Goal      string
	// Attempt is the milestone's last attempt (a copy); nil for none.
	Attempt *state.Attempt
	// Checks are the last verify's results.
	Checks []state.CheckResult
	// The run's usage so far, the step's call included, and its budget.
	CostUSD       float64
	Tokens        int64 // input and output tokens (budget.max_tokens)
	CostEstimated bool
	Budget        state.Budget
}
