package state

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// eventCase is one event as runr writes it: its typed value, the data of
// its timeline line, and the keys its zero value writes (the fields that
// are always there).
type eventCase struct {
	ev       EventData
	data     string
	zeroKeys []string
}

var agentRef = &AgentRef{Kind: "codex", Model: "gpt-5-codex"}

var third = 0.3333

// fullEvents hold every event type with every field set, their data the
// JSON earlier runr versions wrote. A field missing from a type (or
// renamed) fails the round trip; a field added to a type without a value
// here fails allSet.
var fullEvents = []eventCase{
	{RunStartedEvent{Repo: "/src/shop", Milestones: 3, TaskFile: "TASK.md", Workers: 2, Milestone: 2},
		`{"repo":"/src/shop","milestones":3,"task_file":"TASK.md","workers":2,"milestone":2}`,
		[]string{"repo", "milestones", "task_file"}},
	{RunResumedEvent{Milestone: 2, Phase: "verify", Preflight: true, Workers: 2},
		`{"milestone":2,"phase":"verify","preflight":true,"workers":2}`,
		[]string{"milestone"}},
	{WorktreeCreatedEvent{Path: "/src/shop/.git/runr/worktrees/r1", Branch: "runr/r1"},
		`{"path":"/src/shop/.git/runr/worktrees/r1","branch":"runr/r1"}`,
		[]string{"path", "branch"}},
	{ProcessStartedEvent{PID: 41, PGID: 41, Argv0: "sh", Command: "go test ./..."},
		`{"pid":41,"pgid":41,"argv0":"sh","command":"go test ./..."}`,
		[]string{"pid", "pgid", "argv0"}},
	{ProcessEndedEvent{ExitCode: 1, DurationMS: 2500, Bytes: 812, LogOmitted: 300, TimedOut: true, Idle: true, Canceled: true, PlainText: true},
		`{"exit_code":1,"duration_ms":2500,"bytes":812,"log_omitted":300,"timed_out":true,"idle":true,"canceled":true,"plain_text":true}`,
		[]string{"exit_code", "duration_ms", "bytes", "timed_out", "idle", "canceled"}},
	{AttemptEvent{Milestone: 1, Outcome: "failed", Signature: "go test: TestX", AttemptTick: 4, Iteration: 2, Error: "FAIL TestX",
		DurationMS: 900, ExitCode: 1, CostUSD: 0.25, Log: "logs/tick-0004-implement.log", Progress: true, Agent: agentRef},
		`{"milestone":1,"outcome":"failed","signature":"go test: TestX","attempt_tick":4,"iteration":2,"error":"FAIL TestX",
		 "duration_ms":900,"exit_code":1,"cost_usd":0.25,"log":"logs/tick-0004-implement.log","progress":true,"agent":{"kind":"codex","model":"gpt-5-codex"}}`,
		[]string{"milestone", "outcome", "signature", "attempt_tick", "iteration", "error", "duration_ms", "exit_code", "cost_usd", "log", "progress", "agent"}},
	{GuardEvent{Rule: "scope", Files: []string{"vendor/x.go"}, FilesOmitted: 3, Rules: []string{"scope.deny vendor/**"}},
		`{"rule":"scope","files":["vendor/x.go"],"files_omitted":3,"rules":["scope.deny vendor/**"]}`,
		[]string{"rule", "files"}},
	{UntestedEvent{Untested: stopreasons.Untested{Kind: "coverage", Covered: &third, MinChanged: 0.8,
		Uncovered: []stopreasons.Uncovered{{File: "calc.go", Lines: "8-12"}}, UncoveredMore: 2}, Executable: 9, Run: 3},
		`{"kind":"coverage","covered":0.3333,"min_changed":0.8,"uncovered":[{"file":"calc.go","lines":"8-12"}],"uncovered_more":2,"executable":9,"run":3}`,
		[]string{"kind"}},
	{CheckpointCommitEvent{SHA: "0123456789abcdef", Milestone: 2},
		`{"sha":"0123456789abcdef","milestone":2}`,
		[]string{"sha", "milestone"}},
	{MilestoneApprovedEvent{Milestone: 2, Goal: "add the endpoint"},
		`{"milestone":2,"goal":"add the endpoint"}`,
		[]string{"milestone", "goal"}},
	{MilestoneFailedEvent{Worker: 2, Milestone: 3, Retries: 4, Code: "merge_conflict", Files: []string{"a.go"}},
		`{"worker":2,"milestone":3,"retries":4,"code":"merge_conflict","files":["a.go"]}`,
		[]string{"milestone"}},
	{TickEvent{Phase: "verify", Next: "implement", Milestone: 1, Iteration: 3, Outcome: "verify failed", CostUSD: ptr(1.5),
		TickFiles:  &TickFiles{Added: 1, Modified: 2, Deleted: 3},
		TickVerify: &TickVerify{Verify: "failed", VerifyMS: 1200},
		TickCall: &TickCall{Model: "claude-sonnet-4-5", InputTokens: 10, OutputTokens: 20, CacheReadTokens: 30, CacheWriteTokens: 40,
			CallCostUSD: 0.5, CostSource: CostReported},
		Closest: "noop 67%"},
		`{"phase":"verify","next":"implement","milestone":1,"iteration":3,"outcome":"verify failed","cost_usd":1.5,
		 "added":1,"modified":2,"deleted":3,"verify":"failed","verify_ms":1200,
		 "model":"claude-sonnet-4-5","input_tokens":10,"output_tokens":20,"cache_read_tokens":30,"cache_write_tokens":40,
		 "call_cost_usd":0.5,"cost_source":"reported","closest":"noop 67%"}`,
		[]string{"phase", "next", "milestone", "iteration", "outcome"}},
	{AutoResumeEvent{Attempt: 1, Max: 3, Reason: "worker_rate_limited", WaitMS: 61000, Until: "2026-11-21T23:01:18.5Z",
		AutoResumeLimit: &AutoResumeLimit{ResetAt: "2026-11-21T23:01:00Z", LimitKind: "rate", JitterMS: 18500, JitterSeed: 1<<63 + 7}},
		`{"attempt":1,"max":3,"reason":"worker_rate_limited","wait_ms":61000,"until":"2026-11-21T23:01:18.5Z",
		 "reset_at":"2026-11-21T23:01:00Z","limit_kind":"rate","jitter_ms":18500,"jitter_seed":9223372036854775815}`,
		[]string{"attempt", "max", "reason", "wait_ms", "until"}},
	{AutoResumeDeclinedEvent{Reason: "worker_rate_limited", Declined: "beyond_max_wait", Why: "resets in 7h", LimitKind: "usage_window", ResetAt: "2026-11-22T06:00:00Z"},
		`{"reason":"worker_rate_limited","declined":"beyond_max_wait","why":"resets in 7h","limit_kind":"usage_window","reset_at":"2026-11-22T06:00:00Z"}`,
		[]string{"reason", "declined", "why"}},
	{CrashDetectedEvent{Milestone: 2, CrashedProcess: &CrashedProcess{PID: 41, PGID: 41, Phase: "implement", Argv0: "claude"}},
		`{"milestone":2,"pid":41,"pgid":41,"process_phase":"implement","argv0":"claude"}`,
		[]string{"milestone"}},
	{CrashRecoveredEvent{CallUsageAdded: &AgentCallEvent{Call: fullCall, Interrupted: true}, ElapsedAddedMS: 4000, TaggedPIDs: []int{42, 43}, StoppedProcess: true},
		`{"call_usage_added":` + fullCallData + `,"elapsed_added_ms":4000,"tagged_pids":[42,43],"stopped_process":true}`,
		[]string{"stopped_process"}},
	{StopEvent{Code: "complete", Condition: "milestones", Message: "all milestones approved", ExitCode: 3, TerminalStatus: "done",
		Milestones: 3, Approved: 3},
		`{"code":"complete","condition":"milestones","message":"all milestones approved","exit_code":3,"terminal_status":"done",
		 "milestones":3,"approved":3}`,
		[]string{"code", "condition", "message", "exit_code", "terminal_status", "milestones", "approved"}},
	{AgentCallEvent{Call: fullCall, Interrupted: true}, fullCallData,
		[]string{"agent", "model", "input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens",
			"cost_reported_usd", "cost_estimated_usd", "cost_source", "duration_ms"}},
	{ActivityEvent{Kind: "tool", Text: "a_test.go", Tool: "Edit"},
		`{"kind":"tool","text":"a_test.go","tool":"Edit"}`,
		[]string{"kind", "text"}},
	{ResultGraceEvent{Reason: "result_grace", GraceMS: 5000, AfterResultMS: 5003, ExitCode: -1, Killed: true},
		`{"reason":"result_grace","grace_ms":5000,"after_result_ms":5003,"exit_code":-1,"killed":true}`,
		[]string{"reason", "grace_ms", "after_result_ms", "exit_code", "killed"}},
	{LeftoversStoppedEvent{PIDs: []int{51, 52}},
		`{"pids":[51,52]}`,
		[]string{"pids"}},
	{BudgetStopEvent{Condition: "budget.max_tokens", Value: 10200, Threshold: 10000},
		`{"condition":"budget.max_tokens","value":10200,"threshold":10000}`,
		[]string{"condition", "value", "threshold"}},
	{BudgetWarningEvent{Message: "aider reports no cost"},
		`{"message":"aider reports no cost"}`,
		[]string{"message"}},
	{SandboxEvent{Mode: "auto", Confined: true, ABI: 4, Kernel: "6.8.0", Namespace: true, NamespaceError: "no user namespaces",
		TopLevelOnly: true, Writable: []string{"/src/shop"}, ReadOnly: []string{"/src/shop/.git"}},
		`{"mode":"auto","confined":true,"abi":4,"kernel":"6.8.0","namespace":true,"namespace_error":"no user namespaces",
		 "top_level_only":true,"writable":["/src/shop"],"read_only":["/src/shop/.git"]}`,
		[]string{"mode", "confined", "abi", "kernel", "namespace", "namespace_error", "top_level_only", "writable", "read_only"}},
	{FallbackWarningEvent{Index: 1, Agent: agentRef, Message: "agent.fallback[0] (codex) cannot be used"},
		`{"index":1,"agent":{"kind":"codex","model":"gpt-5-codex"},"message":"agent.fallback[0] (codex) cannot be used"}`,
		[]string{"message"}},
	{AgentSwitchEvent{From: AgentRef{Kind: "claude", Model: "claude-sonnet-4-5"}, To: *agentRef, Reason: SwitchRateLimited, ResetAt: "2026-11-22T01:21:00Z",
		Message: "rate limited until 01:21", Index: 1, PassedOver: []string{"agent.fallback[0] gemini: not found"}},
		`{"from":{"kind":"claude","model":"claude-sonnet-4-5"},"to":{"kind":"codex","model":"gpt-5-codex"},"reason":"` + SwitchRateLimited + `","reset_at":"2026-11-22T01:21:00Z",
		 "message":"rate limited until 01:21","index":1,"passed_over":["agent.fallback[0] gemini: not found"]}`,
		[]string{"from", "to", "reason", "reset_at", "message", "index"}},
	{WorkerStartedEvent{Worker: 2, Milestone: 3, Branch: "runr/r1/m3", Start: "0123456789abcdef", Requeue: 1},
		`{"worker":2,"milestone":3,"branch":"runr/r1/m3","start":"0123456789abcdef","requeue":1}`,
		[]string{"worker", "milestone", "branch", "start", "requeue"}},
	{WorkerDoneEvent{Worker: 2, Milestone: 3, Error: "lock held", Code: "complete", RunID: "20261121T230017Z-3f9a1c"},
		`{"worker":2,"milestone":3,"error":"lock held","code":"complete","run_id":"20261121T230017Z-3f9a1c"}`,
		[]string{"worker", "milestone"}},
	{MergeEvent{Worker: 2, Milestone: 3, Outcome: MergeConflict, Files: []string{"a.go"}, Command: "go test ./...", Commit: "0123456789abcdef"},
		`{"worker":2,"milestone":3,"outcome":"conflict","files":["a.go"],"command":"go test ./...","commit":"0123456789abcdef"}`,
		[]string{"worker", "milestone", "outcome"}},
	{RequeueEvent{Worker: 2, Milestone: 3, Requeue: 1, Files: []string{"a.go"}, Command: "go test ./..."},
		`{"worker":2,"milestone":3,"requeue":1,"files":["a.go"],"command":"go test ./..."}`,
		[]string{"worker", "milestone", "requeue", "files", "command"}},
	{WarningEvent{Message: "remove worktree w1: busy"},
		`{"message":"remove worktree w1: busy"}`,
		[]string{"message"}},
}

var fullCall = Call{Agent: "claude", Model: "claude-sonnet-4-5", InputTokens: 10, CacheReadTokens: 5000, CacheWriteTokens: 700,
	OutputTokens: 90, CostReportedUSD: 0.42, CostEstimatedUSD: 0.4, CostSource: CostReported, DurationMS: 2500}

const fullCallData = `{"agent":"claude","model":"claude-sonnet-4-5","input_tokens":10,"cache_read_tokens":5000,"cache_write_tokens":700,
	"output_tokens":90,"cost_reported_usd":0.42,"cost_estimated_usd":0.4,"cost_source":"reported","duration_ms":2500,"interrupted":true}`

// Each event type reads back from its line as the value written, and
// writes the line earlier runr versions wrote.
func TestEventRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range fullEvents {
		typ := c.ev.EventType()
		t.Run(typ, func(t *testing.T) {
			seen[typ] = true
			allSet(t, reflect.ValueOf(c.ev), typ)

			got, err := decodeData(typ, json.RawMessage(c.data))
			require.NoError(t, err)
			assert.Equal(t, c.ev, got, "decoded from the line earlier versions wrote")

			line, err := EncodeEvent(Event{Seq: 7, TS: time.Date(2026, 11, 21, 23, 0, 17, 0, time.UTC), Tick: 3, Phase: PhaseVerify, Data: c.ev})
			require.NoError(t, err)
			var out struct {
				Type string          `json:"type"`
				Data json.RawMessage `json:"data"`
			}
			require.NoError(t, json.Unmarshal(line, &out))
			assert.Equal(t, typ, out.Type)
			assert.JSONEq(t, c.data, string(out.Data), "written as earlier versions wrote it")
		})
	}
	for typ := range eventDecoders {
		assert.True(t, seen[typ], "no round trip for the %s event", typ)
	}
}

// The fields an event's zero value still writes are those every writer
// always wrote; the others are left out when unset, as before.
func TestEventZeroValueKeys(t *testing.T) {
	for _, c := range fullEvents {
		typ := c.ev.EventType()
		zero := reflect.Zero(reflect.TypeOf(c.ev)).Interface().(EventData)
		line, err := EncodeEvent(Event{Seq: 1, Data: zero})
		require.NoError(t, err)
		var out struct {
			Data map[string]json.RawMessage `json:"data"`
		}
		require.NoError(t, json.Unmarshal(line, &out))
		var keys []string
		for k := range out.Data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		want := slices.Clone(c.zeroKeys)
		slices.Sort(want)
		assert.Equal(t, want, keys, typ)
	}
}

// allSet fails for a field left at its zero value: the table above then
// does not test it.
func allSet(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			t.Errorf("%s is not set", path)
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		if v.IsZero() {
			t.Errorf("%s is not set", path)
		}
		return
	}
	for i := range v.NumField() {
		allSet(t, v.Field(i), path+"."+v.Type().Field(i).Name)
	}
}

// A type or a field this runr does not know reads without error: an
// unknown event keeps its data as written, an unknown field is passed over.
func TestEventDecodeUnknown(t *testing.T) {
	got, err := decodeData("phase_ended", json.RawMessage(`{"exit_code":1,"command":"go test"}`))
	require.NoError(t, err)
	assert.Equal(t, UnknownEvent{Type: "phase_ended", Data: json.RawMessage(`{"exit_code":1,"command":"go test"}`)}, got)
	line, err := EncodeEvent(Event{Seq: 1, Data: got})
	require.NoError(t, err)
	assert.Contains(t, string(line), `"type":"phase_ended","tick":0,"data":{"exit_code":1,"command":"go test"}`, "written back as read")

	got, err = decodeData("no_data", nil)
	require.NoError(t, err)
	assert.Equal(t, UnknownEvent{Type: "no_data"}, got)
	line, err = EncodeEvent(Event{Seq: 1, Data: got})
	require.NoError(t, err)
	assert.NotContains(t, string(line), `"data"`)

	got, err = decodeData("stop", json.RawMessage(`{"code":"timeout","exit_code":124,"from_a_newer_runr":{"x":[1]}}`))
	require.NoError(t, err)
	assert.Equal(t, StopEvent{Code: "timeout", ExitCode: 124}, got)
}

// A tick an older runr recorded, before a tick said what it came to and
// what the run had spent, reads with neither.
func TestEventDecodeOlderTick(t *testing.T) {
	got, err := DecodeEvent([]byte(`{"seq":4,"ts":"2026-11-21T23:00:17Z","type":"tick","tick":2,"phase":"verify",` +
		`"data":{"phase":"implement","next":"verify","milestone":1,"iteration":2}}`))
	require.NoError(t, err)
	assert.Equal(t, Event{Seq: 4, TS: time.Date(2026, 11, 21, 23, 0, 17, 0, time.UTC), Tick: 2, Phase: PhaseVerify,
		Data: TickEvent{Phase: PhaseImplement, Next: PhaseVerify, Milestone: 1, Iteration: 2}}, got)
	line, err := EncodeEvent(got)
	require.NoError(t, err)
	assert.JSONEq(t, `{"seq":4,"ts":"2026-11-21T23:00:17Z","type":"tick","tick":2,"phase":"verify",`+
		`"data":{"phase":"implement","next":"verify","milestone":1,"iteration":2,"outcome":""}}`, string(line))
}

// A field of the wrong type (a damaged file) is left at its zero value and
// the rest of the event is read; data left out or null is the zero value;
// data that is not an object is not an event.
func TestEventDecodeDamaged(t *testing.T) {
	got, err := decodeData("tick", json.RawMessage(`{"milestone":"two","outcome":"approved","added":"x","deleted":2}`))
	require.NoError(t, err)
	assert.Equal(t, TickEvent{Outcome: "approved", TickFiles: &TickFiles{Deleted: 2}}, got)

	for _, data := range []string{"", "null", " null "} {
		got, err = decodeData("guard", json.RawMessage(data))
		require.NoError(t, err, data)
		assert.Equal(t, GuardEvent{}, got, data)
	}
	for _, data := range []string{"[1]", `"text"`, "3"} {
		_, err = decodeData("guard", json.RawMessage(data))
		assert.Error(t, err, data)
		_, err = decodeData("unknown_type", json.RawMessage(data))
		assert.Error(t, err, data)
	}
}

// The timeline takes only its own event types: a type it could not give
// back as itself is refused.
func TestEventEncodeRefusesForeignTypes(t *testing.T) {
	_, err := EncodeEvent(Event{Seq: 1, Data: foreignEvent{}})
	assert.ErrorContains(t, err, "is not a timeline event")
	_, err = EncodeEvent(Event{Seq: 1, Data: &TickEvent{}})
	assert.ErrorContains(t, err, "is not a timeline event", "read back, it would be a TickEvent")
	_, err = EncodeEvent(Event{Seq: 1, Data: nil})
	assert.Error(t, err)
}

type foreignEvent struct{}

func (foreignEvent) EventType() string { return "tick_started" }
