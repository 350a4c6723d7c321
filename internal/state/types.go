package state

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// SchemaVersion is the state.json schema this runr writes and reads. A file
// with a higher version is refused as state_corrupt.
const SchemaVersion = 1

// Phases of the tick loop (DESIGN §2).
const (
	PhaseImplement  = "implement"
	PhaseVerify     = "verify"
	PhaseReview     = "review"
	PhaseCheckpoint = "checkpoint"
	PhaseFinalize   = "finalize"
	PhaseStopped    = "stopped"
)

// Milestone statuses.
const (
	MilestonePending    = "pending"
	MilestoneInProgress = "in_progress"
	MilestoneApproved   = "approved"
	MilestoneFailed     = "failed"
	MilestoneRejected   = "rejected"
)

// Attempt outcomes (DESIGN §2, outcomes table).
const (
	OutcomeApproved   = "approved"
	OutcomeIncomplete = "incomplete"
	OutcomeFailed     = "failed"
	OutcomeRejected   = "rejected"
	OutcomeStopped    = "stopped" // the attempt ended with a stop (timeout, signal, blocked...)
	// OutcomeSwitched: the agent's limit or missing program ended the call
	// and the run switched to a fallback agent; like a stopped attempt it
	// counts for no retry, rate or breaker: it was the agent's limit, not
	// the work's.
	OutcomeSwitched = "switched"
)

// State is state.json: everything runr knows about one run.
//
// The fields `runr status` lists come first, in the order Summary reads
// them, so that it reads a few hundred bytes of each run however long the
// rest is (summary.go).
type State struct {
	SchemaVersion int         `json:"schema_version"`
	RunID         string      `json:"run_id"`
	RunStatus     string      `json:"run_status"`
	Phase         string      `json:"phase"`
	CreatedAt     time.Time   `json:"created_at"`
	UpdatedAt     time.Time   `json:"updated_at"`
	StoppedAt     *time.Time  `json:"stopped_at,omitempty"`
	ElapsedMS     int64       `json:"elapsed_ms"`
	Tick          int         `json:"tick"`
	Iteration     int         `json:"iteration"`
	Statistics    Statistics  `json:"statistics"`
	StopReason    *StopReason `json:"stop_reason,omitempty"`
	// Usage comes before the milestones too: `runr report` reads it
	// from the head of the file with the rest of the summary.
	Usage Usage `json:"usage"`
	// Scores are the scoreboard's figures of the milestones (Scores),
	// computed at every save and kept in the head of the file with the
	// usage, so that runr report reads neither the milestones nor the
	// timeline.
	Scores []Score `json:"scores"`

	Repo           string          `json:"repo"`
	Worktree       string          `json:"worktree,omitempty"`
	Branch         string          `json:"branch,omitempty"`
	Task           Task            `json:"task"`
	ConfigFile     string          `json:"config_file,omitempty"` // the config file read, relative to Repo ("" for none, or outside): runr's, like the task file, so advice to stash changes leaves it
	Budget         Budget          `json:"budget"`
	Milestones     []Milestone     `json:"milestones"`
	MilestoneIndex int             `json:"milestone_index"` // 0-based index of the current milestone
	Counters       Counters        `json:"counters"`
	Conditions     []ConditionProg `json:"conditions"`
	// LastProgressTick is the last tick that made progress (a changed tree,
	// a check that went from failing to passing, an approval).
	LastProgressTick   int               `json:"last_progress_tick"`
	LastErrorSignature string            `json:"last_error_signature,omitempty"`
	LastFailure        *Failure          `json:"last_failure,omitempty"`
	TreeHash           string            `json:"tree_hash,omitempty"`
	StartChanges       []string          `json:"start_changes,omitempty"`     // paths dirty before the run (allowed with --allow-dirty, or the task/config files)
	Baseline           map[string]string `json:"baseline,omitempty"`          // content hash of each path dirty before the run: guards judge only later changes
	GuardHead          string            `json:"guard_head,omitempty"`        // commits after it are judged by the guards: HEAD at start, then runr's last checkpoint commit ("" without commits)
	ReviewNotesHash    string            `json:"review_notes_hash,omitempty"` // the last review's notes, to see the same request twice
	StartFiles         []string          `json:"start_files,omitempty"`       // paths watched by file_created that existed at start
	Verify             []CheckResult     `json:"verify,omitempty"`            // the last verify, one per command
	AgentProcess       *Process          `json:"agent_process,omitempty"`     // the process running now, if any
	// AgentIndex is the agent the run calls now: 0 is agent.kind, n is
	// agent.fallback[n-1]. A resume goes on with it.
	AgentIndex int `json:"agent_index,omitempty"`
	// AgentSwitches are the run's switches to a fallback agent, oldest
	// first (at most one per entry of agent.fallback).
	AgentSwitches []AgentSwitch `json:"agent_switches,omitempty"`
	Resumable     bool          `json:"resumable"`
	ResumeFrom    *ResumeFrom   `json:"resume_from,omitempty"`
	AutoResume    AutoResume    `json:"auto_resume"`
	Fingerprint   Fingerprint   `json:"fingerprint"`
	Flags         Flags         `json:"flags"`
	StopRequested bool          `json:"stop_requested,omitempty"`
	// Parallel and Workers are a parallel run's (parallel.go): its
	// integration branch and merge queue, and a slot per worker.
	Parallel *Parallel      `json:"parallel,omitempty"`
	Workers  []WorkerSlot   `json:"workers,omitempty"`
	Extra    map[string]any `json:"extra,omitempty"`

	// Uncommitted is, for a run that completed in the user's checkout
	// with its work left uncommitted (checkpoint.commit off), the path of
	// each change git status listed when it stopped, read while the stop
	// was recorded, for the summary. In memory only: nil when it was not
	// read (any other run, a run loaded from its files), empty when git
	// listed nothing.
	Uncommitted []string `json:"-"`
}

// Task is what the run works on. Its whole text is kept once, in the run
// dir (task.md), never in state.json: a task of megabytes would
// otherwise be rewritten with every tick.
type Task struct {
	File string `json:"file,omitempty"` // relative to the repository
	// TextFile names the file of the run dir holding the whole task text
	// (task.md); "" in files written before it existed, which hold the
	// text inline as "prompt".
	TextFile string `json:"text_file,omitempty"`
	Bytes    int    `json:"bytes,omitempty"`  // the size of TextFile
	SHA256   string `json:"sha256,omitempty"` // the hex SHA-256 of TextFile
	// Prompt is the whole task text, in memory only: Store.Load reads it
	// from TextFile (or from the inline "prompt" of an older file), Store.Save
	// and CreateRun store it in Text.
	Prompt string `json:"-"`
}

// UnmarshalJSON reads the task of state.json, and the inline "prompt" of
// older files.
func (t *Task) UnmarshalJSON(b []byte) error {
	type plain Task
	var v struct {
		plain
		Prompt string `json:"prompt"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*t = Task(v.plain)
	t.Prompt = v.Prompt
	return nil
}

// Budget is the run's budget as granted so far (resume adds to it).
type Budget struct {
	TimeMS        int64   `json:"time_ms"`
	MaxTicks      int     `json:"max_ticks"`
	MaxIterations int     `json:"max_iterations"`
	MaxCostUSD    float64 `json:"max_cost_usd"`
	MaxTokens     int64   `json:"max_tokens"`
}

// Milestone is one unchecked checklist item of the task (or the whole task).
type Milestone struct {
	// Goal is the item's text, cut to MaxGoalBytes (GoalCut says so); the
	// whole item is in the task text.
	Goal    string `json:"goal"`
	GoalCut bool   `json:"goal_cut,omitempty"`
	Status  string `json:"status"`
	// Attempts are the milestone's last MaxAttempts attempts, oldest first;
	// Earlier sums up the ones before them, which only the timeline lists.
	Attempts []Attempt        `json:"attempts"`
	Earlier  *EarlierAttempts `json:"earlier_attempts,omitempty"`
	// Retries counts failed and rejected attempts since the milestone was
	// started or the run was resumed; it is what max_milestone_retries judges.
	Retries      int            `json:"retries"`
	Edges        map[string]int `json:"edges,omitempty"` // backward edges within this milestone
	ReviewRounds int            `json:"review_rounds,omitempty"`
	TreeHash     string         `json:"tree_hash,omitempty"` // recorded at checkpoint
	// StartTree is the git tree of the work tree when the milestone's first
	// agent call started: its changed lines are judged from it
	// (verify.coverage.min_changed).
	StartTree string `json:"start_tree,omitempty"`
	Commit    string `json:"commit,omitempty"`
}

// Attempt is one implement (and its verify and review) of a milestone.
type Attempt struct {
	Tick           int     `json:"tick"`
	Iteration      int     `json:"iteration"`
	Outcome        string  `json:"outcome"`
	ErrorSignature string  `json:"error_signature,omitempty"`
	Error          string  `json:"error,omitempty"` // one line: what failed
	DurationMS     int64   `json:"duration_ms"`
	ExitCode       int     `json:"exit_code"`
	CostUSD        float64 `json:"cost_usd"`
	Log            string  `json:"log,omitempty"` // relative to the run dir
	// Agent is the agent that made the attempt's call; nil in files
	// written before attempts recorded it.
	Agent *AgentRef `json:"agent,omitempty"`
	// Model is the key of usage.models the attempt's call was summed up
	// under (the model the agent's output named, else agent.model): the
	// scoreboard of runr report credits the attempt to it. "" before the
	// call was accounted, and in files written before attempts recorded it.
	Model string `json:"model,omitempty"`
	// Progress: the attempt changed the tree or turned a failing check into
	// a passing one, so far (no_progress). Kept here, not in memory, so
	// that a verify after a resume still knows the agent's call changed
	// files.
	Progress bool `json:"progress,omitempty"`
}

// AgentRef names an agent: its kind and the model asked for ("" for the
// CLI's default).
type AgentRef struct {
	Kind  string `json:"kind"`
	Model string `json:"model,omitempty"`
}

// String is the kind, with the model in parentheses when there is one:
// codex (gpt-5-codex).
func (a AgentRef) String() string {
	if a.Model == "" {
		return a.Kind
	}
	return a.Kind + " (" + a.Model + ")"
}

// Reasons for an agent switch.
const (
	SwitchRateLimited = "rate_limited" // a rate or usage limit that resets beyond resume.max_wait
	SwitchNotFound    = "not_found"    // the agent's program is missing
)

// AgentSwitch is one switch of the run to a fallback agent.
type AgentSwitch struct {
	Tick    int       `json:"tick"`
	At      time.Time `json:"at"`
	From    AgentRef  `json:"from"`
	To      AgentRef  `json:"to"`
	ToIndex int       `json:"to_index"` // the run's agent_index after the switch
	Reason  string    `json:"reason"`   // SwitchRateLimited or SwitchNotFound
	// ResetAt is when the limit resets (RFC 3339), when the agent said.
	ResetAt string `json:"reset_at,omitempty"`
	// Message says why, in words: "rate limited until 01:21, beyond resume.max_wait 6h".
	Message string `json:"message"`
}

// String says what the switch was, in a line: "switched from claude to
// codex (gpt-5-codex) at tick 3: rate limited until ..., beyond
// resume.max_wait 6h".
func (sw AgentSwitch) String() string {
	when := fmt.Sprintf("at tick %d", sw.Tick)
	if sw.Tick == 0 {
		when = "before the first call"
	}
	return fmt.Sprintf("switched from %s to %s %s: %s", sw.From, sw.To, when, sw.Message)
}

// AgentsUsed are the agents that made the run's calls, in the order they
// were first used: the attempts' agents, and the agent that hit its limit
// at each switch (a milestone's attempts beyond its last ones are listed
// only in the timeline; a switch is always in state.json). An agent whose
// program was missing made no call and is not listed.
func (st *State) AgentsUsed() []AgentRef {
	type use struct {
		tick int
		ref  AgentRef
	}
	var uses []use
	for _, sw := range st.AgentSwitches {
		if sw.Reason == SwitchRateLimited {
			uses = append(uses, use{sw.Tick, sw.From})
		}
	}
	for _, m := range st.Milestones {
		for _, a := range m.Attempts {
			if a.Agent != nil {
				uses = append(uses, use{a.Tick, *a.Agent})
			}
		}
	}
	slices.SortStableFunc(uses, func(x, y use) int { return x.tick - y.tick })
	var out []AgentRef
	for _, u := range uses {
		if u.ref.Kind != "" && !slices.Contains(out, u.ref) {
			out = append(out, u.ref)
		}
	}
	return out
}

// EarlierAttempts sums up the attempts of a milestone that state.json no
// longer lists (all but the last MaxAttempts); the timeline's attempt events
// tell each of them.
type EarlierAttempts struct {
	Count      int            `json:"count"`
	FirstTick  int            `json:"first_tick"`
	LastTick   int            `json:"last_tick"`
	Outcomes   map[string]int `json:"outcomes"` // attempts per outcome
	DurationMS int64          `json:"duration_ms"`
	CostUSD    float64        `json:"cost_usd"`
}

// Counters feed the stuck and failure rules.
type Counters struct {
	ConsecutiveFails int            `json:"consecutive_fails"`
	SameError        int            `json:"same_error"`
	Noop             int            `json:"noop"`
	NoProgress       int            `json:"no_progress"`
	Edges            map[string]int `json:"edges"`
	TestFailStreak   int            `json:"test_failure_streak"`
	Attempts         int            `json:"attempts"` // all attempts, for the circuit breaker
}

// ConditionProg is how close one rule is to firing.
type ConditionProg struct {
	Name     string  `json:"name"`
	Progress float64 `json:"progress"`
	Message  string  `json:"message"`
}

// Failure is the last failed check or agent call, for feedback and doctor.
type Failure struct {
	Tick      int    `json:"tick"`
	Phase     string `json:"phase"`
	Command   string `json:"command"`
	ExitCode  int    `json:"exit_code"`
	Tail      string `json:"tail"` // the last lines of its output
	Signature string `json:"signature,omitempty"`
	Log       string `json:"log,omitempty"`
	Notes     string `json:"notes,omitempty"` // review notes
	// Untested: the verify passed but did not show that it ran the
	// changed lines or any test (verify.coverage, verify.require_tests).
	Untested *stopreasons.Untested `json:"untested,omitempty"`
}

// CheckResult is one verify command's last result.
type CheckResult struct {
	Command  string `json:"command"`
	Passed   bool   `json:"passed"`
	ExitCode int    `json:"exit_code"`
}

// Process identifies a running process group so a crash can be cleaned up
// without ever killing a recycled pid.
type Process struct {
	PID       int       `json:"pid"`
	PGID      int       `json:"pgid"`
	StartTime uint64    `json:"start_time"` // clock ticks since boot (/proc/PID/stat field 22)
	StartedAt time.Time `json:"started_at"`
	Phase     string    `json:"phase"`
	Argv0     string    `json:"argv0"`
	// Usage is what the call has used so far, as its output told it,
	// written at most about once a second while it changes: a crash of
	// runr loses no more of the call's spend than the last second's,
	// because recovery adds it to the run's usage.
	Usage *CallUsage `json:"usage,omitempty"`
}

// CallUsage is the usage of an agent call in flight.
type CallUsage struct {
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64   `json:"cache_write_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd"`
	CostSource       string  `json:"cost_source"` // reported | estimated | unknown
	Model            string  `json:"model,omitempty"`
}

// Usage is what the agent consumed.
type Usage struct {
	CostUSD          float64 `json:"cost_usd"`
	CostEstimated    bool    `json:"cost_estimated,omitempty"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64   `json:"cache_write_tokens,omitempty"`
	AgentSessionID   string  `json:"agent_session_id,omitempty"`
	// Agent is the kind of the agent that made the run's latest call
	// ("" before the first).
	Agent string `json:"agent,omitempty"`
	// Models are the per-model totals of the run's calls (the cost
	// ledger's sums), at most MaxModels entries and ModelOther (usage.go).
	Models map[string]*ModelUsage `json:"models,omitempty"`
}

// Statistics summarise the milestones.
type Statistics struct {
	TotalMilestones  int     `json:"total_milestones"`
	Attempted        int     `json:"attempted"`
	Approved         int     `json:"approved"`
	Rejected         int     `json:"rejected"`
	Failed           int     `json:"failed"`
	RetryRate        float64 `json:"retry_rate"`
	RejectRate       float64 `json:"reject_rate"`
	ConsecutiveFails int     `json:"consecutive_fails"`
}

// StopReason records why the run stopped: the stop as it was decided, and
// the registry's fields for its code.
type StopReason struct {
	stopreasons.Stop
	ExitCode       int    `json:"exit_code"`
	Family         string `json:"family"`
	Category       string `json:"category"`
	TerminalStatus string `json:"terminal_status"`
}

// UnmarshalJSON accepts the bare-string stop_reason of older files.
func (r *StopReason) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*r = StopReason{Stop: stopreasons.Stop{Code: stopreasons.Code(s)}}
		r.fill()
		return nil
	}
	type plain StopReason
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = StopReason(p)
	if r.Family == "" {
		r.fill()
	}
	return nil
}

func (r *StopReason) fill() {
	r.ExitCode = stopreasons.ExitCode(r.Code)
	if reg, ok := stopreasons.Lookup(r.Code); ok {
		r.Family = string(reg.Family)
		r.Category = string(reg.Category)
		if r.Message == "" {
			r.Message = reg.Title
		}
	}
}

// NewStopReason builds a stop reason with the registry's fields filled in.
func NewStopReason(code stopreasons.Code, approved int, message string) *StopReason {
	r := &StopReason{Stop: stopreasons.Stop{Code: code, Message: message}}
	r.fill()
	r.TerminalStatus = stopreasons.TerminalStatus(code, approved)
	return r
}

// ResumeFrom says where a resume continues.
type ResumeFrom struct {
	Milestone int    `json:"milestone"` // 1-based
	Phase     string `json:"phase"`
}

// AutoResume records the automatic resumes of the run: how many in all,
// and the last MaxAutoResumeHistory of them (the timeline's auto_resume
// events tell each one).
type AutoResume struct {
	Count   int                `json:"count"`
	History []AutoResumeRecord `json:"history"`
}

// AutoResumeRecord is one automatic resume.
type AutoResumeRecord struct {
	At     time.Time        `json:"at"`
	Reason stopreasons.Code `json:"reason"`
	WaitMS int64            `json:"wait_ms"`
}

// Fingerprint describes the environment the run started in.
type Fingerprint struct {
	RunrVersion  string `json:"runr_version"`
	AgentPath    string `json:"agent_path,omitempty"`
	AgentVersion string `json:"agent_version,omitempty"`
	GitHead      string `json:"git_head,omitempty"`
	ConfigHash   string `json:"config_hash"`
}

// Flags are the run's switches that resume keeps (and may add to).
type Flags struct {
	AllowDeps     bool `json:"allow_deps,omitempty"`
	AllowDirty    bool `json:"allow_dirty,omitempty"`
	ForceParallel bool `json:"force_parallel,omitempty"`
	Worktree      bool `json:"worktree,omitempty"`
	// Settings are the config keys the run's flags set (--task, --verify,
	// the argv after -- as agent.kind and agent.command...): a resume
	// keeps their recorded values whatever runr.yaml and RUNR_* say now.
	Settings []string `json:"settings,omitempty"`
}
