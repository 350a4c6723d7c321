package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/fatih/color"

	"github.com/runr-dev/runr/internal/rulestate"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/termtext"
)

// JSON returns the report as one indented JSON object.
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode doctor report of run %s: %w", r.RunID, err)
	}
	// The values stay as they are; only their encoding hides no control
	// character from a terminal that shows the file.
	return append(termtext.VisibleJSON(b), '\n'), nil
}

// printable is the report with its text made visible (DESIGN §9): the
// diagnosis, messages, tails, notes, goals and file names came from an
// agent, a log or the task, and may hold escape sequences.
func (r *Report) printable() *Report {
	line, text := termtext.VisibleLine, termtext.Visible
	c := *r
	c.RunStatus, c.TerminalStatus, c.Rule = line(r.RunStatus), line(r.TerminalStatus), line(r.Rule)
	c.Diagnosis = text(r.Diagnosis)
	c.Reason.Title, c.Reason.Message = line(r.Reason.Title), text(r.Reason.Message)
	c.Reason.Condition, c.Reason.Value, c.Reason.Threshold = line(r.Reason.Condition), line(r.Reason.Value), line(r.Reason.Threshold)
	if f := r.Evidence.LastFailure; f != nil {
		fc := *f
		fc.Phase, fc.Command, fc.Signature, fc.Log = line(f.Phase), line(f.Command), line(f.Signature), line(f.Log)
		fc.Tail, fc.Notes = text(f.Tail), text(f.Notes)
		c.Evidence.LastFailure = &fc
	}
	c.Evidence.Signatures = make([]SignatureCount, len(r.Evidence.Signatures))
	for i, sg := range r.Evidence.Signatures {
		sg.Signature = line(sg.Signature)
		c.Evidence.Signatures[i] = sg
	}
	c.Evidence.Files = visibleLines(r.Evidence.Files)
	c.Evidence.ResetAt = line(r.Evidence.ResetAt)
	if u := r.Evidence.Untested; u != nil {
		uc := *u
		uc.Uncovered = make([]stopreasons.Uncovered, len(u.Uncovered))
		for i, f := range u.Uncovered {
			uc.Uncovered[i] = stopreasons.Uncovered{File: line(f.File), Lines: line(f.Lines)}
		}
		c.Evidence.Untested = &uc
	}
	c.Evidence.Timeline.LastType = line(r.Evidence.Timeline.LastType)
	c.Evidence.Agents = make([]state.AgentRef, len(r.Evidence.Agents))
	for i, a := range r.Evidence.Agents {
		c.Evidence.Agents[i] = state.AgentRef{Kind: line(a.Kind), Model: line(a.Model)}
	}
	if r.Evidence.Agents == nil {
		c.Evidence.Agents = nil
	}
	c.Evidence.AgentSwitches = make([]state.AgentSwitch, len(r.Evidence.AgentSwitches))
	for i, sw := range r.Evidence.AgentSwitches {
		sw.From = state.AgentRef{Kind: line(sw.From.Kind), Model: line(sw.From.Model)}
		sw.To = state.AgentRef{Kind: line(sw.To.Kind), Model: line(sw.To.Model)}
		sw.Reason, sw.ResetAt, sw.Message = line(sw.Reason), line(sw.ResetAt), line(sw.Message)
		c.Evidence.AgentSwitches[i] = sw
	}
	if r.Evidence.AgentSwitches == nil {
		c.Evidence.AgentSwitches = nil
	}
	c.Conditions = make([]state.ConditionProg, len(r.Conditions))
	for i, cp := range r.Conditions {
		cp.Name, cp.Message = line(cp.Name), line(cp.Message)
		c.Conditions[i] = cp
	}
	c.Milestones = make([]MilestoneRow, len(r.Milestones))
	for i, m := range r.Milestones {
		m.Goal, m.Status, m.Outcomes = line(m.Goal), line(m.Status), visibleLines(m.Outcomes)
		c.Milestones[i] = m
	}
	c.NextActions, c.Hints, c.Warnings = visibleLines(r.NextActions), visibleLines(r.Hints), visibleLines(r.Warnings)
	return &c
}

func visibleLines(in []string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = termtext.VisibleLine(s)
	}
	return out
}

// palette holds the styles of one WriteText call; colour is decided per call
// because the caller knows which stream the text goes to.
type palette struct {
	head, bad, good, cmd, dim *color.Color
}

func newPalette(enabled bool) palette {
	p := palette{
		head: color.New(color.Bold),
		bad:  color.New(color.FgRed, color.Bold),
		good: color.New(color.FgGreen, color.Bold),
		cmd:  color.New(color.FgCyan),
		dim:  color.New(color.Faint),
	}
	for _, c := range []*color.Color{p.head, p.bad, p.good, p.cmd, p.dim} {
		if enabled {
			c.EnableColor()
		} else {
			c.DisableColor()
		}
	}
	return p
}

// WriteText writes the report for a person. Each next command is a line of
// its own: "$ " and the exact command, nothing after it.
func (r *Report) WriteText(w io.Writer, useColor bool) error {
	r = r.printable()
	p := newPalette(useColor)
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }

	status := r.RunStatus
	if r.TerminalStatus != "" {
		status += ", " + r.TerminalStatus
	}
	line("%s %s (%s)", p.head.Sprint("Run"), r.RunID, status)

	reasonStyle := p.bad
	if r.Reason.ExitCode == 0 && r.Stopped {
		reasonStyle = p.good
	}
	if r.Stopped {
		line("%-11s%s: %s (%s, exit %d)", "Reason:", reasonStyle.Sprint(string(r.Reason.Code)), r.Reason.Title,
			joinNonEmpty(", ", r.Reason.Family, r.Reason.Category, autoResume(r.Reason.AutoResumable)), r.Reason.ExitCode)
	} else {
		line("%-11s%s", "Reason:", r.Reason.Title)
	}
	line("%-11s%s", "Rule:", r.Rule)
	line("")
	line("%s", r.Diagnosis)

	r.writeEvidence(line, p)
	if sb := r.Sandbox; sb != nil {
		line("")
		line("%s %s", p.head.Sprint("Sandbox:"), sb.Summary())
		if len(sb.Writable) > 0 {
			line("  may write: %s", strings.Join(sb.Writable, ", "))
		}
	}

	if len(r.Conditions) > 0 {
		line("")
		line("%s", p.head.Sprint("Other rules (closest first)"))
		width := 0
		for _, c := range r.Conditions {
			width = max(width, len(c.Name))
		}
		for _, c := range r.Conditions {
			line("  %-*s %4.0f%%  %s", width, c.Name, c.Progress*100, c.Message)
		}
	}

	if len(r.Milestones) > 0 {
		line("")
		line("%s", p.head.Sprint("Milestones"))
		for _, m := range r.Milestones {
			line("  %2d. %-11s %s%s  %s", m.Number, m.Status, stopreasons.Plural(m.Attempts, "attempt"),
				bracket(outcomeSummary(m.Outcomes)), m.Goal)
		}
	}

	if len(r.Warnings) > 0 {
		line("")
		line("%s", p.head.Sprint("Warnings"))
		for _, wn := range r.Warnings {
			line("  %s", wn)
		}
	}

	line("")
	line("%s", p.head.Sprint("Next"))
	for _, h := range r.Hints {
		line("  %s", h)
	}
	for _, c := range r.NextActions {
		// Only the prompt is coloured, so nothing follows the command.
		line("%s %s", p.cmd.Sprint("$"), c)
	}
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("write doctor report of run %s: %w", r.RunID, err)
	}
	return nil
}

func (r *Report) writeEvidence(line func(string, ...any), p palette) {
	ev := r.Evidence
	line("")
	line("%s", p.head.Sprint("Evidence"))
	if f := ev.LastFailure; f != nil {
		line("  Last failure: tick %d, %s: %s (exit %d)", f.Tick, f.Phase, f.Command, f.ExitCode)
		if f.Signature != "" {
			line("    signature %s", f.Signature)
		}
		if f.Log != "" {
			line("    log %s", f.Log)
		}
		if f.Notes != "" {
			line("    review notes: %s", f.Notes)
		}
		for _, l := range strings.Split(f.Tail, "\n") {
			if l != "" {
				line("    %s %s", p.dim.Sprint("|"), l)
			}
		}
	}
	if len(ev.Signatures) > 0 {
		line("  Error signatures:")
		for _, s := range ev.Signatures {
			line("    %dx %s (ticks %d-%d)", s.Count, s.Signature, s.FirstTick, s.LastTick)
		}
	}
	if len(ev.Files) > 0 {
		line("  Files: %s", stopreasons.ShowFiles(ev.Files, ev.FilesOmitted))
	}
	if ev.ResetAt != "" {
		line("  Limit resets at: %s", ev.ResetAt)
	}
	if len(ev.AgentSwitches) > 0 {
		used := make([]string, len(ev.Agents))
		for i, a := range ev.Agents {
			used[i] = a.String()
		}
		line("  Agents: %s", joinNonEmpty(", ", used...))
		for _, sw := range ev.AgentSwitches {
			line("    %s", sw.String())
		}
	}
	c := ev.Counters
	var counts []string
	for _, n := range rulestate.Counts(c) {
		counts = append(counts, fmt.Sprintf("%s %d", n.Name, n.Value))
	}
	line("  Counters: %s", strings.Join(counts, ", "))
	if edges := edgeList(c.Edges); edges != "" {
		line("  Backward edges: %s", edges)
	}
	line("  Cost: %s", costLine(ev))
	line("  Elapsed: %s", ofBudget(duration(ev.ElapsedMS), ev.BudgetTimeMS > 0, duration(ev.BudgetTimeMS)))
	line("  Ticks: %s; iterations: %s", ofBudget(strconv.Itoa(ev.Tick), ev.MaxTicks > 0, strconv.Itoa(ev.MaxTicks)),
		ofBudget(strconv.Itoa(ev.Iteration), ev.MaxIterations > 0, strconv.Itoa(ev.MaxIterations)))
	st := ev.Statistics
	line("  Milestones: %d approved, %d failed, %d rejected, %d attempted of %d; retry rate %s, reject rate %s",
		st.Approved, st.Failed, st.Rejected, st.Attempted, st.TotalMilestones, percent(st.RetryRate), percent(st.RejectRate))
	if t := ev.Timeline; t.Present {
		last := ""
		if t.LastType != "" {
			last = fmt.Sprintf(", last: %s at tick %d", t.LastType, t.LastTick)
		}
		line("  Timeline: %s%s", stopreasons.Plural(int(t.Events), "event"), last)
	}
}

func costLine(ev Evidence) string {
	cost := usd(ev.Usage.CostUSD)
	if ev.Usage.CostEstimated {
		cost += " (estimated)"
	}
	if ev.MaxCostUSD > 0 {
		cost += " of " + usd(ev.MaxCostUSD)
	}
	tokens := fmt.Sprintf("%d input + %d output tokens", ev.Usage.InputTokens, ev.Usage.OutputTokens)
	if ev.MaxTokens > 0 {
		tokens += fmt.Sprintf(" of %d", ev.MaxTokens)
	}
	return cost + "; " + tokens
}

func ofBudget(v string, has bool, budget string) string {
	if !has {
		return v
	}
	return v + " of " + budget
}

func percent(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + "%" }

func edgeList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// outcomeSummary shortens a run of equal outcomes: failed x3, approved.
func outcomeSummary(outcomes []string) string {
	var parts []string
	for i := 0; i < len(outcomes); {
		j := i
		for j < len(outcomes) && outcomes[j] == outcomes[i] {
			j++
		}
		if n := j - i; n > 1 {
			parts = append(parts, fmt.Sprintf("%s x%d", outcomes[i], n))
		} else {
			parts = append(parts, outcomes[i])
		}
		i = j
	}
	return strings.Join(parts, ", ")
}

func bracket(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func autoResume(yes bool) string {
	if yes {
		return "auto-resumable"
	}
	return ""
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, s := range parts {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, sep)
}
