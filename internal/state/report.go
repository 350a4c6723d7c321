package state

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// Groupings of `runr report --by`.
const (
	ByModel  = "model"
	ByAgent  = "agent"
	ByReason = "reason"
	ByDay    = "day"
)

// ReportGroupings are the values --by takes.
var ReportGroupings = []string{ByModel, ByAgent, ByReason, ByDay}

// ReportAll is the key of the row of all runs.
const ReportAll = "all"

// ReportRow sums up a set of runs (all of them, or one group of --by).
type ReportRow struct {
	Key            string `json:"key"`
	Runs           int    `json:"runs"`
	Completed      int    `json:"completed"`
	CompletedShare Rate   `json:"completed_share"` // completed / runs, 0..1
	// StopReasons counts the runs by stop reason; a run without one is
	// counted under its status in parentheses: (running), (crashed).
	StopReasons        map[string]int `json:"stop_reasons"`
	MilestonesApproved int            `json:"milestones_approved"`
	MilestonesTotal    int            `json:"milestones_total"`
	Calls              int            `json:"calls"`
	InputTokens        int64          `json:"input_tokens"`
	CacheReadTokens    int64          `json:"cache_read_tokens"`
	CacheWriteTokens   int64          `json:"cache_write_tokens"`
	OutputTokens       int64          `json:"output_tokens"`
	CostUSD            USD            `json:"cost_usd"`
	// CostSource is where the cost came from: reported, estimated,
	// unknown, mixed, or "" when no call is recorded.
	CostSource string `json:"cost_source"`
	ElapsedMS  int64  `json:"elapsed_ms"`
	// CostPerApprovedMilestoneUSD is CostUSD / MilestonesApproved; nil
	// without an approved milestone.
	CostPerApprovedMilestoneUSD *USD `json:"cost_per_approved_milestone_usd"`
}

// Report is `runr report`: the runs' totals and, with a grouping, a row
// per group.
type Report struct {
	By    string      `json:"by,omitempty"`
	Since *time.Time  `json:"since,omitempty"`
	Total ReportRow   `json:"total"`
	Rows  []ReportRow `json:"rows"`
}

// ReportGroup is the key of a run's group under grouping by, for every
// grouping but ByModel (whose groups are the models of a run's calls).
func ReportGroup(sum *Summary, by string) string {
	switch by {
	case ByAgent:
		return cmp.Or(sum.Usage.Agent, ModelNone)
	case ByReason:
		if sum.Stop != "" {
			return string(sum.Stop)
		}
		return "(" + cmp.Or(sum.RunStatus, "unknown") + ")"
	case ByDay:
		return sum.CreatedAt.UTC().Format(time.DateOnly)
	}
	return ReportAll
}

// BuildReport sums up the runs sums, grouped by by ("" for no grouping).
// A summary's RunStatus is the status to count (Store.LiveStatus: a run
// whose runr is gone is crashed). With ByModel, a run counts in the row of
// each model its calls used (runs, milestones, stop reasons and elapsed
// time are the run's), and a row's calls, tokens and cost are that model's
// own; a run with no recorded call counts under (none). The total is over
// the runs, never a sum of the rows.
func BuildReport(sums []*Summary, by string) Report {
	rep := Report{By: by, Total: ReportRow{Key: ReportAll}, Rows: []ReportRow{}}
	groups := map[string]*ReportRow{}
	group := func(key string) *ReportRow {
		r := groups[key]
		if r == nil {
			r = &ReportRow{Key: key}
			groups[key] = r
		}
		return r
	}
	for _, sum := range sums {
		rep.Total.addRun(sum)
		rep.Total.addUsage(runUsage(sum.Usage))
		switch by {
		case "":
		case ByModel:
			if len(sum.Usage.Models) == 0 {
				r := group(ModelNone)
				r.addRun(sum)
				r.addUsage(runUsage(sum.Usage))
			}
			for _, k := range slices.Sorted(maps.Keys(sum.Usage.Models)) {
				r := group(k)
				r.addRun(sum)
				r.addUsage(*sum.Usage.Models[k])
			}
		default:
			r := group(ReportGroup(sum, by))
			r.addRun(sum)
			r.addUsage(runUsage(sum.Usage))
		}
	}
	rep.Total.finish()
	for _, r := range groups {
		r.finish()
		rep.Rows = append(rep.Rows, *r)
	}
	slices.SortFunc(rep.Rows, func(a, b ReportRow) int {
		if by == ByDay {
			return cmp.Compare(a.Key, b.Key)
		}
		return cmp.Or(cmp.Compare(b.CostUSD, a.CostUSD), cmp.Compare(b.Runs, a.Runs), cmp.Compare(a.Key, b.Key))
	})
	return rep
}

// runUsage is the run's usage as one total: its tokens and cost are the
// run's totals (which also hold what a call in flight had used when its
// runr was killed, recovered on resume), its calls and cost source those
// of its per-model totals.
func runUsage(u Usage) ModelUsage {
	var m ModelUsage
	for _, k := range slices.Sorted(maps.Keys(u.Models)) {
		m.Add(*u.Models[k])
	}
	if len(u.Models) == 0 && u.CostEstimated {
		m.CostSource = CostEstimated
	}
	m.InputTokens, m.CacheReadTokens, m.CacheWriteTokens, m.OutputTokens = u.InputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.OutputTokens
	m.CostUSD = u.CostUSD
	return m
}

func (r *ReportRow) addRun(sum *Summary) {
	r.Runs++
	if sum.RunStatus == stopreasons.RunCompleted {
		r.Completed++
	}
	if r.StopReasons == nil {
		r.StopReasons = map[string]int{}
	}
	r.StopReasons[ReportGroup(sum, ByReason)]++
	r.MilestonesApproved += sum.Approved
	r.MilestonesTotal += sum.Milestones
	r.ElapsedMS += sum.ElapsedMS
}

func (r *ReportRow) addUsage(m ModelUsage) {
	switch {
	case m.CostSource == "":
	case r.CostSource == "":
		r.CostSource = m.CostSource
	case r.CostSource != m.CostSource:
		r.CostSource = CostMixed
	}
	r.Calls += m.Calls
	r.InputTokens += m.InputTokens
	r.CacheReadTokens += m.CacheReadTokens
	r.CacheWriteTokens += m.CacheWriteTokens
	r.OutputTokens += m.OutputTokens
	r.CostUSD += USD(m.CostUSD)
}

func (r *ReportRow) finish() {
	if r.StopReasons == nil {
		r.StopReasons = map[string]int{}
	}
	if r.Runs > 0 {
		r.CompletedShare = Rate(float64(r.Completed) / float64(r.Runs))
	}
	if r.MilestonesApproved > 0 {
		per := r.CostUSD / USD(r.MilestonesApproved)
		r.CostPerApprovedMilestoneUSD = &per
	}
}

// StopReasonList is the row's stop reasons as "code n" items, the most
// frequent first.
func (r ReportRow) StopReasonList() []string {
	keys := slices.SortedFunc(maps.Keys(r.StopReasons), func(a, b string) int {
		return cmp.Or(cmp.Compare(r.StopReasons[b], r.StopReasons[a]), cmp.Compare(a, b))
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s %d", k, r.StopReasons[k])
	}
	return out
}
