package report

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// Budget kinds that a resume can grant more of; the Grant follows the kind.
type budgetKind int

const (
	budgetNone budgetKind = iota
	budgetTime
	budgetTicks
	budgetIterations
	budgetCost
)

var budgetOf = map[stopreasons.Code]budgetKind{
	stopreasons.Timeout:        budgetTime,
	stopreasons.MaxTicks:       budgetTicks,
	stopreasons.MaxIterations:  budgetIterations,
	stopreasons.BudgetExceeded: budgetCost,
}

// Defaults granted when the run's own budget is not known (DESIGN §4).
const (
	defaultGrantTime  = 30 * time.Minute
	defaultGrantTicks = 200
)

// details fills the registry's template fields from the run's own figures.
func details(st *state.State, r *Report) stopreasons.Details {
	sr := st.StopReason
	approved, total := progress(st)
	d := stopreasons.Details{
		RunID:     st.RunID,
		Condition: sr.Condition,
		Value:     human(sr.Value),
		Threshold: human(sr.Threshold),
		Message:   sr.Message,
		Tick:      st.Tick,
		Approved:  approved,
		Total:     total,
		Files:     r.Evidence.Files,
		ResetAt:   r.Evidence.ResetAt,
	}
	d.FilesOmitted = r.Evidence.FilesOmitted
	if d.FilesOmitted == 0 {
		// A stash of the listed files alone would leave the others: with
		// files left out, no stash command is offered.
		d.Stash = stashable(st, d.Files)
	}
	sd := stopreasons.StopDetails{}
	if sr.Details != nil {
		sd = *sr.Details
	}
	d.Other, d.Command, d.Signature, d.LimitKind = sd.Other, sd.Command, sd.Signature, sd.LimitKind
	if u := sd.Untested; u != nil {
		untestedDetails(&d, u)
	}
	if f := st.LastFailure; f != nil {
		if d.Command == "" {
			d.Command = f.Command
		}
		if d.Signature == "" {
			d.Signature = f.Signature
		}
	}
	if d.Signature == "" {
		d.Signature = st.LastErrorSignature
	}
	d.Milestone = st.MilestoneIndex + 1
	if sd.Milestone > 0 {
		d.Milestone = sd.Milestone
	}
	d.MilestoneGoal = sd.MilestoneGoal
	if d.MilestoneGoal == "" && d.Milestone >= 1 && d.Milestone <= len(st.Milestones) {
		d.MilestoneGoal = st.Milestones[d.Milestone-1].Goal
	}

	switch budgetOf[sr.Code] {
	case budgetTime:
		// The run's own clock is authoritative; a stop may record raw numbers.
		if _, ok := sr.Value.(string); !ok {
			d.Value = duration(st.ElapsedMS)
		}
		if _, ok := sr.Threshold.(string); !ok && st.Budget.TimeMS > 0 {
			d.Threshold = duration(st.Budget.TimeMS)
		}
		d.Grant = duration(defaultGrantTime.Milliseconds())
		if st.Budget.TimeMS > 0 {
			d.Grant = duration(st.Budget.TimeMS)
		}
	case budgetTicks:
		if d.Threshold == "" && st.Budget.MaxTicks > 0 {
			d.Threshold = strconv.Itoa(st.Budget.MaxTicks)
		}
		d.Grant = strconv.Itoa(defaultGrantTicks)
		if st.Budget.MaxTicks > 0 {
			d.Grant = strconv.Itoa(st.Budget.MaxTicks)
		}
	case budgetIterations:
		if d.Threshold == "" && st.Budget.MaxIterations > 0 {
			d.Threshold = strconv.Itoa(st.Budget.MaxIterations)
		}
		d.Grant = strconv.Itoa(max(st.Budget.MaxIterations, st.Iteration, 1))
	case budgetCost:
		if st.Budget.MaxCostUSD > 0 && !tokenBudget(st) {
			if d.Condition == "" {
				d.Condition = "cost"
			}
			if _, ok := sr.Value.(string); !ok {
				d.Value = usd(st.Usage.CostUSD)
			}
			if _, ok := sr.Threshold.(string); !ok {
				d.Threshold = usd(st.Budget.MaxCostUSD)
			}
			d.Grant = strconv.FormatFloat(st.Budget.MaxCostUSD, 'f', -1, 64)
		} else if d.Condition == "" {
			d.Condition = "token"
		}
	}
	return d
}

// untestedDetails fills the fields of a changes_not_tested stop: the kind,
// the figures as percentages, and each file with the lines not run.
func untestedDetails(d *stopreasons.Details, u *stopreasons.Untested) {
	d.UntestedKind, d.MinChanged = u.Kind, percentOf(u.MinChanged)
	if u.Covered != nil {
		d.Covered = percentOf(*u.Covered)
	}
	for _, f := range u.Uncovered {
		d.Uncovered = append(d.Uncovered, stopreasons.ShowPaths([]string{f.File})+" lines "+f.Lines)
	}
	if u.UncoveredMore > 0 {
		d.Uncovered = append(d.Uncovered, "and "+stopreasons.Count(u.UncoveredMore, "more file", "more files"))
	}
}

// tokenBudget reports whether the spent budget was tokens rather than USD.
func tokenBudget(st *state.State) bool {
	if st.Budget.MaxTokens <= 0 {
		return false
	}
	if strings.Contains(st.StopReason.Condition, "token") {
		return true
	}
	return st.Budget.MaxCostUSD <= 0 || st.Usage.CostUSD < st.Budget.MaxCostUSD
}

// progress counts approved milestones from the milestones themselves, so a
// state whose statistics were not updated still says the right thing.
func progress(st *state.State) (approved, total int) {
	for _, m := range st.Milestones {
		if m.Status == state.MilestoneApproved {
			approved++
		}
	}
	total = len(st.Milestones)
	approved = max(approved, st.Statistics.Approved)
	total = max(total, st.Statistics.TotalMilestones)
	return approved, total
}

// stashable is files without the run's task and config files: runr's
// input, not the agent's change, so no advice stashes them.
func stashable(st *state.State, files []string) []string {
	var out []string
	for _, f := range files {
		if f != st.Task.File && f != st.ConfigFile {
			out = append(out, f)
		}
	}
	return out
}

// percentOf shows a fraction 0..1 as a percentage: 0.375 is "37.5%".
func percentOf(f float64) string {
	return strconv.FormatFloat(math.Round(f*1000)/10, 'f', -1, 64) + "%"
}
