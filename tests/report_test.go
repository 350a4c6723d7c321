package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
)

// ledger is the cost ledger of the run in runDir: the data of its
// agent_call events, in order.
func ledger(t *testing.T, runDir string) []map[string]any {
	t.Helper()
	var calls []map[string]any
	for _, ev := range timelineEvents(t, runDir) {
		if ev["type"] == (state.AgentCallEvent{}).EventType() {
			data, _ := ev["data"].(map[string]any)
			require.NotNil(t, data, "an agent_call event has data: %v", ev)
			calls = append(calls, data)
		}
	}
	return calls
}

// ledgerFields are the fields every agent_call event holds (DESIGN §12).
var ledgerFields = []string{"agent", "model", "input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens",
	"cost_reported_usd", "cost_estimated_usd", "cost_source", "duration_ms"}

func checkLedgerFields(t *testing.T, calls []map[string]any) {
	t.Helper()
	for _, c := range calls {
		for _, f := range ledgerFields {
			assert.Contains(t, c, f, "agent_call %v", c)
		}
		assert.GreaterOrEqual(t, c["duration_ms"], 0.0)
	}
}

// A Claude Code run replayed from its recordings records each call's
// tokens and reported cost in the ledger, with the estimate at agent.price
// beside it, and the model's totals in state.json.
func TestLedgerOfAClaudeRun(t *testing.T) {
	repo := newRepo(t)
	r := runClaude(t, repo, []string{"IS_SANDBOX=1", "RUNR_AGENT_PRICE_INPUT_PER_MTOK=3", "RUNR_AGENT_PRICE_OUTPUT_PER_MTOK=15",
		"FAKEAGENT_REPLAY=" + recording(t, "overloaded_529"), "FAKEAGENT_EXIT=1",
		"FAKEAGENT_REPLAY_2=" + recording(t, "success_promise"), "FAKEAGENT_EXIT_2=0"},
		"--prompt", "write hello.txt")
	require.Equal(t, 0, r.exit, "stderr: %s", r.stderr)
	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	calls := ledger(t, dir)
	require.Len(t, calls, 2, "one event per call, the failed one included")
	checkLedgerFields(t, calls)
	last := calls[1]
	assert.Equal(t, "claude", last["agent"])
	assert.Equal(t, "claude-opus-5-5", last["model"], "the model the stream named")
	assert.Equal(t, 100.0, last["input_tokens"])
	assert.Equal(t, 50.0, last["output_tokens"])
	assert.Equal(t, 0.0, last["cache_read_tokens"])
	assert.Equal(t, "reported", last["cost_source"])
	assert.InDelta(t, 0.0014, last["cost_reported_usd"], 1e-12)
	assert.InDelta(t, (100*3+50*15)/1e6, last["cost_estimated_usd"], 1e-12, "estimated at agent.price although the CLI reported a cost")
	assert.Equal(t, "reported", calls[0]["cost_source"])
	assert.Equal(t, "claude-opus-5-5", calls[0]["model"], "the init's model, not the <synthetic> of Claude Code's own error message")

	m := r.st.Usage.Models["claude-opus-5-5"]
	require.NotNil(t, m, "usage.models: %v", r.st.Usage.Models)
	assert.Equal(t, 2, m.Calls)
	assert.Equal(t, "reported", m.CostSource)
	assert.InDelta(t, 0.0014+calls[0]["cost_reported_usd"].(float64), m.CostUSD, 1e-12)
	assert.InDelta(t, r.st.Usage.CostUSD, m.CostUSD, 1e-12)
	assert.Equal(t, "claude", r.st.Usage.Agent)
}

// A command agent with agent.price and RUNR_USAGE lines records an
// estimated cost; a call stopped mid-way by a budget records what it had
// used.
func TestLedgerOfACommandAgent(t *testing.T) {
	repo := newRepo(t)
	price := []string{"RUNR_AGENT_PRICE_INPUT_PER_MTOK=2", "RUNR_AGENT_PRICE_OUTPUT_PER_MTOK=8"}
	p := startRunr(t, repo, price, "run", "--prompt", "work", "--time", "5m", "--",
		"fakeagent", "--do", "usage 400 40; print RUNR_USAGE: input_tokens=1000 output_tokens=100 model=local-coder; status done")
	require.Equal(t, 0, p.wait(t, 3*time.Minute), "stderr: %s", &p.stderr)
	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	calls := ledger(t, dir)
	require.Len(t, calls, 1)
	checkLedgerFields(t, calls)
	c := calls[0]
	assert.Equal(t, "command", c["agent"])
	assert.Equal(t, "local-coder", c["model"])
	assert.Equal(t, 1000.0, c["input_tokens"], "the last RUNR_USAGE line holds the call's totals")
	assert.Equal(t, 100.0, c["output_tokens"])
	assert.Equal(t, "estimated", c["cost_source"])
	assert.Equal(t, 0.0, c["cost_reported_usd"])
	assert.InDelta(t, (1000*2+100*8)/1e6, c["cost_estimated_usd"], 1e-12)
	st := runState(t, repo)
	require.Contains(t, st.Usage.Models, "local-coder")
	assert.Equal(t, state.ModelUsage{Calls: 1, InputTokens: 1000, OutputTokens: 100, CostUSD: c["cost_estimated_usd"].(float64),
		CostEstimatedUSD: c["cost_estimated_usd"].(float64), CostSource: "estimated"}, *st.Usage.Models["local-coder"])

	// Stopped mid-call by budget.max_tokens: the usage so far.
	repo = newRepo(t)
	p = startRunr(t, repo, append(price, "RUNR_BUDGET_MAX_TOKENS=1000"), "run", "--prompt", "work", "--time", "5m", "--",
		"fakeagent", "--do", "usage 400 100; usage 800 300; ready; hang")
	require.Equal(t, 127, p.wait(t, 3*time.Minute), "stderr: %s", &p.stderr)
	dir, err = latestRunDir(repo)
	require.NoError(t, err)
	calls = ledger(t, dir)
	require.Len(t, calls, 1)
	assert.Equal(t, 800.0, calls[0]["input_tokens"])
	assert.Equal(t, 300.0, calls[0]["output_tokens"])
	assert.Equal(t, "", calls[0]["model"], "no model named, no agent.model")
	assert.Equal(t, "estimated", calls[0]["cost_source"])
	st = runState(t, repo)
	assert.Equal(t, 1, st.Usage.Models[state.ModelNone].Calls)
}

// `runr report --by model --format json` sums the ledgers of several runs:
// claude runs (reported cost), command agents (estimated, reported, and
// unknown), checked against the agent_call events of every run.
func TestReportSumsTheLedgers(t *testing.T) {
	repo := newRepo(t)
	r := runClaude(t, repo, []string{"IS_SANDBOX=1", "FAKEAGENT_REPLAY=" + recording(t, "success_promise")}, "--prompt", "write hello.txt")
	require.Equal(t, 0, r.exit, "stderr: %s", r.stderr)
	r = runClaude(t, repo, []string{"IS_SANDBOX=1", "FAKEAGENT_REPLAY=" + recording(t, "tool_write"), "RUNR_AGENT_PRICE_INPUT_PER_MTOK=3"},
		"--prompt", "write hello.txt", "--verify", "true")
	require.Equal(t, 0, r.exit, "stderr: %s", r.stderr)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "TASK.md"), []byte("# Two\n- [ ] one\n- [ ] two\n"), 0o644))
	for _, run := range []struct {
		env  []string
		args []string
		exit int
	}{
		{[]string{"RUNR_AGENT_PRICE_INPUT_PER_MTOK=2", "RUNR_AGENT_PRICE_OUTPUT_PER_MTOK=8"},
			[]string{"--task", "TASK.md", "--allow-dirty", "--", "fakeagent", "--do", "print RUNR_USAGE: input_tokens=1000 output_tokens=100 model=local-coder; status done"}, 0},
		{nil, []string{"--task", "TASK.md", "--allow-dirty", "--", "fakeagent", "--do", "m1: usage 500 50 0.25 local-coder; status done", "--do", "m2: usage 70 7; status failed"}, 31},
		{nil, []string{"--prompt", "x", "--allow-dirty", "--", "fakeagent", "--do", "status blocked no key"}, 30},
	} {
		args := append([]string{"run", "--time", "5m", "--quiet"}, run.args...)
		p := startRunr(t, repo, append(run.env, "RUNR_STOP_MAX_MILESTONE_RETRIES=1"), args...)
		require.Equal(t, run.exit, p.wait(t, 3*time.Minute), "%v\nstderr: %s", run.args, &p.stderr)
	}

	// The sums of the ledgers, per model.
	type sums struct {
		runs, calls              int
		input, cacheRead, output float64
		cost                     float64
		sources                  map[string]bool
	}
	want := map[string]*sums{}
	runs, err := filepath.Glob(filepath.Join(repo, ".git", "runr", "runs", "*"))
	require.NoError(t, err)
	require.Len(t, runs, 5)
	totalCost, totalCalls := 0.0, 0
	for _, dir := range runs {
		seen := map[string]bool{}
		for _, c := range ledger(t, dir) {
			model := c["model"].(string)
			if model == "" {
				model = state.ModelNone
			}
			s := want[model]
			if s == nil {
				s = &sums{sources: map[string]bool{}}
				want[model] = s
			}
			if !seen[model] {
				seen[model] = true
				s.runs++
			}
			s.calls++
			s.input += c["input_tokens"].(float64)
			s.cacheRead += c["cache_read_tokens"].(float64)
			s.output += c["output_tokens"].(float64)
			switch c["cost_source"] {
			case "reported":
				s.cost += c["cost_reported_usd"].(float64)
			case "estimated":
				s.cost += c["cost_estimated_usd"].(float64)
			}
			s.sources[c["cost_source"].(string)] = true
			totalCalls++
		}
	}
	for _, s := range want {
		totalCost += s.cost
	}
	require.Contains(t, want, "claude-opus-5-5")
	require.Contains(t, want, "local-coder")
	require.Contains(t, want, state.ModelNone)
	assert.Len(t, want["local-coder"].sources, 2, "local-coder's calls were estimated and reported")

	code, stdout, stderr := runrOut(t, repo, "report", "--by", "model", "--format", "json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	var rep state.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	assert.Equal(t, "model", rep.By)
	require.Len(t, rep.Rows, len(want), "a row per model of the ledgers: %s", stdout)
	for _, row := range rep.Rows {
		s := want[row.Key]
		require.NotNil(t, s, "row %s is no model of the ledgers", row.Key)
		assert.Equal(t, s.runs, row.Runs, row.Key)
		assert.Equal(t, s.calls, row.Calls, row.Key)
		assert.Equal(t, int64(s.input), row.InputTokens, row.Key)
		assert.Equal(t, int64(s.cacheRead), row.CacheReadTokens, row.Key)
		assert.Equal(t, int64(s.output), row.OutputTokens, row.Key)
		assert.InDelta(t, s.cost, float64(row.CostUSD), 1e-6, row.Key)
		if len(s.sources) == 1 {
			for src := range s.sources {
				assert.Equal(t, src, row.CostSource, row.Key)
			}
		} else {
			assert.Equal(t, state.CostMixed, row.CostSource, row.Key)
		}
	}
	assert.Equal(t, 5, rep.Total.Runs)
	assert.Equal(t, 3, rep.Total.Completed)
	assert.Equal(t, state.Rate(0.6), rep.Total.CompletedShare)
	assert.Equal(t, map[string]int{"complete": 3, "worker_failed": 1, "worker_blocked": 1}, rep.Total.StopReasons)
	assert.Equal(t, totalCalls, rep.Total.Calls)
	assert.InDelta(t, totalCost, float64(rep.Total.CostUSD), 1e-6)
	assert.Equal(t, 5, rep.Total.MilestonesApproved, "1 + 1 + 2 + 1 + 0")
	require.NotNil(t, rep.Total.CostPerApprovedMilestoneUSD)
	assert.InDelta(t, totalCost/5, float64(*rep.Total.CostPerApprovedMilestoneUSD), 1e-6)

	// By agent: the same calls, the same cost.
	code, stdout, stderr = runrOut(t, repo, "report", "--by", "agent", "--format", "json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	rep = state.Report{}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	byAgent := map[string]state.ReportRow{}
	for _, row := range rep.Rows {
		byAgent[row.Key] = row
	}
	require.Len(t, byAgent, 2, stdout)
	assert.Equal(t, 2, byAgent["claude"].Runs)
	assert.Equal(t, 3, byAgent["command"].Runs)
	assert.InDelta(t, want["claude-opus-5-5"].cost, float64(byAgent["claude"].CostUSD), 1e-6)
	assert.InDelta(t, totalCost, float64(byAgent["claude"].CostUSD+byAgent["command"].CostUSD), 2e-6)
}
