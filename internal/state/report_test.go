package state

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// reportRuns are four runs: two days, two agents, three models.
func reportRuns() []*Summary {
	day1 := time.Date(2026, 11, 20, 23, 30, 0, 0, time.UTC)
	day2 := time.Date(2026, 11, 21, 0, 30, 0, 0, time.FixedZone("CET", 3600)) // 2026-11-20 23:30 UTC
	day3 := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	var a, b, c, d Usage
	a.AddCall(Call{Agent: "claude", Model: "sonnet", InputTokens: 100, CacheReadTokens: 1000, OutputTokens: 10, CostReportedUSD: 0.5, CostEstimatedUSD: 0.25, CostSource: CostReported})
	a.AddCall(Call{Agent: "claude", Model: "opus", InputTokens: 200, CacheWriteTokens: 40, OutputTokens: 20, CostReportedUSD: 1, CostEstimatedUSD: 1, CostSource: CostReported})
	b.AddCall(Call{Agent: "claude", Model: "sonnet", InputTokens: 300, OutputTokens: 30, CostReportedUSD: 0.25, CostSource: CostReported})
	c.AddCall(Call{Agent: "command", Model: "local", InputTokens: 1000, OutputTokens: 100, CostEstimatedUSD: 0.125, CostSource: CostEstimated})
	c.AddCall(Call{Agent: "command", Model: "local", InputTokens: 1000, OutputTokens: 100, CostEstimatedUSD: 0.125, CostSource: CostEstimated})
	return []*Summary{
		{RunID: "a", RunStatus: stopreasons.RunCompleted, CreatedAt: day1, ElapsedMS: 60000, Approved: 2, Milestones: 2, Stop: stopreasons.Complete, Usage: a},
		{RunID: "b", RunStatus: stopreasons.RunStopped, CreatedAt: day2, ElapsedMS: 30000, Approved: 1, Milestones: 3, Stop: stopreasons.VerificationFailed, Usage: b},
		{RunID: "c", RunStatus: stopreasons.RunCompleted, CreatedAt: day3, ElapsedMS: 1000, Approved: 1, Milestones: 1, Stop: stopreasons.Complete, Usage: c},
		{RunID: "d", RunStatus: stopreasons.RunCrashed, CreatedAt: day3, ElapsedMS: 500, Milestones: 4, Usage: d},
	}
}

func ptr(f float64) *float64 { return &f }

func usdPtr(f USD) *USD { return &f }

func TestBuildReportTotal(t *testing.T) {
	rep := BuildReport(reportRuns(), "")
	assert.Empty(t, rep.Rows)
	assert.Equal(t, ReportRow{Key: ReportAll, Runs: 4, Completed: 2, CompletedShare: 0.5,
		StopReasons:        map[string]int{"complete": 2, "verification_failed": 1, "(crashed)": 1},
		MilestonesApproved: 4, MilestonesTotal: 10, Calls: 5,
		InputTokens: 2600, CacheReadTokens: 1000, CacheWriteTokens: 40, OutputTokens: 260,
		CostUSD: 2, CostSource: CostMixed, ElapsedMS: 91500, CostPerApprovedMilestoneUSD: usdPtr(0.5)}, rep.Total)
	assert.Equal(t, []string{"complete 2", "(crashed) 1", "verification_failed 1"}, rep.Total.StopReasonList())
}

func TestBuildReportGroups(t *testing.T) {
	keys := func(rows []ReportRow) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.Key)
		}
		return out
	}
	byKey := func(rows []ReportRow, key string) ReportRow {
		for _, r := range rows {
			if r.Key == key {
				return r
			}
		}
		t.Fatalf("no row %s in %v", key, keys(rows))
		return ReportRow{}
	}

	rep := BuildReport(reportRuns(), ByModel)
	assert.Equal(t, []string{"opus", "sonnet", "local", ModelNone}, keys(rep.Rows), "the costliest first")
	sonnet := byKey(rep.Rows, "sonnet")
	assert.Equal(t, 2, sonnet.Runs, "runs a and b used sonnet")
	assert.Equal(t, 2, sonnet.Calls)
	assert.Equal(t, int64(400), sonnet.InputTokens)
	assert.Equal(t, int64(1000), sonnet.CacheReadTokens)
	assert.Equal(t, USD(0.75), sonnet.CostUSD, "sonnet's own cost, not its runs'")
	assert.Equal(t, 3, sonnet.MilestonesApproved)
	assert.Equal(t, USD(0.25), *sonnet.CostPerApprovedMilestoneUSD)
	assert.Equal(t, CostReported, sonnet.CostSource)
	local := byKey(rep.Rows, "local")
	assert.Equal(t, CostEstimated, local.CostSource)
	assert.Equal(t, USD(0.25), local.CostUSD)
	none := byKey(rep.Rows, ModelNone)
	assert.Equal(t, 1, none.Runs, "a run without a call")
	assert.Nil(t, none.CostPerApprovedMilestoneUSD)
	assert.Equal(t, "", none.CostSource)
	assert.Equal(t, 4, rep.Total.Runs, "the total is over runs, not rows")

	rep = BuildReport(reportRuns(), ByAgent)
	assert.Equal(t, []string{"claude", "command", ModelNone}, keys(rep.Rows))
	assert.Equal(t, USD(1.75), rep.Rows[0].CostUSD)
	assert.Equal(t, 2, rep.Rows[0].Runs)

	rep = BuildReport(reportRuns(), ByReason)
	assert.Equal(t, []string{"complete", "verification_failed", "(crashed)"}, keys(rep.Rows))
	assert.Equal(t, 2, rep.Rows[0].Runs)
	assert.Equal(t, Rate(1), rep.Rows[0].CompletedShare)
	assert.Equal(t, map[string]int{"(crashed)": 1}, rep.Rows[2].StopReasons)

	rep = BuildReport(reportRuns(), ByDay)
	assert.Equal(t, []string{"2026-11-20", "2026-11-22"}, keys(rep.Rows), "days in UTC, oldest first")
	assert.Equal(t, 2, rep.Rows[0].Runs)
	assert.Equal(t, int64(90000), rep.Rows[0].ElapsedMS)
}

func TestBuildReportOfNoRuns(t *testing.T) {
	for _, by := range append([]string{""}, ReportGroupings...) {
		rep := BuildReport(nil, by)
		require.NotNil(t, rep.Rows)
		assert.Empty(t, rep.Rows)
		assert.Equal(t, 0, rep.Total.Runs)
		assert.Equal(t, Rate(0), rep.Total.CompletedShare)
		assert.Nil(t, rep.Total.CostPerApprovedMilestoneUSD)
		assert.NotNil(t, rep.Total.StopReasons)
	}
}

// A run recorded before per-model totals existed counts with its usage
// totals, under (none) by model.
func TestBuildReportOfAnOldRun(t *testing.T) {
	old := &Summary{RunID: "o", RunStatus: stopreasons.RunCompleted, Stop: stopreasons.Complete, Approved: 1, Milestones: 1,
		Usage: Usage{CostUSD: 0.5, CostEstimated: true, InputTokens: 10, OutputTokens: 5}}
	rep := BuildReport([]*Summary{old}, ByModel)
	require.Len(t, rep.Rows, 1)
	assert.Equal(t, ModelNone, rep.Rows[0].Key)
	assert.Equal(t, USD(0.5), rep.Rows[0].CostUSD)
	assert.Equal(t, CostEstimated, rep.Rows[0].CostSource)
	assert.Equal(t, int64(10), rep.Total.InputTokens)
}

// Money and rates are written at one fixed precision, without the noise of
// floating-point sums, in JSON as in CSV (both use String).
func TestReportFiguresHaveAFixedPrecision(t *testing.T) {
	for _, tt := range []struct {
		v    USD
		want string
	}{{0.01 + 0.05, "0.06"}, {0, "0"}, {1.5, "1.5"}, {0.0000004, "0"}, {0.0000006, "0.000001"}, {-0.0000001, "0"}, {12.3456789, "12.345679"}} {
		assert.Equal(t, tt.want, tt.v.String(), "%v", float64(tt.v))
		b, err := json.Marshal(tt.v)
		require.NoError(t, err)
		assert.Equal(t, tt.want, string(b))
	}
	for _, tt := range []struct {
		v    Rate
		want string
	}{{1.0 / 3, "0.3333"}, {0.6, "0.6"}, {0.1 + 0.2, "0.3"}, {1, "1"}} {
		assert.Equal(t, tt.want, tt.v.String(), "%v", float64(tt.v))
	}
	assert.Equal(t, "33%", Rate(1.0/3).Percent())
	assert.Equal(t, "$0.06", (USD(0.01) + USD(0.05)).Human())
	assert.Equal(t, "$0.0042", USD(0.0042).Human())
}

// Scores credits an approved milestone to its approved attempt's agent and
// model, and the attempts of milestones not approved (those older than
// state.json lists, too) to theirs; an attempt of an older file, with no
// model of its call, counts under the model it asked for, else the run's
// only model.
func TestScores(t *testing.T) {
	claude := &AgentRef{Kind: "claude", Model: "opus"}
	codex := &AgentRef{Kind: "codex"}
	st := &State{Usage: Usage{Agent: "codex", Models: map[string]*ModelUsage{"gpt-5": {Calls: 4, CostSource: CostReported}}}, Milestones: []Milestone{
		{Status: MilestoneApproved, Attempts: []Attempt{{Outcome: OutcomeApproved, Agent: claude, Model: "claude-opus-5", CostUSD: 1}}},
		{Status: MilestoneApproved, Attempts: []Attempt{
			{Outcome: OutcomeFailed, Agent: claude, Model: "claude-opus-5", CostUSD: 2},
			{Outcome: OutcomeIncomplete, Agent: codex, Model: "gpt-5", CostUSD: 3},
			{Outcome: OutcomeApproved, Agent: codex, CostUSD: 4}}},
		{Status: MilestoneFailed, Earlier: &EarlierAttempts{Count: 5, CostUSD: 8}, Attempts: []Attempt{
			{Outcome: OutcomeFailed, Agent: claude, CostUSD: 16},
			{Outcome: OutcomeStopped, Agent: codex, Model: "gpt-5", CostUSD: 32}}},
		{Status: MilestonePending},
	}}
	got := Scores(st)
	assert.Equal(t, []Score{
		{Agent: "claude", Model: "claude-opus-5", Approved: 1, FirstAttempt: 1},
		{Agent: "claude", Model: "opus", UnapprovedCostUSD: 16 + 8},
		{Agent: "codex", Model: "gpt-5", Approved: 1, UnapprovedCostUSD: 32},
	}, got)

	rep := BuildReport([]*Summary{{RunID: "r", Usage: st.Usage, Scores: got}}, ByAgent)
	rows := map[string]ReportRow{}
	for _, r := range rep.Rows {
		rows[r.Key] = r
	}
	assert.Equal(t, 1, rows["claude"].Approved)
	assert.Equal(t, USD(24), rows["claude"].UnapprovedCostUSD)
	assert.Equal(t, 1, rows["codex"].Approved)
	assert.Equal(t, USD(32), rows["codex"].UnapprovedCostUSD)
	require.NotNil(t, rep.Total.FirstAttemptRate)
	assert.Equal(t, Rate(0.5), *rep.Total.FirstAttemptRate)
	assert.Equal(t, USD(56), rep.Total.UnapprovedCostUSD)

	// Saved, the scores are in the head of state.json, and the summary
	// reads them; a file without them (an older runr's) gets them from its
	// milestones.
	store := boundStore(t)
	saved := newState("scores")
	require.NoError(t, os.MkdirAll(store.RunDir(saved.RunID), 0o755))
	saved.Usage, saved.Milestones, saved.CreatedAt = st.Usage, st.Milestones, time.Now()
	st = saved
	require.NoError(t, store.Save(st))
	sum, err := store.Summary(st.RunID)
	require.NoError(t, err)
	assert.Equal(t, got, sum.Scores)
	data, err := os.ReadFile(store.StatePath(st.RunID))
	require.NoError(t, err)
	old := strings.Replace(string(data), `"scores":`, `"x_scores":`, 1)
	require.NoError(t, os.WriteFile(store.StatePath(st.RunID), []byte(old), 0o644))
	sum, err = store.Summary(st.RunID)
	require.NoError(t, err)
	assert.Equal(t, got, sum.Scores)
}
