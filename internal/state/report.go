package state

import (
	"cmp"
	"fmt"
	"maps"
	"math"
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

	// The scoreboard (DESIGN §12). Approved counts the approved milestones
	// credited to the row: under --by model and --by agent, each to the
	// model and agent of the attempt that was approved; otherwise to the
	// run's row. FirstAttemptRate is the share of them approved on their
	// first judged attempt; the per-approved figures divide the row's cost
	// and tokens (all four types) by Approved; all three are nil without an
	// approved milestone. UnapprovedCostUSD is what the attempts of
	// milestones not approved when their run stopped cost, each attempt
	// credited to its own model and agent.
	Approved           int      `json:"approved"`
	FirstAttemptRate   *Rate    `json:"first_attempt_rate"`
	CostPerApprovedUSD *USD     `json:"cost_per_approved_usd"`
	TokensPerApproved  *float64 `json:"tokens_per_approved"`
	UnapprovedCostUSD  USD      `json:"unapproved_cost_usd"`
	firstAttempt       int
}

// Score is the scoreboard's figures of a run's milestones for one agent
// and model (DESIGN §12): the milestones whose approved attempt was theirs,
// how many of those were approved on their first judged attempt, and what
// their attempts on milestones not approved cost.
type Score struct {
	Agent             string  `json:"agent"`
	Model             string  `json:"model"`
	Approved          int     `json:"approved"`
	FirstAttempt      int     `json:"first_attempt"`
	UnapprovedCostUSD float64 `json:"unapproved_cost_usd"`
}

// Scores computes the scoreboard's figures from the run's milestones, one
// entry per agent and model, sorted. An attempt whose call was not
// accounted (an older file) counts under the model it asked for, else the
// run's only model, else ModelNone; its agent is the one it names, else the
// run's latest. At most MaxModels models are kept per agent, the rest
// summed up under ModelOther, as usage.models does.
func Scores(st *State) []Score {
	only := ""
	if len(st.Usage.Models) == 1 {
		for k := range st.Usage.Models {
			only = k
		}
	}
	who := func(a *Attempt) (string, string) {
		agent, model := st.Usage.Agent, a.Model
		if a.Agent != nil {
			agent = cmp.Or(a.Agent.Kind, agent)
			if model == "" && a.Agent.Model != "" {
				model = a.Agent.Model
			}
		}
		return ModelKey(agent), ModelKey(cmp.Or(model, only))
	}
	type key struct{ agent, model string }
	byKey := map[key]*Score{}
	models := map[string]int{} // per agent
	entry := func(agent, model string) *Score {
		k := key{agent, model}
		if e := byKey[k]; e != nil {
			return e
		}
		if models[agent] >= MaxModels {
			k.model = ModelOther
			if e := byKey[k]; e != nil {
				return e
			}
		}
		models[agent]++
		e := &Score{Agent: k.agent, Model: k.model}
		byKey[k] = e
		return e
	}
	for i := range st.Milestones {
		m := &st.Milestones[i]
		if m.Status == MilestoneApproved {
			for j := len(m.Attempts) - 1; j >= 0; j-- {
				if a := &m.Attempts[j]; a.Outcome == OutcomeApproved {
					e := entry(who(a))
					e.Approved++
					if m.JudgedAttempts() == 1 {
						e.FirstAttempt++
					}
					break
				}
			}
			continue
		}
		for j := range m.Attempts {
			if a := &m.Attempts[j]; a.CostUSD > 0 {
				entry(who(a)).UnapprovedCostUSD += a.CostUSD
			}
		}
		// Attempts older than those listed are summed up without their
		// agent: they count under the oldest listed one's.
		if e := m.Earlier; e != nil && e.CostUSD > 0 {
			agent, model := ModelKey(st.Usage.Agent), ModelKey(only)
			if len(m.Attempts) > 0 {
				agent, model = who(&m.Attempts[0])
			}
			entry(agent, model).UnapprovedCostUSD += e.CostUSD
		}
	}
	out := make([]Score, 0, len(byKey))
	for _, e := range byKey {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b Score) int { return cmp.Or(cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.Model, b.Model)) })
	return out
}

// impossibleScores names the first figure of scores no runr could have
// written, or returns "".
func impossibleScores(scores []Score) string {
	for i, e := range scores {
		switch {
		case e.Approved < 0 || e.FirstAttempt < 0 || e.FirstAttempt > e.Approved:
			return fmt.Sprintf("scores[%d]: approved %d, first_attempt %d", i, e.Approved, e.FirstAttempt)
		case !(e.UnapprovedCostUSD >= 0) || math.IsInf(e.UnapprovedCostUSD, 0):
			return fmt.Sprintf("scores[%d].unapproved_cost_usd %g is not a cost", i, e.UnapprovedCostUSD)
		case len(e.Agent) > MaxModelBytes || len(e.Model) > MaxModelBytes:
			return fmt.Sprintf("scores[%d]: a name longer than %d bytes", i, MaxModelBytes)
		}
	}
	if len(scores) > 4*(MaxModels+1) {
		return fmt.Sprintf("scores has %d entries, more than runr keeps", len(scores))
	}
	return ""
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
		rep.Total.addScores(sum.Scores)
		for _, sc := range sum.Scores {
			switch by {
			case ByModel:
				group(sc.Model).addScores([]Score{sc})
			case ByAgent:
				group(sc.Agent).addScores([]Score{sc})
			case "":
			default:
				group(ReportGroup(sum, by)).addScores([]Score{sc})
			}
		}
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

func (r *ReportRow) addScores(scores []Score) {
	for _, sc := range scores {
		r.Approved += sc.Approved
		r.firstAttempt += sc.FirstAttempt
		r.UnapprovedCostUSD += USD(sc.UnapprovedCostUSD)
	}
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
	if r.Approved > 0 {
		n := float64(r.Approved)
		first, cost := Rate(float64(r.firstAttempt)/n), r.CostUSD/USD(n)
		// A mean of whole tokens: a tenth is all the precision it has, in
		// every format.
		tokens := math.Round(float64(r.InputTokens+r.CacheReadTokens+r.CacheWriteTokens+r.OutputTokens)/n*10) / 10
		r.FirstAttemptRate, r.CostPerApprovedUSD, r.TokensPerApproved = &first, &cost, &tokens
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
