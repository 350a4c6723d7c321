package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/tests/testenv"
)

// parallelTask is three independent milestones in one group.
const parallelTask = "# Three\n- [ ] one\n- [ ] two\n- [ ] three\n"

// TestParallelSignalStopsEveryWorker: SIGINT (and SIGTERM) while three
// workers each run an agent that left a grandchild behind: every worker's
// group is stopped, the run records user_stopped (130) or terminated (143),
// each worker's own run records its stop, and no process of any group is
// left; the worktrees stay for inspection.
func TestParallelSignalStopsEveryWorker(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		code string
		exit int
	}{
		{syscall.SIGINT, "user_stopped", 130},
		{syscall.SIGTERM, "terminated", 143},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t)
			require.NoError(t, os.WriteFile(filepath.Join(repo, "TASK.md"), []byte(parallelTask), 0o644))
			p := startRunr(t, repo, []string{"RUNR_AGENT_KILL_GRACE=2s"}, "run", "--run-id", "sig", "--task", "TASK.md", "--parallel", "3", "--",
				"fakeagent", "--do", "write wip.txt partial; grandchild 60s; ready; sleep 60s")
			p.waitReady(t, 3)
			p.signal(t, tc.sig)
			assert.Equal(t, tc.exit, p.wait(t, 60*time.Second), "stderr: %s", &p.stderr)
			dir, err := latestRunDir(repo)
			require.NoError(t, err)
			require.NoError(t, checkStoppedRun(dir, []string{tc.code}))
			stops, _ := filepath.Glob(filepath.Join(dir, "workers", "w*", "runs", "*", "stop.json"))
			assert.Len(t, stops, 3, "each worker's run recorded its stop")
			st := readState(t, repo)
			assert.Equal(t, "stopped", st["run_status"])
			// Each worker's slot records the milestone it was stopped on.
			slots, _ := st["workers"].([]any)
			require.Len(t, slots, 3)
			seen := map[float64]bool{}
			for _, s := range slots {
				slot := s.(map[string]any)
				assert.Equal(t, "stopped", slot["phase"])
				assert.NotEmpty(t, slot["run_id"])
				seen[slot["milestone"].(float64)] = true
			}
			assert.Equal(t, map[float64]bool{1: true, 2: true, 3: true}, seen)
			assert.DirExists(t, filepath.Join(repo, ".git", "runr", "worktrees", "sig", "main"))
			for k := 1; k <= 3; k++ {
				assert.DirExists(t, filepath.Join(repo, ".git", "runr", "worktrees", "sig", "w"+string(rune('0'+k))))
			}
		})
	}
}

// TestParallelMaxCostStopsAllWorkers: the cost budget is the run's: three
// workers each spend 0.4 per call, so no worker alone reaches --max-cost 1,
// but their sum does; every worker is stopped (127) and no process is left.
func TestParallelMaxCostStopsAllWorkers(t *testing.T) {
	repo := newRepo(t)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "TASK.md"), []byte(parallelTask), 0o644))
	p := startRunr(t, repo, []string{"RUNR_AGENT_KILL_GRACE=2s"}, "run", "--task", "TASK.md", "--parallel", "3", "--max-cost", "1", "--",
		"fakeagent", "--do", "touch-count calls.txt; usage 1000 1000 0.4; ready; grandchild 60s; sleep 1s")
	code := p.wait(t, 120*time.Second)
	st := readState(t, repo)
	assert.Equal(t, 127, code, "stop: %v\nstderr: %s", st["stop_reason"], &p.stderr)
	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	require.NoError(t, checkStoppedRun(dir, []string{"budget_exceeded"}))
	usage, _ := st["usage"].(map[string]any)
	cost, _ := usage["cost_usd"].(float64)
	assert.GreaterOrEqual(t, cost, 1.0, "the summed cost reached the budget")
	assert.Less(t, cost, 0.4*3*2, "no worker went on long past the budget")
	stops, _ := filepath.Glob(filepath.Join(dir, "workers", "w*", "runs", "*", "stop.json"))
	assert.Len(t, stops, 3, "every worker's run stopped")
	children, _ := filepath.Glob(filepath.Join(dir, "workers", "w*", "runs", "*", "state.json"))
	require.Len(t, children, 3)
	for _, c := range children {
		b, err := os.ReadFile(c)
		require.NoError(t, err)
		var child struct {
			Usage struct {
				CostUSD float64 `json:"cost_usd"`
			} `json:"usage"`
		}
		require.NoError(t, json.Unmarshal(b, &child))
		assert.Less(t, child.Usage.CostUSD, 1.0, "%s: no worker reached the budget alone", c)
	}
}

// TestParallelSlotShowsTheWorkersProcess: while a worker's agent runs, the
// run's slot of that worker holds the agent's process record (pid, group,
// start time), the one the worker's own state.json holds, as of the run's
// last save; when the worker is done its slot is free again.
func TestParallelSlotShowsTheWorkersProcess(t *testing.T) {
	repo := newRepo(t)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "TASK.md"), []byte("# Two\n- [ ] one\n- [ ] two\n"), 0o644))
	release := filepath.Join(t.TempDir(), "release")
	// Milestone 1 is done at once, and its merge saves the run's state;
	// milestone 2 waits for the test.
	agent := `cat >/dev/null
if [ "$RUNR_MILESTONE" = 2 ]; then
	i=0; until [ -e "` + release + `" ]; do i=$((i+1)); [ $i -gt 1200 ] && exit 3; sleep 0.05; done
fi
echo "m$RUNR_MILESTONE" > "m$RUNR_MILESTONE.txt"
echo "RUNR_STATUS: done"`
	p := startRunr(t, repo, nil, "run", "--run-id", "slot", "--task", "TASK.md", "--parallel", "2", "--", "sh", "-c", agent)
	var slot map[string]any
	testenv.WaitFor(t, "the run's state to show worker 2's agent process", func() bool {
		if _, err := os.Stat(filepath.Join(repo, ".git", "runr", "runs", "slot", "state.json")); err != nil {
			return false
		}
		st := readState(t, repo)
		slots, _ := st["workers"].([]any)
		for _, s := range slots {
			m, _ := s.(map[string]any)
			if m["milestone"] == float64(2) && m["agent_process"] != nil {
				slot = m
				return true
			}
		}
		return false
	})
	ap := slot["agent_process"].(map[string]any)
	child := filepath.Join(repo, ".git", "runr", "runs", "slot", "workers", "w"+fmtNum(slot["worker"]), "runs", slot["run_id"].(string), "state.json")
	b, err := os.ReadFile(child)
	require.NoError(t, err)
	var cst map[string]any
	require.NoError(t, json.Unmarshal(b, &cst))
	require.NotNil(t, cst["agent_process"], "the worker's own state records the process")
	cap := cst["agent_process"].(map[string]any)
	assert.Equal(t, cap["pgid"], ap["pgid"])
	assert.Equal(t, cap["pid"], ap["pid"])
	assert.Equal(t, cap["start_time"], ap["start_time"])
	assert.NoError(t, syscall.Kill(-int(ap["pgid"].(float64)), 0), "the recorded group is the live agent's")

	require.NoError(t, os.WriteFile(release, nil, 0o644))
	assert.Equal(t, 0, p.wait(t, 60*time.Second), "stderr: %s", &p.stderr)
	st := readState(t, repo)
	assert.Equal(t, "complete", st["stop_reason"].(map[string]any)["code"])
}

func fmtNum(v any) string {
	f, _ := v.(float64)
	return strconv.Itoa(int(f))
}

// TestParallelAgentSeesTheRun: in a parallel run each agent's RUNR_RUN_ID
// and RUNR_RUN_DIR name the run a user knows, so `runr status
// "$RUNR_RUN_ID"` from inside the agent finds it, and RUNR_WORKER says
// which worker runs the call.
func TestParallelAgentSeesTheRun(t *testing.T) {
	repo := newRepo(t)
	out := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(repo, "TASK.md"), []byte("# Two\n- [ ] one\n- [ ] two\n"), 0o644))
	agent := `runr status "$RUNR_RUN_ID" >/dev/null 2>&1; ` +
		`printf '%s %s %s %s\n' "$?" "$RUNR_WORKER" "$RUNR_RUN_ID" "$RUNR_RUN_DIR" > "$OUT/m$RUNR_MILESTONE"; ` +
		`echo "$RUNR_MILESTONE" > "f$RUNR_MILESTONE.txt"; echo "RUNR_STATUS: done"`
	code, stdout, stderr := runrEnv(t, repo, []string{"OUT=" + out}, "run", "--run-id", "seen", "--task", "TASK.md", "--parallel", "2", "--", "sh", "-c", agent)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	workers := map[string]bool{}
	for _, m := range []string{"m1", "m2"} {
		b, err := os.ReadFile(filepath.Join(out, m))
		require.NoError(t, err, "milestone %s's agent ran", m)
		f := strings.Fields(string(b))
		require.Len(t, f, 4, "%q", b)
		assert.Equal(t, "0", f[0], "runr status \"$RUNR_RUN_ID\" from inside the agent of %s", m)
		assert.Contains(t, []string{"1", "2"}, f[1], "RUNR_WORKER of %s", m)
		workers[f[1]] = true
		assert.Equal(t, "seen", f[2], "RUNR_RUN_ID of %s", m)
		assert.Equal(t, filepath.Join(repo, ".git", "runr", "runs", "seen"), f[3], "RUNR_RUN_DIR of %s", m)
	}
	assert.NotEmpty(t, workers)
}

// TestParallelStopRecordsWhatASequentialRunDoes: a parallel run's stop
// event and statistics carry every field a sequential run's do, with the
// figures of its workers' attempts: one milestone needs a second attempt,
// so the retry rate is one in two.
func TestParallelStopRecordsWhatASequentialRunDoes(t *testing.T) {
	agent := `if [ "$RUNR_MILESTONE" = 1 ] && [ ! -f tried1 ]; then echo 1 > tried1; else echo x > "ok$RUNR_MILESTONE"; fi; echo "RUNR_STATUS: done"`
	stopOf := func(workers string) (map[string]any, map[string]any) {
		repo := newRepo(t)
		require.NoError(t, os.WriteFile(filepath.Join(repo, "TASK.md"), []byte("# Two\n- [ ] one\n- [ ] two\n"), 0o644))
		code, stdout, stderr := runrEnv(t, repo, nil, "run", "--task", "TASK.md", "--parallel", workers,
			"--verify", "ls ok* >/dev/null 2>&1", "--", "sh", "-c", agent)
		require.Equal(t, 0, code, "--parallel %s\nstdout: %s\nstderr: %s", workers, stdout, stderr)
		dir, err := latestRunDir(repo)
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(dir, "timeline.jsonl"))
		require.NoError(t, err)
		var stop map[string]any
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var ev struct {
				Type string         `json:"type"`
				Data map[string]any `json:"data"`
			}
			require.NoError(t, json.Unmarshal([]byte(line), &ev))
			if ev.Type == "stop" {
				stop = ev.Data
			}
		}
		require.NotNil(t, stop, "--parallel %s: the timeline has a stop event", workers)
		stats, _ := readState(t, repo)["statistics"].(map[string]any)
		return stop, stats
	}
	seqStop, seqStats := stopOf("1")
	parStop, parStats := stopOf("2")
	keys := func(m map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	assert.Equal(t, keys(seqStop), keys(parStop), "the stop event's fields")
	assert.Equal(t, "done_success", parStop["terminal_status"])
	assert.EqualValues(t, 2, parStop["approved"])
	assert.EqualValues(t, 2, parStop["milestones"])
	assert.Equal(t, keys(seqStats), keys(parStats), "the statistics' fields")
	for _, k := range []string{"attempted", "approved", "retry_rate", "reject_rate"} {
		assert.Equal(t, seqStats[k], parStats[k], "statistics.%s of a parallel run as of a sequential one", k)
	}
	assert.EqualValues(t, 0.5, parStats["retry_rate"])
}
