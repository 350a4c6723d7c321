package report

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/runr-dev/runr/internal/rulestate"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// Names of the files written when a run stops (DESIGN §5).
const (
	MarkdownFile = "report.md"
	StopFile     = "stop.json"
)

// WriteStop writes report.md and stop.json into runDir, each atomically,
// so a reader sees the old file or the new one, never half of one.
func WriteStop(runDir string, st *state.State) error {
	r, err := Diagnose(st, runDir)
	if err != nil {
		return err
	}
	js, err := r.JSON()
	if err != nil {
		return stopreasons.Wrap(stopreasons.InternalError, err, "write %s", filepath.Join(runDir, StopFile))
	}
	files := []state.File{{Name: MarkdownFile, Data: []byte(r.Markdown())}, {Name: StopFile, Data: js}}
	if err := state.WriteAtomicFiles(runDir, files); err != nil {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "write %s and %s in %s: check that the run directory is writable", MarkdownFile, StopFile, runDir)
	}
	return nil
}

// Markdown renders the report as report.md.
func (r *Report) Markdown() string {
	r = r.printable()
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	r.mdTitle(line)
	r.mdDiagnosis(line)
	r.mdStatistics(line)
	r.mdMilestones(line)
	r.mdCounters(line)
	r.mdEvidence(line)
	r.mdOtherRules(line)
	r.mdNext(line)
	r.mdWarnings(line)
	return b.String()
}

// mdLine writes one line of report.md, formatted as fmt.Sprintf formats.
type mdLine func(format string, args ...any)

// mdTitle writes the title of report.md and the run's status, stop reason
// and rule under it.
func (r *Report) mdTitle(line mdLine) {
	line("# runr run %s", r.RunID)
	line("")
	line("- **Run status:** %s", r.RunStatus)
	if r.TerminalStatus != "" {
		line("- **Terminal status:** %s", r.TerminalStatus)
	}
	if r.Stopped {
		line("- **Stop reason:** `%s`: %s (%s, exit code %d)", r.Reason.Code, r.Reason.Title,
			joinNonEmpty(", ", r.Reason.Family, r.Reason.Category, autoResume(r.Reason.AutoResumable)), r.Reason.ExitCode)
	} else {
		line("- **Stop reason:** %s", r.Reason.Title)
	}
	line("- **Rule:** %s", mdEscape(r.Rule))
}

// mdDiagnosis writes the Diagnosis section.
func (r *Report) mdDiagnosis(line mdLine) {
	line("")
	line("## Diagnosis")
	line("")
	line("%s", r.Diagnosis)
}

// mdStatistics writes the Statistics section: the milestones' figures and
// what the run used of each budget.
func (r *Report) mdStatistics(line mdLine) {
	ev := r.Evidence
	st := ev.Statistics
	line("")
	line("## Statistics")
	line("")
	line("| | |")
	line("|---|---|")
	line("| milestones | %d approved, %d failed, %d rejected, %d attempted of %d |", st.Approved, st.Failed, st.Rejected, st.Attempted, st.TotalMilestones)
	line("| retry rate | %s |", percent(st.RetryRate))
	line("| reject rate | %s |", percent(st.RejectRate))
	line("| elapsed | %s |", ofBudget(duration(ev.ElapsedMS), ev.BudgetTimeMS > 0, duration(ev.BudgetTimeMS)))
	line("| ticks | %s |", ofBudget(fmt.Sprint(ev.Tick), ev.MaxTicks > 0, fmt.Sprint(ev.MaxTicks)))
	line("| iterations | %s |", ofBudget(fmt.Sprint(ev.Iteration), ev.MaxIterations > 0, fmt.Sprint(ev.MaxIterations)))
	line("| cost | %s |", costLine(ev))
}

// mdMilestones writes the Milestones section, one row per milestone; a run
// without milestones has none.
func (r *Report) mdMilestones(line mdLine) {
	if len(r.Milestones) > 0 {
		line("")
		line("## Milestones")
		line("")
		line("| # | goal | status | attempts | outcomes |")
		line("|---|---|---|---|---|")
		for _, m := range r.Milestones {
			line("| %d | %s | %s | %d | %s |", m.Number, mdCell(m.Goal), m.Status, m.Attempts, mdCell(outcomeSummary(m.Outcomes)))
		}
	}
}

// mdCounters writes the Loop counters section.
func (r *Report) mdCounters(line mdLine) {
	c := r.Evidence.Counters
	line("")
	line("## Loop counters")
	line("")
	line("| counter | value |")
	line("|---|---|")
	for _, n := range rulestate.Counts(c) {
		line("| %s | %d |", n.Name, n.Value)
	}
	if edges := edgeList(c.Edges); edges != "" {
		line("| backward edges | %s |", mdCell(edges))
	}
}

// mdEvidence writes the Evidence section: the last failure with the tail of
// its output, the error signatures and the files the stop names. A run with
// none of them has no such section.
func (r *Report) mdEvidence(line mdLine) {
	ev := r.Evidence
	if f := ev.LastFailure; f != nil || len(ev.Signatures) > 0 || len(ev.Files) > 0 {
		line("")
		line("## Evidence")
		line("")
		if f != nil {
			line("Last failure at tick %d (%s): `%s` exited %d.", f.Tick, f.Phase, mdCode(f.Command), f.ExitCode)
			if f.Log != "" {
				line("Full output: `%s`.", f.Log)
			}
			if f.Tail != "" {
				line("")
				line("```")
				line("%s", strings.ReplaceAll(f.Tail, "```", "'''"))
				line("```")
			}
		}
		for _, s := range ev.Signatures {
			line("- signature `%s`: %s, ticks %d-%d", mdCode(s.Signature), stopreasons.Plural(s.Count, "time"), s.FirstTick, s.LastTick)
		}
		if len(ev.Files) > 0 {
			line("- files: %s", mdCell(stopreasons.ShowFiles(ev.Files, ev.FilesOmitted)))
		}
	}
}

// mdOtherRules writes the Other rules section: how close each rule that
// did not fire came to firing.
func (r *Report) mdOtherRules(line mdLine) {
	if len(r.Conditions) > 0 {
		line("")
		line("## Other rules")
		line("")
		line("| rule | progress | message |")
		line("|---|---|---|")
		for _, c := range r.Conditions {
			line("| %s | %.0f%% | %s |", mdCell(c.Name), c.Progress*100, mdCell(c.Message))
		}
	}
}

// mdNext writes the Next section: the hints, then the commands to run.
func (r *Report) mdNext(line mdLine) {
	line("")
	line("## Next")
	line("")
	for _, h := range r.Hints {
		line("- %s", mdEscape(h))
	}
	if len(r.NextActions) > 0 {
		line("")
		line("```sh")
		for _, a := range r.NextActions {
			line("%s", a)
		}
		line("```")
	}
}

// mdWarnings writes the Warnings section: what Diagnose could not read.
func (r *Report) mdWarnings(line mdLine) {
	if len(r.Warnings) > 0 {
		line("")
		line("## Warnings")
		line("")
		for _, w := range r.Warnings {
			line("- %s", mdEscape(w))
		}
	}
}

// mdCell keeps a value inside one table cell on one line.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(mdEscape(s), "|", `\|`)
}

func mdEscape(s string) string {
	// Only "<" can open HTML; "->" in edge names stays readable.
	return strings.ReplaceAll(s, "<", "&lt;")
}

func mdCode(s string) string { return strings.ReplaceAll(s, "`", "'") }
