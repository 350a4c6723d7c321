package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
)

// Three runs made in three clones, by two agents (a Claude Code run replayed
// from its recording, two command agents) and over three models:
//
//   - c1, claude: one milestone, approved on its first attempt, $0.0014
//     (the recording's reported cost) on claude-opus-5-5;
//   - c2, command: two milestones on m-b; milestone 1 fails its verify once
//     ($0.5) and is approved on its second attempt ($0.25), milestone 2 is
//     approved on its first ($0.125);
//   - c3, command: milestone 1 approved on its first attempt on m-a ($1),
//     milestone 2 blocked on m-b ($0.0625), so the run stops with it not
//     approved.
//
// `runr report --store c1 --store c2 --store c3` is the report of one store
// holding the three runs, in every format and grouping; its scoreboard holds
// the figures computed by hand below.
func TestReportOverStoresAndScoreboard(t *testing.T) {
	parent := t.TempDir()
	clone := func(name string) string {
		dir := filepath.Join(parent, name)
		require.NoError(t, os.Mkdir(dir, 0o755))
		for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "initial"}} {
			cmd := exec.Command("git", a...)
			cmd.Dir = dir
			cmd.Env = testEnv(dir)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "git %v: %s", a, out)
		}
		return dir
	}
	c1, c2, c3 := clone("c1"), clone("c2"), clone("c3")

	r := runClaude(t, c1, []string{"IS_SANDBOX=1", "FAKEAGENT_REPLAY=" + recording(t, "success_promise")}, "--prompt", "write hello.txt")
	require.Equal(t, 0, r.exit, "stderr: %s", r.stderr)

	task := []byte("- [ ] one\n- [ ] two\n")
	for _, dir := range []string{c2, c3} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "TASK.md"), task, 0o644))
	}
	p := startRunr(t, c2, nil, "run", "--quiet", "--time", "5m", "--task", "TASK.md", "--verify", "test ! -f bad", "--",
		"fakeagent", "--do", "#1: write bad x; usage 100 10 0.5 m-b; status done",
		"--do", "#2: delete bad; usage 100 10 0.25 m-b; status done",
		"--do", "#3: write two.txt 2; usage 200 20 0.125 m-b; status done")
	require.Equal(t, 0, p.wait(t, 3*time.Minute), "stderr: %s", &p.stderr)
	p = startRunr(t, c3, nil, "run", "--quiet", "--time", "5m", "--task", "TASK.md", "--",
		"fakeagent", "--do", "m1: write one.txt 1; usage 300 30 1 m-a; status done",
		"--do", "m2: usage 100 10 0.0625 m-b; status blocked no access")
	require.Equal(t, 30, p.wait(t, 3*time.Minute), "stderr: %s", &p.stderr)

	// One store holding the three runs.
	combined := filepath.Join(t.TempDir(), "store")
	require.NoError(t, os.MkdirAll(filepath.Join(combined, "runs"), 0o755))
	for _, dir := range []string{c1, c2, c3} {
		runs, err := filepath.Glob(filepath.Join(dir, ".git", "runr", "runs", "*"))
		require.NoError(t, err)
		require.Len(t, runs, 1)
		out, err := exec.Command("cp", "-R", runs[0], filepath.Join(combined, "runs")).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	for _, by := range append([]string{""}, state.ReportGroupings...) {
		for _, format := range []string{"table", "json", "csv", "markdown"} {
			args := []string{"report", "--format", format}
			if by != "" {
				args = append(args, "--by", by)
			}
			code, one, stderr := runrOut(t, parent, append([]string{"--home", combined}, args...)...)
			require.Equal(t, 0, code, "stderr: %s", stderr)
			// A checkout, a store dir, and a glob that names c3 twice.
			code, many, stderr := runrOut(t, parent, append(args, "--store", c1, "--store", filepath.Join(c2, ".git", "runr"),
				"--store", filepath.Join(parent, "c[3]"), "--store", c3)...)
			require.Equal(t, 0, code, "stderr: %s", stderr)
			assert.Equal(t, one, many, "--by %q --format %s", by, format)
		}
	}

	report := func(by string) map[string]state.ReportRow {
		code, stdout, stderr := runrOut(t, parent, "report", "--format", "json", "--by", by, "--store", filepath.Join(parent, "c*"))
		require.Equal(t, 0, code, "stderr: %s", stderr)
		var rep state.Report
		require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
		rows := map[string]state.ReportRow{"TOTAL": rep.Total}
		for _, row := range rep.Rows {
			rows[row.Key] = row
		}
		return rows
	}
	type score struct {
		approved   int
		first      float64
		cost       float64 // the row's cost
		tokens     float64 // the row's tokens, all types
		unapproved float64
	}
	check := func(by string, want map[string]score) {
		t.Helper()
		rows := report(by)
		for key, w := range want {
			row, ok := rows[key]
			if !assert.True(t, ok, "--by %s: no row %s in %v", by, key, rows) {
				continue
			}
			// Money has six decimals, rates four and tokens per approved one.
			assert.Equal(t, w.approved, row.Approved, "--by %s %s: approved", by, key)
			assert.InDelta(t, w.cost, float64(row.CostUSD), 1e-6, "--by %s %s: cost", by, key)
			assert.InDelta(t, w.unapproved, float64(row.UnapprovedCostUSD), 1e-6, "--by %s %s: unapproved", by, key)
			require.NotNil(t, row.FirstAttemptRate, "--by %s %s", by, key)
			require.NotNil(t, row.CostPerApprovedUSD, "--by %s %s", by, key)
			require.NotNil(t, row.TokensPerApproved, "--by %s %s", by, key)
			assert.InDelta(t, w.first, float64(*row.FirstAttemptRate), 1e-4, "--by %s %s: first attempt rate", by, key)
			assert.InDelta(t, w.cost/float64(w.approved), float64(*row.CostPerApprovedUSD), 1e-6, "--by %s %s: cost per approved", by, key)
			if w.tokens > 0 {
				assert.InDelta(t, w.tokens/float64(w.approved), *row.TokensPerApproved, 0.05, "--by %s %s: tokens per approved", by, key)
			}
		}
	}
	// claude's tokens are the recording's: checked against the ledger in
	// TestLedgerOfAClaudeRun, not here.
	check("model", map[string]score{
		"claude-opus-5-5": {approved: 1, first: 1, cost: 0.0014},
		"m-b":             {approved: 2, first: 0.5, cost: 0.5 + 0.25 + 0.125 + 0.0625, tokens: 110 + 110 + 220 + 110, unapproved: 0.0625},
		"m-a":             {approved: 1, first: 1, cost: 1, tokens: 330},
	})
	check("agent", map[string]score{
		"claude":  {approved: 1, first: 1, cost: 0.0014},
		"command": {approved: 3, first: 2.0 / 3, cost: 0.5 + 0.25 + 0.125 + 0.0625 + 1, tokens: 110 + 110 + 220 + 110 + 330, unapproved: 0.0625},
		"TOTAL":   {approved: 4, first: 3.0 / 4, cost: 0.0014 + 1.9375, unapproved: 0.0625},
	})

	// Bad --store values name the flag.
	code, _, stderr := runrOut(t, parent, "report", "--store", filepath.Join(parent, "nothing*"))
	assert.Equal(t, 64, code)
	assert.Contains(t, stderr, "--store "+filepath.Join(parent, "nothing*")+": no such directory")
	code, _, stderr = runrOut(t, parent, "report", "--store", t.TempDir())
	assert.Equal(t, 64, code)
	assert.Contains(t, stderr, "not a run store")
}
