package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// The timeline's events (docs/state.md, "Timeline events"): each one is a
// type of this file, whose EventType is the line's "type" and whose fields
// are the line's "data". A writer builds the value, so a field it forgets is
// a compile error or a failing round-trip test (events_test.go), and a
// reader switches on the type once.
//
// The JSON of each type is what earlier runr versions wrote: a field that
// only some writers set, or only sometimes, is omitted when unset; a group
// of fields set together (a tick's file counts) is an embedded pointer,
// present or absent as one.

// Event is one line of timeline.jsonl: {seq, ts, type, tick, phase, data}.
// Its type is its data's.
type Event struct {
	Seq   int64
	TS    time.Time
	Tick  int
	Phase string
	Data  EventData
}

// Type is the event's "type" in timeline.jsonl.
func (e Event) Type() string {
	if e.Data == nil {
		return ""
	}
	return e.Data.EventType()
}

// MarshalJSON writes the event as EncodeEvent does.
func (e Event) MarshalJSON() ([]byte, error) { return EncodeEvent(e) }

// UnmarshalJSON reads the event as DecodeEvent does.
func (e *Event) UnmarshalJSON(line []byte) error {
	ev, err := DecodeEvent(line)
	if err != nil {
		return err
	}
	*e = ev
	return nil
}

// EventData is the data of one timeline event. A value decoded from the
// timeline is one of the event types below, or an UnknownEvent for a type
// this runr does not know (written by a newer or an older runr).
type EventData interface {
	// EventType is the event's "type" in timeline.jsonl.
	EventType() string
}

// RunStartedEvent: a run was created. A parallel run's coordinator also
// says how many workers it has.
type RunStartedEvent struct {
	Repo       string `json:"repo"`
	Milestones int    `json:"milestones"`
	TaskFile   string `json:"task_file"` // relative to the repository; "" for --prompt
	Workers    int    `json:"workers,omitempty"`
	// Milestone is the one the first tick works on (1-based): a parallel
	// worker's run starts at its own milestone, not the first.
	Milestone int `json:"milestone,omitempty"`
}

// RunResumedEvent: a resume (or an automatic resume) continues the run.
type RunResumedEvent struct {
	Milestone int    `json:"milestone"` // 1-based
	Phase     string `json:"phase,omitempty"`
	// Preflight: the run had stopped before its first tick, and the resume
	// ran the preflight again, as a new run does.
	Preflight bool `json:"preflight,omitempty"`
	Workers   int  `json:"workers,omitempty"` // a parallel run's
}

// WorktreeCreatedEvent: the run made its worktree (--worktree, or a
// parallel run's integration worktree).
type WorktreeCreatedEvent struct {
	Path   string `json:"path"`
	Branch string `json:"branch"`
}

// ProcessStartedEvent: an agent, verify or review process started.
type ProcessStartedEvent struct {
	PID   int    `json:"pid"`
	PGID  int    `json:"pgid"`
	Argv0 string `json:"argv0"`
	// Command is a verify or review process's command as configured; an
	// agent's is left out, since its argv may carry the prompt.
	Command string `json:"command,omitempty"`
}

// ProcessEndedEvent: the process of a ProcessStartedEvent ended.
type ProcessEndedEvent struct {
	ExitCode   int   `json:"exit_code"`
	DurationMS int64 `json:"duration_ms"`
	Bytes      int64 `json:"bytes"` // of output
	// LogOmitted is how many of those bytes the log left out between its
	// head and its tail (agent.log_cap).
	LogOmitted int64 `json:"log_omitted,omitempty"`
	TimedOut   bool  `json:"timed_out"`
	Idle       bool  `json:"idle"`
	Canceled   bool  `json:"canceled"`
	// PlainText: an agent whose output is plain text, not a stream of
	// events (a command agent, aider): the transcript shows the end of
	// its log, as it shows another agent's tool calls.
	PlainText bool `json:"plain_text,omitempty"`
}

// AttemptEvent is one attempt of a milestone as it ended: state.json lists
// only a milestone's last attempts, the timeline all of them.
type AttemptEvent struct {
	Milestone   int       `json:"milestone"`
	Outcome     string    `json:"outcome"`
	Signature   string    `json:"signature"`
	AttemptTick int       `json:"attempt_tick"` // the tick the attempt started in
	Iteration   int       `json:"iteration"`
	Error       string    `json:"error"`
	DurationMS  int64     `json:"duration_ms"`
	ExitCode    int       `json:"exit_code"`
	CostUSD     float64   `json:"cost_usd"`
	Log         string    `json:"log"`
	Progress    bool      `json:"progress"`
	Agent       *AgentRef `json:"agent"`
}

// GuardEvent: a guard found changed files it does not allow.
type GuardEvent struct {
	Rule  string   `json:"rule"`  // scope, protect, git_metadata or lockfiles
	Files []string `json:"files"` // at most stopreasons.MaxDetailFiles
	// FilesOmitted counts the files caught beyond Files.
	FilesOmitted int `json:"files_omitted,omitempty"`
	// Rules are the rule that caught each file, with its pattern; the
	// lockfile guard has one rule.
	Rules []string `json:"rules,omitempty"`
}

// UntestedEvent: the verify commands passed without showing that they ran
// the milestone's changed lines or any test (verify.coverage,
// verify.require_tests); the attempt failed.
type UntestedEvent struct {
	stopreasons.Untested
	// Executable and Run count the changed executable lines and those
	// that ran (kind coverage).
	Executable int `json:"executable,omitempty"`
	Run        int `json:"run,omitempty"`
}

// CheckpointCommitEvent: an approved milestone was committed.
type CheckpointCommitEvent struct {
	SHA       string `json:"sha"`
	Milestone int    `json:"milestone"`
}

// MilestoneApprovedEvent: a milestone was approved.
type MilestoneApprovedEvent struct {
	Milestone int    `json:"milestone"`
	Goal      string `json:"goal"`
}

// MilestoneFailedEvent: a milestone failed and the run goes on without it
// (skip mode). A sequential run says after how many retries; a parallel
// run names the worker and the stop of the milestone's run, and for a
// merge that failed the conflicting files.
type MilestoneFailedEvent struct {
	Worker    int      `json:"worker,omitempty"`
	Milestone int      `json:"milestone"`
	Retries   int      `json:"retries,omitempty"`
	Code      string   `json:"code,omitempty"`
	Files     []string `json:"files,omitempty"`
}

// TickEvent is the record of a tick as it ended: the phase that ran, what
// comes next, and what it came to.
type TickEvent struct {
	Phase     string `json:"phase"`
	Next      string `json:"next"`
	Milestone int    `json:"milestone"` // the milestone the next tick works on
	Iteration int    `json:"iteration"`
	Outcome   string `json:"outcome"`
	// CostUSD is the run's cost so far; nil in the ticks of a runr older
	// than the figure (and its outcome).
	CostUSD *float64 `json:"cost_usd,omitempty"`
	*TickFiles
	*TickVerify
	*TickCall
	// Closest is the stop rule closest to firing, with how close ("noop 67%").
	Closest string `json:"closest,omitempty"`
}

// TickFiles are the files the tick's agent call added, modified and
// deleted; nil when the tick looked at no change.
type TickFiles struct {
	Added    int `json:"added"`
	Modified int `json:"modified"`
	Deleted  int `json:"deleted"`
}

// TickVerify is how the tick's checks went; nil when it ran none.
type TickVerify struct {
	Verify   string `json:"verify"` // passed or failed
	VerifyMS int64  `json:"verify_ms"`
}

// TickCall is what the tick's agent call used; nil when it made none.
type TickCall struct {
	Model            string  `json:"model"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CallCostUSD      float64 `json:"call_cost_usd"`
	CostSource       string  `json:"cost_source"`
}

// AutoResumeEvent: the run stopped with an auto-resumable reason and waits
// to continue (--auto-resume).
type AutoResumeEvent struct {
	Attempt int    `json:"attempt"` // this automatic resume's number, from 1
	Max     int    `json:"max"`     // resume.max_auto_resumes
	Reason  string `json:"reason"`  // the stop's code
	WaitMS  int64  `json:"wait_ms"`
	Until   string `json:"until"` // RFC 3339 with nanoseconds, UTC
	*AutoResumeLimit
}

// AutoResumeLimit is the provider limit an automatic resume waits for, with
// the jitter added to its reset time; nil for a backoff.
type AutoResumeLimit struct {
	ResetAt    string `json:"reset_at"` // RFC 3339
	LimitKind  string `json:"limit_kind"`
	JitterMS   int64  `json:"jitter_ms"`
	JitterSeed uint64 `json:"jitter_seed"`
}

// AutoResumeDeclinedEvent: an auto-resumable stop that is not continued,
// and why.
type AutoResumeDeclinedEvent struct {
	Reason    string `json:"reason"`   // the stop's code
	Declined  string `json:"declined"` // which rule gave up
	Why       string `json:"why"`
	LimitKind string `json:"limit_kind,omitempty"`
	ResetAt   string `json:"reset_at,omitempty"` // RFC 3339
}

// CrashDetectedEvent: a resume found the run's runr had died while it ran.
type CrashDetectedEvent struct {
	Milestone int `json:"milestone"`
	*CrashedProcess
}

// CrashedProcess is the process state.json recorded as running when runr
// died; nil when none was.
type CrashedProcess struct {
	PID   int    `json:"pid"`
	PGID  int    `json:"pgid"`
	Phase string `json:"process_phase"`
	Argv0 string `json:"argv0"`
}

// CrashRecoveredEvent: what the recovery from a crash did.
type CrashRecoveredEvent struct {
	// CallUsageAdded is the call in flight, as far as state.json knew it,
	// added to the run's usage (also an AgentCallEvent of its own).
	CallUsageAdded *AgentCallEvent `json:"call_usage_added,omitempty"`
	ElapsedAddedMS int64           `json:"elapsed_added_ms,omitempty"`
	// TaggedPIDs are the processes stopped by the run's RUNR_RUN_ID, beyond
	// its recorded process group.
	TaggedPIDs     []int `json:"tagged_pids,omitempty"`
	StoppedProcess bool  `json:"stopped_process"`
}

// StopEvent: the run stopped; the run's last event.
type StopEvent struct {
	Code           string `json:"code"`
	Condition      string `json:"condition"`
	Message        string `json:"message"`
	ExitCode       int    `json:"exit_code"`
	TerminalStatus string `json:"terminal_status"`
	Milestones     int    `json:"milestones"`
	Approved       int    `json:"approved"`
}

// AgentCallEvent is one agent call of the cost ledger.
type AgentCallEvent struct {
	Call
	// Interrupted: the call was cut short by a crash of runr, and its
	// figures are what state.json knew of it.
	Interrupted bool `json:"interrupted,omitempty"`
}

// ActivityEvent is one thing the agent was seen doing: a tool call, a
// failed one, a short message.
type ActivityEvent struct {
	Kind string `json:"kind"` // tool, tool_error or message
	Text string `json:"text"`
	Tool string `json:"tool,omitempty"`
}

// ResultGraceEvent: the agent printed its result but did not exit, and was
// ended after agent.result_grace; its result counts.
type ResultGraceEvent struct {
	Reason        string `json:"reason"` // result_grace
	GraceMS       int64  `json:"grace_ms"`
	AfterResultMS int64  `json:"after_result_ms"`
	ExitCode      int    `json:"exit_code"`
	Killed        bool   `json:"killed"`
}

// LeftoversStoppedEvent: before a resume started anything, processes of
// the run still alive were stopped.
type LeftoversStoppedEvent struct {
	PIDs []int `json:"pids"`
}

// BudgetStopEvent: a cost or token budget stopped an agent call mid-call.
type BudgetStopEvent struct {
	Condition string  `json:"condition"` // budget.max_cost_usd or budget.max_tokens
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
}

// BudgetWarningEvent: a budget the agent gives no figures for.
type BudgetWarningEvent struct {
	Message string `json:"message"`
}

// SandboxEvent is how the agent's calls are confined (sandbox.mode).
type SandboxEvent struct {
	Mode           string   `json:"mode"`
	Confined       bool     `json:"confined"`
	ABI            int      `json:"abi"` // the kernel's Landlock ABI
	Kernel         string   `json:"kernel"`
	Namespace      bool     `json:"namespace"`
	NamespaceError string   `json:"namespace_error"`
	TopLevelOnly   bool     `json:"top_level_only"`
	Writable       []string `json:"writable"`
	ReadOnly       []string `json:"read_only"`
}

// FallbackWarningEvent: a fallback agent cannot be used (Index and Agent
// name it), or none could be when the run needed one.
type FallbackWarningEvent struct {
	Index   int       `json:"index,omitempty"` // the run's agent_index it would have
	Agent   *AgentRef `json:"agent,omitempty"`
	Message string    `json:"message"`
}

// AgentSwitchEvent: the run switched to a fallback agent.
type AgentSwitchEvent struct {
	From    AgentRef `json:"from"`
	To      AgentRef `json:"to"`
	Reason  string   `json:"reason"`   // SwitchRateLimited or SwitchNotFound
	ResetAt string   `json:"reset_at"` // RFC 3339; "" when the agent did not say
	Message string   `json:"message"`
	Index   int      `json:"index"` // the run's agent_index after the switch
	// PassedOver are the fallback agents skipped on the way, and why.
	PassedOver []string `json:"passed_over,omitempty"`
}

// WorkerStartedEvent: a parallel run's worker took a milestone.
type WorkerStartedEvent struct {
	Worker    int    `json:"worker"`
	Milestone int    `json:"milestone"`
	Branch    string `json:"branch"`
	Start     string `json:"start"`   // the integration commit it starts from
	Requeue   int    `json:"requeue"` // the times the milestone went back to a worker
}

// WorkerDoneEvent: a worker's run of a milestone ended, with its stop, or
// with the error that kept it from recording one.
type WorkerDoneEvent struct {
	Worker    int    `json:"worker"`
	Milestone int    `json:"milestone"`
	Error     string `json:"error,omitempty"`
	Code      string `json:"code,omitempty"`
	RunID     string `json:"run_id,omitempty"` // the worker's own run
}

// Outcomes of a MergeEvent.
const (
	MergeMerged       = "merged"
	MergeConflict     = "conflict"
	MergeVerifyFailed = "verify_failed"
)

// MergeEvent: an approved milestone's merge into the integration branch:
// its commit, the conflicting files, or the check that failed on the
// merged tree.
type MergeEvent struct {
	Worker    int      `json:"worker"`
	Milestone int      `json:"milestone"`
	Outcome   string   `json:"outcome"`
	Files     []string `json:"files,omitempty"`
	Command   string   `json:"command,omitempty"`
	Commit    string   `json:"commit,omitempty"`
}

// RequeueEvent: a milestone that did not merge went back to a worker.
type RequeueEvent struct {
	Worker    int      `json:"worker"`
	Milestone int      `json:"milestone"`
	Requeue   int      `json:"requeue"` // the times it went back, this one included
	Files     []string `json:"files"`   // the conflict's; nil after a failed check
	Command   string   `json:"command"` // the check that failed; "" after a conflict
}

// WarningEvent: something went wrong that does not stop the run (a
// worktree a completed parallel run could not remove).
type WarningEvent struct {
	Message string `json:"message"`
}

// UnknownEvent is an event of a type this runr does not know, its data as
// written.
type UnknownEvent struct {
	Type string
	Data json.RawMessage
}

func (RunStartedEvent) EventType() string         { return "run_started" }
func (RunResumedEvent) EventType() string         { return "run_resumed" }
func (WorktreeCreatedEvent) EventType() string    { return "worktree_created" }
func (ProcessStartedEvent) EventType() string     { return "process_started" }
func (ProcessEndedEvent) EventType() string       { return "process_ended" }
func (AttemptEvent) EventType() string            { return "attempt" }
func (GuardEvent) EventType() string              { return "guard" }
func (UntestedEvent) EventType() string           { return "untested" }
func (CheckpointCommitEvent) EventType() string   { return "checkpoint_commit" }
func (MilestoneApprovedEvent) EventType() string  { return "milestone_approved" }
func (MilestoneFailedEvent) EventType() string    { return "milestone_failed" }
func (TickEvent) EventType() string               { return "tick" }
func (AutoResumeEvent) EventType() string         { return "auto_resume" }
func (AutoResumeDeclinedEvent) EventType() string { return "auto_resume_declined" }
func (CrashDetectedEvent) EventType() string      { return "crash_detected" }
func (CrashRecoveredEvent) EventType() string     { return "crash_recovered" }
func (StopEvent) EventType() string               { return "stop" }
func (AgentCallEvent) EventType() string          { return "agent_call" }
func (ActivityEvent) EventType() string           { return "activity" }
func (ResultGraceEvent) EventType() string        { return "agent_result_grace" }
func (LeftoversStoppedEvent) EventType() string   { return "leftovers_stopped" }
func (BudgetStopEvent) EventType() string         { return "budget_stop" }
func (BudgetWarningEvent) EventType() string      { return "budget_warning" }
func (SandboxEvent) EventType() string            { return "sandbox" }
func (FallbackWarningEvent) EventType() string    { return "fallback_warning" }
func (AgentSwitchEvent) EventType() string        { return "agent_switch" }
func (WorkerStartedEvent) EventType() string      { return "worker_started" }
func (WorkerDoneEvent) EventType() string         { return "worker_done" }
func (MergeEvent) EventType() string              { return "merge" }
func (RequeueEvent) EventType() string            { return "requeue" }
func (WarningEvent) EventType() string            { return "warning" }
func (u UnknownEvent) EventType() string          { return u.Type }

// eventDecoders decode the data of each event type runr writes, by its
// name: the list of timeline events.
var eventDecoders = decoders(
	decoder[RunStartedEvent](),
	decoder[RunResumedEvent](),
	decoder[WorktreeCreatedEvent](),
	decoder[ProcessStartedEvent](),
	decoder[ProcessEndedEvent](),
	decoder[AttemptEvent](),
	decoder[GuardEvent](),
	decoder[UntestedEvent](),
	decoder[CheckpointCommitEvent](),
	decoder[MilestoneApprovedEvent](),
	decoder[MilestoneFailedEvent](),
	decoder[TickEvent](),
	decoder[AutoResumeEvent](),
	decoder[AutoResumeDeclinedEvent](),
	decoder[CrashDetectedEvent](),
	decoder[CrashRecoveredEvent](),
	decoder[StopEvent](),
	decoder[AgentCallEvent](),
	decoder[ActivityEvent](),
	decoder[ResultGraceEvent](),
	decoder[LeftoversStoppedEvent](),
	decoder[BudgetStopEvent](),
	decoder[BudgetWarningEvent](),
	decoder[SandboxEvent](),
	decoder[FallbackWarningEvent](),
	decoder[AgentSwitchEvent](),
	decoder[WorkerStartedEvent](),
	decoder[WorkerDoneEvent](),
	decoder[MergeEvent](),
	decoder[RequeueEvent](),
	decoder[WarningEvent](),
)

// eventDecoder decodes the data of one event type, typ.
type eventDecoder struct {
	typ    reflect.Type
	decode func(data []byte) (EventData, error)
}

// decoder decodes the data of events of type T. A field of the wrong type
// (a damaged or hand-edited file) is left at its zero value, as the other
// fields are read: a reader shows what it can of such an event.
func decoder[T EventData]() eventDecoder {
	return eventDecoder{typ: reflect.TypeFor[T](), decode: func(data []byte) (EventData, error) {
		var v T
		err := json.Unmarshal(data, &v)
		if _, wrongType := errors.AsType[*json.UnmarshalTypeError](err); err != nil && !wrongType {
			return nil, err
		}
		return v, nil
	}}
}

func decoders(list ...eventDecoder) map[string]eventDecoder {
	m := make(map[string]eventDecoder, len(list))
	for _, d := range list {
		name := reflect.Zero(d.typ).Interface().(EventData).EventType()
		if _, dup := m[name]; dup {
			panic("state: two timeline events named " + name)
		}
		m[name] = d
	}
	return m
}

// eventLine is an event as timeline.jsonl holds it, one per line.
type eventLine struct {
	Seq   int64     `json:"seq"`
	TS    time.Time `json:"ts"`
	Type  string    `json:"type"`
	Tick  int       `json:"tick"`
	Phase string    `json:"phase,omitempty"`
	Data  any       `json:"data,omitempty"`
}

// EncodeEvent is ev's line of timeline.jsonl, without its newline. Its
// data must be one of the event types of this file (or an UnknownEvent,
// written back as it was read): an event the timeline could not give back
// as its own type is an error.
func EncodeEvent(ev Event) ([]byte, error) {
	line := eventLine{Seq: ev.Seq, TS: ev.TS, Tick: ev.Tick, Phase: ev.Phase}
	switch d := ev.Data.(type) {
	case nil:
		return nil, errors.New("timeline event without data")
	case UnknownEvent:
		line.Type = d.Type
		if len(d.Data) > 0 {
			line.Data = d.Data
		}
	default:
		line.Type = d.EventType()
		if dec, ok := eventDecoders[line.Type]; !ok || reflect.TypeOf(d) != dec.typ {
			return nil, fmt.Errorf("%T is not a timeline event", d)
		}
		line.Data = d
	}
	return json.Marshal(line)
}

// DecodeEvent reads one line of timeline.jsonl. An event of a type this
// runr does not know is an UnknownEvent, and fields it does not know are
// passed over, so the timeline of a newer or an older runr reads without
// error. A line that is not an event is an error: not JSON, a field of the
// wrong type outside the data, no seq, data that is not an object.
func DecodeEvent(line []byte) (Event, error) {
	var h EventHead
	if err := json.Unmarshal(line, &h); err != nil {
		return Event{}, err
	}
	if h.Seq <= 0 {
		return Event{}, errors.New("event without a seq")
	}
	return h.Decode()
}

// Decode decodes the data of the event h is the head of, as DecodeEvent
// does: a reader that decoded only the heads of a timeline decodes in full
// the events it needs.
func (h EventHead) Decode() (Event, error) {
	data, err := decodeData(h.Type, h.Data)
	if err != nil {
		return Event{}, err
	}
	return Event{Seq: h.Seq, TS: h.TS, Tick: h.Tick, Phase: h.Phase, Data: data}, nil
}

// decodeData decodes the data of an event of type typ, as DecodeEvent
// says. Data left out or null is the type's zero value.
func decodeData(typ string, data json.RawMessage) (EventData, error) {
	data = bytes.TrimSpace(data)
	isNull := len(data) == 0 || string(data) == "null"
	if !isNull && data[0] != '{' {
		return nil, fmt.Errorf("the data of a %q event is not an object", typ)
	}
	dec, known := eventDecoders[typ]
	switch {
	case !known && isNull:
		return UnknownEvent{Type: typ}, nil
	case !known:
		return UnknownEvent{Type: typ, Data: bytes.Clone(data)}, nil
	case isNull:
		return dec.decode([]byte("{}"))
	}
	return dec.decode(data)
}
