package stopconditions

import "time"

// Snapshot is the state of a run that evaluation reads; the supervisor fills
// it from state.json after each tick.
type Snapshot struct {
	Tick, Iteration int
	Elapsed         time.Duration
	CostUSD         float64
	Tokens          int64
	Attempts        int // all attempts of the run (circuit breaker)

	// Checking says the next step checks the last agent call's work
	// (verify, review, checkpoint) rather than calling the agent: the
	// iteration budget waits for the next call, so the work of the last
	// call it allowed is still judged.
	Checking bool

	// Milestone statistics. Retried counts the attempted milestones with more
	// than one attempt.
	TotalMilestones, Attempted, Approved, Rejected, Failed, Retried int
	Finished                                                        bool // no milestone left to work on

	// MilestoneFailures counts the failed and rejected attempts of the current
	// milestone since it started or the run was resumed.
	MilestoneFailures int
	// LastFailureAgent says the last failure was the agent's own, which makes a
	// used-up milestone worker_failed instead of verification_failed.
	LastFailureAgent bool
	// LastFailureUntested says the last failure was a verify that passed
	// without running the changed lines or any test: changes_not_tested.
	LastFailureUntested bool
	Milestone           int // 1-based current milestone

	ConsecutiveFails, SameError, Noop, NoProgress int

	Edges          map[string]int // backward edges of the current milestone: "verify->implement", "review->implement"
	ReviewRounds   int
	ReviewRepeated bool // the review asked for the same changes twice in a row
	TestFailStreak int  // failed verify runs in a row

	Verify        []Check     // the last verify run, one per command, by exact text
	LastOutput    string      // tail of the last agent call's output
	LastError     *ErrorEvent // the last agent or verify error this tick, nil if none
	StopRequested bool        // a `runr stop` request

	RepoDir string
	// StartFiles holds the file_created paths (as written in the condition)
	// that existed when the run started.
	StartFiles map[string]bool
	// Scripts holds the results of the custom_script processes the
	// supervisor ran for this evaluation, by Script.Key.
	Scripts map[string]ScriptResult
}

// Check is the result of one verify command.
type Check struct {
	Command string
	Passed  bool
}

// Error sources.
const (
	SourceAgent  = "agent"
	SourceVerify = "verify"
)

// ErrorEvent is an error of an agent call or a verify command.
type ErrorEvent struct {
	Source string // SourceAgent | SourceVerify
	Text   string
}
