// Package report renders a run for people: the account of why it stopped,
// shown by `runr doctor` and written as report.md and stop.json when the
// run stops (WriteStop), and the transcript of its timeline (`runr logs`,
// `runr watch`).
//
// Diagnose turns a run's state and run dir into a Report: why the run stopped,
// with the run's own figures as evidence, and the exact commands to run next.
// It never fails on a damaged run; what it could not read becomes a warning.
package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// Report is the diagnosis of one run. Its JSON field names are stable.
type Report struct {
	RunID          string `json:"run_id"`
	RunStatus      string `json:"run_status"`
	TerminalStatus string `json:"terminal_status"`
	// Stopped is false for a run without a stop reason (running or crashed).
	Stopped   bool       `json:"stopped"`
	Reason    ReasonInfo `json:"reason"`
	Diagnosis string     `json:"diagnosis"`
	Evidence  Evidence   `json:"evidence"`
	// Rule says which rule fired, with its value and threshold.
	Rule string `json:"rule"`
	// Conditions are the other rules, closest to firing first.
	Conditions []state.ConditionProg `json:"conditions"`
	Milestones []MilestoneRow        `json:"milestones"`
	// NextActions are commands to run as printed.
	NextActions []string `json:"next_actions"`
	// Hints are next actions for a person that are not commands.
	Hints    []string `json:"hints"`
	Warnings []string `json:"warnings"`
	// Sandbox is the confinement the run's agent calls got, as recorded
	// when the run (or its last resume) started; nil when none was
	// recorded (sandbox.mode off).
	Sandbox *SandboxRecord `json:"sandbox,omitempty"`
}

// ReasonInfo is the registry's row for the run's stop reason.
type ReasonInfo struct {
	Code          stopreasons.Code `json:"code"`
	Known         bool             `json:"known"`
	Title         string           `json:"title"`
	Family        string           `json:"family"`
	Category      string           `json:"category"`
	ExitCode      int              `json:"exit_code"`
	AutoResumable bool             `json:"auto_resumable"`
	Condition     string           `json:"condition,omitempty"`
	Value         string           `json:"value,omitempty"`
	Threshold     string           `json:"threshold,omitempty"`
	Message       string           `json:"message,omitempty"`
}

// Evidence is what the diagnosis rests on.
type Evidence struct {
	LastFailure *FailureEvidence `json:"last_failure,omitempty"`
	Signatures  []SignatureCount `json:"signatures"`
	Counters    state.Counters   `json:"counters"`
	// Files are the files a guard named (stop_reason.details["files"]), at
	// most stopreasons.MaxDetailFiles; FilesOmitted counts the others.
	Files        []string `json:"files"`
	FilesOmitted int      `json:"files_omitted,omitempty"`
	// Untested is what a verify that passed did not show it tested
	// (changes_not_tested): the figure and the files with lines not run.
	Untested *stopreasons.Untested `json:"untested,omitempty"`
	// ResetAt is when a provider's rate limit resets, if the agent said.
	ResetAt       string           `json:"reset_at,omitempty"`
	Usage         state.Usage      `json:"usage"`
	MaxCostUSD    float64          `json:"max_cost_usd"`
	MaxTokens     int64            `json:"max_tokens"`
	ElapsedMS     int64            `json:"elapsed_ms"`
	BudgetTimeMS  int64            `json:"budget_time_ms"`
	Tick          int              `json:"tick"`
	MaxTicks      int              `json:"max_ticks"`
	Iteration     int              `json:"iteration"`
	MaxIterations int              `json:"max_iterations"`
	Statistics    state.Statistics `json:"statistics"`
	Timeline      TimelineSummary  `json:"timeline"`
	// Agents are the agents that made the run's calls, in order of first
	// use; AgentSwitches the run's switches to a fallback agent.
	Agents        []state.AgentRef    `json:"agents,omitempty"`
	AgentSwitches []state.AgentSwitch `json:"agent_switches,omitempty"`
}

// FailureEvidence is the last failing command and the end of its output.
type FailureEvidence struct {
	Tick      int    `json:"tick"`
	Phase     string `json:"phase"`
	Command   string `json:"command"`
	ExitCode  int    `json:"exit_code"`
	Signature string `json:"signature,omitempty"`
	// Log is the full output's file, relative to the run dir.
	Log string `json:"log,omitempty"`
	// Tail is the end of the log file when it could be read, else the tail
	// state.json kept.
	Tail  string `json:"tail"`
	Notes string `json:"notes,omitempty"`
}

// SignatureCount is one error signature and how often the attempts hit it.
type SignatureCount struct {
	Signature string `json:"signature"`
	Count     int    `json:"count"`
	FirstTick int    `json:"first_tick"`
	LastTick  int    `json:"last_tick"`
}

// TimelineSummary is what a pass over timeline.jsonl found.
type TimelineSummary struct {
	Present  bool           `json:"present"`
	Events   int64          `json:"events"`
	ByType   map[string]int `json:"by_type"`
	LastSeq  int64          `json:"last_seq"`
	LastType string         `json:"last_type,omitempty"`
	LastTick int            `json:"last_tick"`
	LastTS   *time.Time     `json:"last_ts,omitempty"`

	sandbox *state.SandboxEvent // the last `sandbox` event
}

// MilestoneRow is one milestone with its attempts.
type MilestoneRow struct {
	Number   int            `json:"number"` // 1-based
	Goal     string         `json:"goal"`
	Status   string         `json:"status"`
	Attempts int            `json:"attempts"`
	Outcomes []string       `json:"outcomes"`
	Edges    map[string]int `json:"edges,omitempty"`
	CostUSD  float64        `json:"cost_usd"`
	Commit   string         `json:"commit,omitempty"`
}

// Diagnose explains the run st, whose files are in runDir. It reads the
// timeline (streaming) and the last failure's log; whatever is missing or
// damaged becomes a warning, so it only fails on a nil state.
func Diagnose(st *state.State, runDir string) (*Report, error) {
	if st == nil {
		return nil, stopreasons.Errorf(stopreasons.InternalError, "doctor: no run state to diagnose")
	}
	r := &Report{
		RunID:      st.RunID,
		RunStatus:  st.RunStatus,
		Conditions: []state.ConditionProg{},
		Milestones: milestoneRows(st),
		Hints:      []string{},
		Warnings:   []string{},
	}
	r.Evidence = gatherEvidence(st, runDir, r)
	r.Sandbox = sandboxRecord(r.Evidence.Timeline.sandbox)

	if st.StopReason == nil || st.StopReason.Code == "" {
		diagnoseUnstopped(st, r)
	} else {
		diagnoseStop(st, runDir, r)
	}
	if r.NextActions == nil {
		r.NextActions = []string{}
	}
	return r, nil
}

// diagnoseUnstopped covers a run with no stop reason: live, or crashed
// before it could record one.
func diagnoseUnstopped(st *state.State, r *Report) {
	r.Reason = ReasonInfo{Title: "No stop reason recorded"}
	where := fmt.Sprintf("tick %d", st.Tick)
	if st.Phase != "" {
		where += ", phase " + st.Phase
	}
	if r.RunStatus == stopreasons.RunCrashed {
		r.Diagnosis = fmt.Sprintf("The run has no stop reason: runr ended without recording one (killed, or the machine went down) at %s. A resume continues from the last saved state.", where)
	} else {
		r.Diagnosis = fmt.Sprintf("The run has no stop reason: it is still running (%s), or runr ended without recording one. `runr status` shows a run whose runr process is gone as crashed; a resume continues it from the last saved state.", where)
	}
	r.Rule = "none"
	r.Conditions = sortedConditions(st.Conditions, "")
	if st.RunID != "" {
		r.NextActions = []string{"runr status " + st.RunID, "runr resume " + st.RunID}
	}
}

func diagnoseStop(st *state.State, runDir string, r *Report) {
	sr := st.StopReason
	d := details(st, r)
	reg, known := stopreasons.Lookup(sr.Code)

	r.Stopped = true
	r.Reason = ReasonInfo{
		Code:      sr.Code,
		Known:     known,
		Condition: sr.Condition,
		Value:     d.Value,
		Threshold: d.Threshold,
		Message:   sr.Message,
	}
	r.TerminalStatus = sr.TerminalStatus
	if r.TerminalStatus == "" {
		r.TerminalStatus = stopreasons.TerminalStatus(sr.Code, d.Approved)
	}
	if r.RunStatus == "" {
		r.RunStatus = stopreasons.RunStatus(sr.Code)
	}
	r.Rule = rule(sr.Code, d)
	r.Conditions = sortedConditions(st.Conditions, sr.Condition)

	if !known {
		r.Reason.Title = "Unknown stop reason"
		r.Reason.Family = sr.Family
		r.Reason.Category = string(stopreasons.CategoryError)
		r.Reason.ExitCode = stopreasons.UnknownExitCode
		r.Diagnosis = fmt.Sprintf("The run stopped with %q, a reason this runr does not know (the run may come from a newer runr). Treat it as a failure.", string(sr.Code))
		if sr.Message != "" {
			r.Diagnosis += " Its message: " + sr.Message
		}
		r.Hints = append(r.Hints, "read the run's state with a runr as new as the one that wrote it")
		if st.RunID != "" {
			r.NextActions = []string{"runr status " + st.RunID}
		}
		return
	}

	r.Reason.Title = reg.Title
	r.Reason.Family = string(reg.Family)
	r.Reason.Category = string(reg.Category)
	r.Reason.ExitCode = reg.ExitCode
	r.Reason.AutoResumable = reg.AutoResumable
	r.Diagnosis = reg.Diagnose(d)

	for _, a := range reg.Actions(d) {
		// This report is what `runr doctor` on the run prints, and the end
		// of a run's summary already names that command: suggesting it here
		// would send the reader to what they are reading.
		if a == "runr doctor "+st.RunID {
			continue
		}
		if stopreasons.IsCommand(a) {
			r.NextActions = append(r.NextActions, a)
		} else {
			r.Hints = append(r.Hints, a)
		}
	}
	r.Hints = append(r.Hints, familyHints(runDir, reg, d, r)...)
}

// familyHints adds what a family's stops have in common beyond the
// registry's own next actions.
func familyHints(runDir string, reg stopreasons.Reason, d stopreasons.Details, r *Report) []string {
	var out []string
	if budgetOf[reg.Code] == budgetCost && d.Grant == "" {
		out = append(out, "the token budget has no resume flag: raise budget.max_tokens in runr.yaml, then resume with --force")
	}
	if reg.Family == stopreasons.FamilyWorker && r.Evidence.ResetAt != "" {
		out = append(out, "the provider's limit resets at "+r.Evidence.ResetAt)
	}
	if own := slices.DeleteFunc(slices.Clone(d.Files), func(f string) bool { return slices.Contains(d.Stash, f) }); len(own) > 0 && reg.Code == stopreasons.GuardViolation {
		out = append(out, "the stash leaves "+stopreasons.ShowPaths(own)+" alone: they are the run's task and config files; undo the agent's changes to them by hand")
	}
	if reg.Code == stopreasons.GuardViolation && slices.Contains(strings.Split(d.Condition, ", "), stopreasons.RuleProtect) {
		out = append(out, "rule protect: "+stopreasons.ProtectAdvice)
	}
	if f := r.Evidence.LastFailure; f != nil && f.Log != "" && reg.Family != stopreasons.FamilySuccess {
		out = append(out, "full output of the last failure: "+filepath.Join(runDir, f.Log))
	}
	return out
}

func rule(code stopreasons.Code, d stopreasons.Details) string {
	name := d.Condition
	if name == "" {
		name = string(code)
	}
	switch {
	case d.Message != "":
		return name + ": " + d.Message
	case d.Value != "" && d.Threshold != "":
		return fmt.Sprintf("%s: %s (threshold %s)", name, d.Value, d.Threshold)
	}
	return name
}

// sortedConditions lists the rules other than the one that fired, closest
// to firing first.
func sortedConditions(cs []state.ConditionProg, fired string) []state.ConditionProg {
	out := []state.ConditionProg{}
	for _, c := range cs {
		if fired != "" && c.Name == fired {
			continue
		}
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Progress > out[j].Progress })
	return out
}

// human formats a stop's value or threshold as decoded from JSON or set in code.
func human(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		// Durations arrive as Go writes them ("30m0s"); show them as a
		// user writes them ("30m").
		if d, err := time.ParseDuration(x); err == nil && strings.ContainsAny(x, "hms") {
			return duration(d.Milliseconds())
		}
		return x
	case time.Duration:
		return duration(x.Milliseconds())
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32)
	}
	return fmt.Sprint(v)
}

// duration formats milliseconds the way a user writes them: 30m, 1h30m, 45s.
func duration(ms int64) string {
	return stopreasons.Duration(time.Duration(ms) * time.Millisecond)
}

func usd(v float64) string { return fmt.Sprintf("$%.2f", v) }
