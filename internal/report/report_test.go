package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

const runID = "20261121T230017Z-3f9a1c"

var t0 = time.Date(2026, 11, 21, 23, 0, 17, 0, time.UTC)

// run is a run on disk: its state and the files of its run dir.
type run struct {
	st       *state.State
	timeline []state.Event
	// rawTimeline, when set, is written as timeline.jsonl instead of timeline.
	rawTimeline *string
	noTimeline  bool
	logs        map[string]string // relative path -> content
}

func (r run) dir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs"), 0o755))
	for rel, content := range r.logs {
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644))
	}
	switch {
	case r.noTimeline:
	case r.rawTimeline != nil:
		require.NoError(t, os.WriteFile(filepath.Join(dir, timelineFile), []byte(*r.rawTimeline), 0o644))
	default:
		var b bytes.Buffer
		for _, ev := range r.timeline {
			line, err := json.Marshal(ev)
			require.NoError(t, err)
			b.Write(append(line, '\n'))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, timelineFile), b.Bytes(), 0o644))
	}
	return dir
}

// events makes a plausible timeline: for each tick an event per phase step.
func events(ticks int, last string) []state.Event {
	phases := []string{state.PhaseImplement, state.PhaseVerify}
	var out []state.Event
	seq := int64(0)
	add := func(tick int, phase string, data state.EventData) {
		seq++
		out = append(out, state.Event{Seq: seq, TS: t0.Add(time.Duration(seq) * 30 * time.Second), Tick: tick, Phase: phase, Data: data})
	}
	add(0, "", state.RunStartedEvent{Milestones: 3})
	for tick := 1; tick <= ticks; tick++ {
		ph := phases[(tick-1)%len(phases)]
		add(tick, ph, state.UnknownEvent{Type: "phase_started"})
		add(tick, ph, state.UnknownEvent{Type: "phase_ended", Data: json.RawMessage(`{"exit_code":0}`)})
	}
	if last != "" {
		add(ticks, state.PhaseStopped, state.UnknownEvent{Type: last})
	}
	return out
}

func lines(prefix string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%s line %d\n", prefix, i)
	}
	return b.String()
}

func baseState() *state.State {
	return &state.State{
		SchemaVersion: state.SchemaVersion,
		RunID:         runID,
		RunStatus:     stopreasons.RunStopped,
		Phase:         state.PhaseStopped,
		Repo:          "/home/dev/shop",
		Task:          state.Task{File: "TASK.md"},
		CreatedAt:     t0,
		UpdatedAt:     t0.Add(30 * time.Minute),
		Budget:        state.Budget{TimeMS: 30 * 60 * 1000, MaxTicks: 200},
		Counters:      state.Counters{Edges: map[string]int{}},
	}
}

func stopped(code stopreasons.Code, approved int, msg string) *state.StopReason {
	sr := state.NewStopReason(code, approved, msg)
	return sr
}

func scenarioTimeout() run {
	st := baseState()
	st.ElapsedMS = 30*60*1000 + 120
	st.Tick, st.Iteration = 11, 6
	st.MilestoneIndex = 1
	st.Milestones = []state.Milestone{
		{Goal: "Add the cart model", Status: state.MilestoneApproved, Attempts: []state.Attempt{
			{Tick: 1, Iteration: 1, Outcome: state.OutcomeFailed, ErrorSignature: "go-test:7f3a", ExitCode: 1, CostUSD: 0.21, Log: "logs/tick-0002-verify.log"},
			{Tick: 3, Iteration: 2, Outcome: state.OutcomeApproved, CostUSD: 0.18},
		}, Commit: "4be1c0d"},
		{Goal: "Checkout endpoint with | pipes", Status: state.MilestoneInProgress, Retries: 2, Edges: map[string]int{"verify->implement": 2}, Attempts: []state.Attempt{
			{Tick: 6, Iteration: 3, Outcome: state.OutcomeFailed, ErrorSignature: "go-test:91bc", ExitCode: 1, CostUSD: 0.33},
			{Tick: 8, Iteration: 4, Outcome: state.OutcomeFailed, ErrorSignature: "go-test:91bc", ExitCode: 1, CostUSD: 0.29},
			{Tick: 10, Iteration: 5, Outcome: state.OutcomeStopped, CostUSD: 0.12},
		}},
		{Goal: "Order history page", Status: state.MilestonePending},
	}
	st.Counters = state.Counters{SameError: 2, NoProgress: 1, Attempts: 5, Edges: map[string]int{"verify->implement": 3}}
	st.Conditions = []state.ConditionProg{
		{Name: "same_error", Progress: 2.0 / 3, Message: "Same error 2 times in a row (limit 3)"},
		{Name: "max_ticks", Progress: 11.0 / 200, Message: "11 of 200 ticks"},
		{Name: "budget.time", Progress: 1, Message: "Elapsed 30m0s reached the 30m budget"},
		{Name: "circuit_breaker", Progress: 0.1, Message: "5 of 50 attempts"},
	}
	st.LastErrorSignature = "go-test:91bc"
	st.LastFailure = &state.Failure{Tick: 9, Phase: state.PhaseVerify, Command: "go test ./...", ExitCode: 1,
		Tail: "stale tail from state", Signature: "go-test:91bc", Log: "logs/tick-0009-verify.log"}
	st.Usage = state.Usage{CostUSD: 1.13, InputTokens: 182340, OutputTokens: 20411}
	st.Statistics = state.Statistics{TotalMilestones: 3, Attempted: 2, Approved: 1, Failed: 0, RetryRate: 1, RejectRate: 0}
	sr := stopped(stopreasons.Timeout, 1, "Elapsed 30m0s reached the 30m budget")
	sr.Condition = "budget.time"
	sr.Value = "30m0s"
	sr.Threshold = "30m0s"
	sr.Details = &stopreasons.StopDetails{Milestone: 2, MilestoneGoal: "Checkout endpoint with | pipes",
		Command: "go test ./...", Signature: "go-test:91bc"}
	st.StopReason = sr
	st.Resumable = true
	return run{st: st, timeline: events(11, "run_stopped"), logs: map[string]string{
		"logs/tick-0009-verify.log": "=== RUN   TestCheckout\n    checkout_test.go:41: got status 500, want 201\n--- FAIL: TestCheckout (0.01s)\nFAIL\tshop/api\t0.214s\n",
	}}
}

func scenarioSameError() run {
	st := baseState()
	st.ElapsedMS = 7 * 60 * 1000
	st.Tick, st.Iteration = 6, 3
	sig := "go-build:undefined-CartTotal"
	st.Milestones = []state.Milestone{
		{Goal: "Compute cart totals", Status: state.MilestoneInProgress, Retries: 3, Edges: map[string]int{"verify->implement": 3}, Attempts: []state.Attempt{
			{Tick: 2, Iteration: 1, Outcome: state.OutcomeFailed, ErrorSignature: sig, ExitCode: 2, CostUSD: 0.4},
			{Tick: 4, Iteration: 2, Outcome: state.OutcomeFailed, ErrorSignature: sig, ExitCode: 2, CostUSD: 0.38},
			{Tick: 6, Iteration: 3, Outcome: state.OutcomeFailed, ErrorSignature: sig, ExitCode: 2, CostUSD: 0.41},
		}},
		{Goal: "Apply discount codes", Status: state.MilestonePending},
	}
	st.Counters = state.Counters{SameError: 3, ConsecutiveFails: 0, NoProgress: 2, Attempts: 3, TestFailStreak: 3, Edges: map[string]int{"verify->implement": 3}}
	st.Conditions = []state.ConditionProg{
		{Name: "same_error", Progress: 1, Message: "Same error 3 times in a row (limit 3)"},
		{Name: "max_milestone_retries", Progress: 1, Message: "3 of 3 retries"},
		{Name: "no_progress", Progress: 0.4, Message: "2 of 5 iterations without progress"},
	}
	st.LastErrorSignature = sig
	st.LastFailure = &state.Failure{Tick: 6, Phase: state.PhaseVerify, Command: "go build ./...", ExitCode: 2,
		Signature: sig, Log: "logs/tick-0006-verify.log", Tail: "./cart.go:12:9: undefined: CartTotal"}
	st.Usage = state.Usage{CostUSD: 1.19, InputTokens: 90210, OutputTokens: 12007}
	st.Statistics = state.Statistics{TotalMilestones: 2, Attempted: 1}
	sr := stopped(stopreasons.SameErrorRepeated, 0, "Same error 3 times in a row (limit 3)")
	sr.Condition = "same_error"
	sr.Value = float64(3)
	sr.Threshold = float64(3)
	st.StopReason = sr
	st.Resumable = true
	// 40 lines of build output: the tail keeps the last 20.
	return run{st: st, timeline: events(6, "run_stopped"), logs: map[string]string{
		"logs/tick-0006-verify.log": lines("# shop/cart", 40) + "./cart.go:12:9: undefined: CartTotal\n",
	}}
}

func scenarioGuard() run {
	st := baseState()
	st.ElapsedMS = 3 * 60 * 1000
	st.Tick, st.Iteration = 1, 1
	st.Milestones = []state.Milestone{{Goal: "Rename the payment client", Status: state.MilestoneInProgress,
		Attempts: []state.Attempt{{Tick: 1, Iteration: 1, Outcome: state.OutcomeStopped, CostUSD: 0.22}}}}
	st.Counters.Attempts = 1
	st.Usage = state.Usage{CostUSD: 0.22, InputTokens: 20110, OutputTokens: 3120}
	st.Statistics = state.Statistics{TotalMilestones: 1}
	sr := stopped(stopreasons.GuardViolation, 0, "2 changed files outside the allowed scope")
	sr.Condition = "scope.deny"
	sr.Details = &stopreasons.StopDetails{Files: []string{"deploy/prod.yaml", "internal/secret/key file.go"}}
	st.StopReason = sr
	st.Resumable = true
	return run{st: st, timeline: events(1, "run_stopped")}
}

func scenarioRateLimited() run {
	st := baseState()
	st.ElapsedMS = 12 * 60 * 1000
	st.Tick, st.Iteration = 5, 3
	st.MilestoneIndex = 1
	st.Milestones = []state.Milestone{
		{Goal: "Parse the config", Status: state.MilestoneApproved, Attempts: []state.Attempt{{Tick: 1, Iteration: 1, Outcome: state.OutcomeApproved, CostUSD: 0.5}}},
		{Goal: "Validate the config", Status: state.MilestoneInProgress, Attempts: []state.Attempt{
			{Tick: 3, Iteration: 2, Outcome: state.OutcomeFailed, ErrorSignature: "go-test:aa01", ExitCode: 1, CostUSD: 0.61},
			{Tick: 5, Iteration: 3, Outcome: state.OutcomeStopped},
		}},
	}
	st.Counters.Attempts = 3
	st.LastFailure = &state.Failure{Tick: 5, Phase: state.PhaseImplement, Command: "claude -p", ExitCode: 1,
		Log: "logs/tick-0005-implement.log", Tail: "usage limit reached"}
	st.Usage = state.Usage{CostUSD: 1.11, InputTokens: 140000, OutputTokens: 18000, AgentSessionID: "5d1e"}
	st.Statistics = state.Statistics{TotalMilestones: 2, Attempted: 2, Approved: 1}
	st.AutoResume = state.AutoResume{Count: 1}
	sr := stopped(stopreasons.WorkerRateLimited, 1, "Claude usage limit reached")
	sr.Details = &stopreasons.StopDetails{ResetAt: "2026-11-22T03:00:00Z", Milestone: 2}
	st.StopReason = sr
	st.Resumable = true
	return run{st: st, timeline: events(5, "run_stopped"), logs: map[string]string{
		"logs/tick-0005-implement.log": `{"type":"result","is_error":true,"result":"Claude AI usage limit reached|1763780400"}` + "\n",
	}}
}

func scenarioUserStopped() run {
	st := baseState()
	st.ElapsedMS = 4*60*1000 + 20*1000
	st.Tick, st.Iteration = 4, 2
	st.MilestoneIndex = 1
	st.Milestones = []state.Milestone{
		{Goal: "Add logging", Status: state.MilestoneApproved, Attempts: []state.Attempt{{Tick: 1, Iteration: 1, Outcome: state.OutcomeApproved, CostUSD: 0.3}}},
		{Goal: "Add metrics", Status: state.MilestoneInProgress, Attempts: []state.Attempt{{Tick: 4, Iteration: 2, Outcome: state.OutcomeStopped, CostUSD: 0.1}}},
	}
	st.Counters.Attempts = 2
	st.Usage = state.Usage{CostUSD: 0.4, CostEstimated: true, InputTokens: 30000, OutputTokens: 4000}
	st.Budget.MaxCostUSD = 5
	st.Statistics = state.Statistics{TotalMilestones: 2, Attempted: 1, Approved: 1}
	st.StopReason = stopped(stopreasons.UserStopped, 1, "SIGINT")
	st.Resumable = true
	return run{st: st, timeline: events(4, "run_stopped")}
}

func scenarioComplete() run {
	st := baseState()
	st.RunStatus = stopreasons.RunCompleted
	st.ElapsedMS = 9 * 60 * 1000
	st.Tick, st.Iteration = 8, 3
	st.MilestoneIndex = 1
	st.Milestones = []state.Milestone{
		{Goal: "Write the parser", Status: state.MilestoneApproved, Commit: "a1b2c3d", Attempts: []state.Attempt{
			{Tick: 1, Iteration: 1, Outcome: state.OutcomeFailed, ErrorSignature: "go-test:0c11", ExitCode: 1, CostUSD: 0.2},
			{Tick: 3, Iteration: 2, Outcome: state.OutcomeApproved, CostUSD: 0.25},
		}},
		{Goal: "Write the printer", Status: state.MilestoneApproved, Commit: "d4e5f6a", Attempts: []state.Attempt{
			{Tick: 6, Iteration: 3, Outcome: state.OutcomeApproved, CostUSD: 0.15},
		}},
	}
	st.Counters.Attempts = 3
	st.Usage = state.Usage{CostUSD: 0.6, InputTokens: 50000, OutputTokens: 9000}
	st.Statistics = state.Statistics{TotalMilestones: 2, Attempted: 2, Approved: 2, RetryRate: 0.5}
	st.StopReason = stopped(stopreasons.Complete, 2, "all milestones approved")
	return run{st: st, timeline: events(8, "run_completed")}
}

// fromJSON decodes a state as runr would read it from state.json.
func fromJSON(t testing.TB, st *state.State, patch func(m map[string]any)) *state.State {
	t.Helper()
	b, err := json.Marshal(st)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	patch(m)
	b, err = json.Marshal(m)
	require.NoError(t, err)
	var out state.State
	require.NoError(t, json.Unmarshal(b, &out))
	return &out
}

func scenarios(t testing.TB) map[string]run {
	bare := scenarioUserStopped()
	bare.st = fromJSON(t, bare.st, func(m map[string]any) { m["stop_reason"] = "max_ticks" })

	unknown := scenarioUserStopped()
	unknown.st = fromJSON(t, unknown.st, func(m map[string]any) {
		m["stop_reason"] = map[string]any{"code": "quantum_flux", "message": "flux capacitor overheated", "exit_code": 99}
	})

	missing := scenarioSameError()
	missing.noTimeline = true

	truncated := scenarioTimeout()
	var b strings.Builder
	for _, ev := range truncated.timeline {
		line, _ := json.Marshal(ev)
		b.Write(append(line, '\n'))
	}
	b.WriteString(`{"seq":24,"ts":"2026-11-21T23:12:17Z","type":"phase_sta`)
	raw := b.String()
	truncated.rawTimeline = &raw

	crashed := scenarioRateLimited()
	crashed.st.StopReason = nil
	crashed.st.RunStatus = stopreasons.RunCrashed
	crashed.st.Phase = state.PhaseImplement

	return map[string]run{
		"timeout_partial":     scenarioTimeout(),
		"same_error_repeated": scenarioSameError(),
		"guard_violation":     scenarioGuard(),
		"worker_rate_limited": scenarioRateLimited(),
		"user_stopped":        scenarioUserStopped(),
		"complete":            scenarioComplete(),
		"bare_string_reason":  bare,
		"unknown_code":        unknown,
		"missing_timeline":    missing,
		"truncated_timeline":  truncated,
		"crashed":             crashed,
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test ./internal/report -update")
	assert.Equal(t, string(want), string(got), "output differs from %s; if the change is intended, run go test ./internal/report -update", path)
}

func diagnose(t testing.TB, r run) *Report {
	t.Helper()
	rep, _ := diagnoseIn(t, r)
	return rep
}

func diagnoseIn(t testing.TB, r run) (*Report, string) {
	t.Helper()
	dir := r.dir(t)
	rep, err := Diagnose(r.st, dir)
	require.NoError(t, err)
	return rep, dir
}

func TestGolden(t *testing.T) {
	for name, r := range scenarios(t) {
		t.Run(name, func(t *testing.T) {
			rep, dir := diagnoseIn(t, r)
			// The run dir is a temp dir; the golden files name it RUNDIR.
			stable := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(dir), []byte("RUNDIR")) }
			var text bytes.Buffer
			require.NoError(t, rep.WriteText(&text, false))
			golden(t, name+".txt.golden", stable(text.Bytes()))
			js, err := rep.JSON()
			require.NoError(t, err)
			require.True(t, json.Valid(js))
			golden(t, name+".json.golden", stable(js))
			golden(t, name+".md.golden", stable([]byte(rep.Markdown())))
		})
	}
}

// Every "$ " line is exactly one next action: the command and nothing after it.
func TestCommandLinesHoldOnlyTheCommand(t *testing.T) {
	for name, r := range scenarios(t) {
		t.Run(name, func(t *testing.T) {
			rep := diagnose(t, r)
			require.NotEmpty(t, rep.NextActions, "every diagnosis says what to run next")
			for _, useColor := range []bool{false, true} {
				var text bytes.Buffer
				require.NoError(t, rep.WriteText(&text, useColor))
				var cmds []string
				for _, l := range strings.Split(text.String(), "\n") {
					if useColor {
						// Colour wraps only the prompt: "<esc>$<reset> command".
						if i := strings.Index(l, "$\x1b[0m "); i >= 0 {
							l = "$ " + l[i+len("$\x1b[0m "):]
						}
					}
					if cmd, ok := strings.CutPrefix(l, "$ "); ok {
						cmds = append(cmds, cmd)
					}
				}
				assert.Equal(t, rep.NextActions, cmds)
				for _, c := range cmds {
					assert.Equal(t, strings.TrimSpace(c), c)
					assert.NotContains(t, c, "\x1b", "no escape sequence after the command")
					assert.True(t, stopreasons.IsCommand(c), c)
				}
			}
		})
	}
}

func TestDiagnoseFigures(t *testing.T) {
	sc := scenarios(t)
	tests := []struct {
		name      string
		run       string
		code      stopreasons.Code
		terminal  string
		exit      int
		diagnosis []string
		actions   []string
		warnings  []string
		// shellFiles ends one of the next actions: the files, quoted for a shell.
		shellFiles string
	}{
		{name: "timeout grants the original budget", run: "timeout_partial", code: stopreasons.Timeout, terminal: stopreasons.DonePartial, exit: 124,
			diagnosis: []string{"30m ran out after 30m", "1 of 3 milestones approved"},
			actions:   []string{"runr resume " + runID + " --time 30m"}},
		{name: "same error names command and signature", run: "same_error_repeated", code: stopreasons.SameErrorRepeated, terminal: stopreasons.AbortedStuck, exit: 41,
			diagnosis: []string{"3 times in a row (limit 3)", "go build ./...", "go-build:undefined-CartTotal"},
			actions:   []string{"runr resume " + runID}},
		{name: "guard names the files", run: "guard_violation", code: stopreasons.GuardViolation, terminal: stopreasons.AbortedConstraint, exit: 2,
			diagnosis:  []string{"2 files", "deploy/prod.yaml"},
			shellFiles: "-- deploy/prod.yaml 'internal/secret/key file.go'"},
		{name: "rate limit says when it resets", run: "worker_rate_limited", code: stopreasons.WorkerRateLimited, terminal: stopreasons.AbortedError, exit: 33,
			diagnosis: []string{"resets at 2026-11-22T03:00:00Z"},
			actions:   []string{"runr resume " + runID + " --auto-resume"}},
		{name: "user stop", run: "user_stopped", code: stopreasons.UserStopped, terminal: stopreasons.AbortedUser, exit: 130,
			diagnosis: []string{"stopped at tick 4 (SIGINT)"},
			actions:   []string{"runr resume " + runID}},
		{name: "complete", run: "complete", code: stopreasons.Complete, terminal: stopreasons.DoneSuccess, exit: 0,
			diagnosis: []string{"2 of 2 milestones approved"},
			actions:   []string{"runr status " + runID}},
		{name: "bare string reason", run: "bare_string_reason", code: stopreasons.MaxTicks, terminal: stopreasons.DonePartial, exit: 125,
			diagnosis: []string{"used its 200 ticks"},
			actions:   []string{"runr resume " + runID + " --max-ticks 200"}},
		{name: "unknown code", run: "unknown_code", code: "quantum_flux", terminal: stopreasons.AbortedError, exit: 1,
			diagnosis: []string{`"quantum_flux"`, "flux capacitor overheated"},
			actions:   []string{"runr status " + runID}},
		{name: "missing timeline", run: "missing_timeline", code: stopreasons.SameErrorRepeated, terminal: stopreasons.AbortedStuck, exit: 41,
			warnings: []string{"timeline.jsonl: missing; the evidence comes from state.json alone"}},
		{name: "truncated timeline", run: "truncated_timeline", code: stopreasons.Timeout, terminal: stopreasons.DonePartial, exit: 124,
			warnings: []string{"timeline.jsonl: last line truncated, ignored"}},
		{name: "crashed run", run: "crashed", code: "", exit: 0,
			diagnosis: []string{"no stop reason", "tick 5, phase implement"},
			actions:   []string{"runr status " + runID, "runr resume " + runID}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := diagnose(t, sc[tt.run])
			assert.Equal(t, tt.code, rep.Reason.Code)
			assert.Equal(t, tt.terminal, rep.TerminalStatus)
			assert.Equal(t, tt.exit, rep.Reason.ExitCode)
			for _, s := range tt.diagnosis {
				assert.Contains(t, rep.Diagnosis, s)
			}
			if tt.actions != nil {
				assert.Equal(t, tt.actions, rep.NextActions)
			}
			if tt.shellFiles != "" {
				found := false
				for _, a := range rep.NextActions {
					found = found || strings.HasSuffix(a, tt.shellFiles)
				}
				assert.True(t, found, "no next action ends with %q: %q", tt.shellFiles, rep.NextActions)
			}
			if tt.warnings != nil {
				assert.Equal(t, tt.warnings, rep.Warnings)
			} else {
				assert.Empty(t, rep.Warnings)
			}
		})
	}
}

func TestEvidence(t *testing.T) {
	sc := scenarios(t)

	t.Run("output tail comes from the log, bounded", func(t *testing.T) {
		rep := diagnose(t, sc["same_error_repeated"])
		f := rep.Evidence.LastFailure
		require.NotNil(t, f)
		tail := strings.Split(f.Tail, "\n")
		assert.Len(t, tail, tailLines)
		assert.Equal(t, "./cart.go:12:9: undefined: CartTotal", tail[len(tail)-1])
		assert.Equal(t, []SignatureCount{{Signature: "go-build:undefined-CartTotal", Count: 3, FirstTick: 2, LastTick: 6}}, rep.Evidence.Signatures)
	})

	t.Run("signatures most frequent first", func(t *testing.T) {
		rep := diagnose(t, sc["timeout_partial"])
		require.Len(t, rep.Evidence.Signatures, 2)
		assert.Equal(t, "go-test:91bc", rep.Evidence.Signatures[0].Signature)
		assert.Equal(t, 2, rep.Evidence.Signatures[0].Count)
		assert.Contains(t, rep.Evidence.LastFailure.Tail, "got status 500, want 201")
	})

	t.Run("the rule that fired is not among the others", func(t *testing.T) {
		rep := diagnose(t, sc["timeout_partial"])
		assert.Equal(t, "budget.time: Elapsed 30m0s reached the 30m budget", rep.Rule)
		names := []string{}
		for _, c := range rep.Conditions {
			names = append(names, c.Name)
		}
		assert.Equal(t, []string{"same_error", "circuit_breaker", "max_ticks"}, names)
	})

	t.Run("a missing log falls back to the tail in state", func(t *testing.T) {
		r := scenarioSameError()
		r.logs = nil
		rep := diagnose(t, r)
		assert.Equal(t, "./cart.go:12:9: undefined: CartTotal", rep.Evidence.LastFailure.Tail)
		assert.Equal(t, []string{"logs/tick-0006-verify.log: missing; the output tail comes from state.json"}, rep.Warnings)
	})

	t.Run("a log path leaving the run dir is not read", func(t *testing.T) {
		r := scenarioSameError()
		r.st.LastFailure.Log = "../../etc/passwd"
		rep := diagnose(t, r)
		assert.Equal(t, "./cart.go:12:9: undefined: CartTotal", rep.Evidence.LastFailure.Tail)
		assert.Contains(t, rep.Warnings[0], "leaves the run directory")
	})

	t.Run("timeline summary", func(t *testing.T) {
		rep := diagnose(t, sc["truncated_timeline"])
		tl := rep.Evidence.Timeline
		assert.True(t, tl.Present)
		assert.EqualValues(t, 24, tl.Events)
		assert.Equal(t, "run_stopped", tl.LastType)
		assert.Equal(t, 11, tl.ByType["phase_started"])
	})

	t.Run("a damaged line in the middle is counted, not fatal", func(t *testing.T) {
		r := scenarioComplete()
		raw := `{"seq":1,"type":"run_started"}` + "\n" + "not json\n" + `{"seq":3,"type":"run_completed","tick":8}` + "\n"
		r.rawTimeline = &raw
		rep := diagnose(t, r)
		assert.EqualValues(t, 2, rep.Evidence.Timeline.Events)
		assert.Equal(t, "run_completed", rep.Evidence.Timeline.LastType)
		assert.Equal(t, []string{"timeline.jsonl: 1 damaged line ignored (first: line 2)"}, rep.Warnings)
	})

	t.Run("cost budget grants --max-cost", func(t *testing.T) {
		r := scenarioUserStopped()
		r.st.StopReason = stopped(stopreasons.BudgetExceeded, 1, "")
		r.st.Usage.CostUSD = 5.02
		rep := diagnose(t, r)
		assert.Contains(t, rep.Diagnosis, "cost budget is spent: $5.02 of $5.00")
		assert.Equal(t, []string{"runr resume " + runID + " --max-cost 5"}, rep.NextActions)
	})

	t.Run("token budget has no flag and says what to do", func(t *testing.T) {
		r := scenarioUserStopped()
		r.st.Budget = state.Budget{TimeMS: 1800000, MaxTicks: 200, MaxTokens: 30000}
		r.st.StopReason = stopped(stopreasons.BudgetExceeded, 1, "")
		r.st.StopReason.Condition = "max_tokens"
		r.st.StopReason.Value = float64(34000)
		r.st.StopReason.Threshold = float64(30000)
		rep := diagnose(t, r)
		assert.Contains(t, rep.Diagnosis, "max_tokens budget is spent: 34000 of 30000")
		assert.Empty(t, rep.NextActions)
		assert.Contains(t, rep.Hints[len(rep.Hints)-1], "budget.max_tokens")
	})

	t.Run("nil state is an error, not a panic", func(t *testing.T) {
		_, err := Diagnose(nil, t.TempDir())
		require.Error(t, err)
		assert.Equal(t, stopreasons.InternalError, stopreasons.CodeOf(err))
	})
}

func TestHumanFigures(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{nil, ""},
		{"30m0s", "30m"},
		{"1h30m0s", "1h30m"},
		{"2h0m0s", "2h"},
		{"45s", "45s"},
		{"go test ./...", "go test ./..."},
		{"5", "5"},
		{float64(3), "3"},
		{0.375, "0.375"},
		{7, "7"},
		{90 * time.Second, "1m30s"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, human(tt.in), "%#v", tt.in)
	}
}

// A stop that recorded raw numbers for the time budget is shown with the
// run's own clock.
func TestTimeoutWithNumericFigures(t *testing.T) {
	r := scenarioTimeout()
	r.st.StopReason.Value = float64(1800120)
	r.st.StopReason.Threshold = float64(1800000)
	r.st.Budget.TimeMS = 45 * 60 * 1000
	r.st.ElapsedMS = 45*60*1000 + 700
	rep := diagnose(t, r)
	assert.Contains(t, rep.Diagnosis, "The time budget of 45m ran out after 45m1s")
	assert.Equal(t, []string{"runr resume " + runID + " --time 45m"}, rep.NextActions)
}

func TestColourOnlyWhenAsked(t *testing.T) {
	rep := diagnose(t, scenarioTimeout())
	var plain, coloured bytes.Buffer
	require.NoError(t, rep.WriteText(&plain, false))
	require.NoError(t, rep.WriteText(&coloured, true))
	assert.NotContains(t, plain.String(), "\x1b[")
	assert.Contains(t, coloured.String(), "\x1b[")
}

func TestWriteStop(t *testing.T) {
	r := scenarioTimeout()
	dir := r.dir(t)
	require.NoError(t, WriteStop(dir, r.st))

	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	require.NoError(t, err)
	report := string(md)
	for _, want := range []string{
		"- **Terminal status:** done_partial",
		"- **Stop reason:** `timeout`: Time budget spent (resource_limit, guardrail, exit code 124)",
		"| # | goal | status | attempts | outcomes |",
		"| 2 | Checkout endpoint with \\| pipes | in_progress | 3 | failed x2, stopped |",
		"| same_error | 2 |",
		"| backward edges | verify->implement 3 |",
		"$1.13",
		"The time budget of 30m ran out after 30m",
		"runr resume " + runID + " --time 30m\n",
	} {
		assert.Contains(t, report, want)
	}

	js, err := os.ReadFile(filepath.Join(dir, StopFile))
	require.NoError(t, err)
	var got Report
	require.NoError(t, json.Unmarshal(js, &got))
	assert.Equal(t, stopreasons.Timeout, got.Reason.Code)
	assert.Equal(t, []string{"runr resume " + runID + " --time 30m"}, got.NextActions)

	// No temporary files are left behind.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasPrefix(e.Name(), "."), "leftover %s", e.Name())
	}

	// Rewriting replaces both files.
	r.st.StopReason = stopped(stopreasons.UserStopped, 1, "runr stop")
	require.NoError(t, WriteStop(dir, r.st))
	js, err = os.ReadFile(filepath.Join(dir, StopFile))
	require.NoError(t, err)
	assert.Contains(t, string(js), `"code": "user_stopped"`)
}

func TestWriteStopUnwritableDir(t *testing.T) {
	r := scenarioComplete()
	dir := filepath.Join(r.dir(t), "report-is-a-file")
	require.NoError(t, os.WriteFile(dir, nil, 0o644))
	err := WriteStop(dir, r.st)
	require.Error(t, err)
	assert.Equal(t, stopreasons.EnvironmentInvalid, stopreasons.CodeOf(err))
	assert.Contains(t, err.Error(), MarkdownFile)
}

func BenchmarkDiagnoseLargeTimeline(b *testing.B) {
	r := scenarioTimeout()
	r.timeline = nil
	dir := r.dir(b)
	f, err := os.Create(filepath.Join(dir, timelineFile))
	require.NoError(b, err)
	for i := int64(1); i <= 100_000; i++ {
		ev := state.Event{Seq: i, TS: t0.Add(time.Duration(i) * time.Second), Tick: int(i / 2), Phase: state.PhaseVerify,
			Data: state.UnknownEvent{Type: "phase_ended", Data: json.RawMessage(`{"command":"go test ./...","duration_ms":1234,"exit_code":1}`)}}
		line, err := json.Marshal(ev)
		require.NoError(b, err)
		_, err = f.Write(append(line, '\n'))
		require.NoError(b, err)
	}
	require.NoError(b, f.Close())
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rep, err := Diagnose(r.st, dir)
		if err != nil || rep.Evidence.Timeline.Events != 100_000 {
			b.Fatalf("diagnose: %v, %d events", err, rep.Evidence.Timeline.Events)
		}
	}
}
