package parallel

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/supervisor"
)

// A worker's run that finished while runr was busy merging another, and
// whose report runr died before taking, still counts on resume: its spend is
// added to the run's once. A worker's run the coordinator already took (its
// slot cleared, or stopped, in the saved state) is not added again.
func TestRecoverAddsTheSpendOfUntakenWorkerRunsOnce(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644))
	gitIn(t, repo, "add", "a.txt")
	gitIn(t, repo, "commit", "-q", "-m", "one")

	store, err := state.Open(filepath.Join(repo, ".git", "runr"))
	require.NoError(t, err)
	prompt := "# T\n- [ ] one\n- [ ] two\n- [ ] three\n"
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := &state.State{SchemaVersion: state.SchemaVersion, RunID: "parent-run", RunStatus: stopreasons.RunRunning, Repo: repo,
		Task: state.Task{Prompt: prompt}, CreatedAt: now, Milestones: supervisor.Milestones(prompt),
		Counters: state.Counters{Edges: map[string]int{}}, Resumable: true,
		Parallel: &state.Parallel{Workers: 3, Requeues: make([]int, 3)}}
	require.NoError(t, store.Create(st))
	runDir := store.RunDir(st.RunID)

	child := func(k int, id string, cost float64) {
		cs, err := state.Open(filepath.Join(runDir, "workers", "w"+string(rune('0'+k))))
		require.NoError(t, err)
		ch := &state.State{SchemaVersion: state.SchemaVersion, RunID: id, RunStatus: stopreasons.RunStopped, Repo: repo,
			Task: state.Task{Prompt: prompt}, CreatedAt: now, Milestones: supervisor.Milestones(prompt),
			Counters: state.Counters{Edges: map[string]int{}, Attempts: 1}, Usage: state.Usage{CostUSD: cost}, Tick: 2, Iteration: 1,
			StopReason: state.NewStopReason(stopreasons.Complete, 1, "done")}
		require.NoError(t, cs.Create(ch))
	}
	child(1, "child-taken", 0.25)    // taken: its slot was cleared before the save
	child(2, "child-untaken", 0.5)   // finished, never taken: its slot still busy
	child(3, "child-stopped", 0.125) // taken at a stop: its slot says stopped
	st.Usage.CostUSD, st.Usage.InputTokens = 0.25+0.125, 1000
	st.Workers = []state.WorkerSlot{{Worker: 1},
		{Worker: 2, Milestone: 2, RunID: "child-untaken", Phase: state.PhaseImplement},
		{Worker: 3, Milestone: 3, RunID: "child-stopped", Phase: state.PhaseStopped}}

	c := newCoordinator(supervisor.Options{Repo: repo, Store: store, Config: &config.Config{}, Now: func() time.Time { return now }}, st)
	require.Nil(t, c.recover(ctx))
	require.InDelta(t, 0.875, c.st.Usage.CostUSD, 1e-9, "the untaken worker run's 0.5 is added, the taken ones are not again")
	_, tokens := c.others(1)()
	require.Equal(t, int64(1000), tokens)
	require.Equal(t, 2, c.st.Tick)
	require.Equal(t, 1, c.st.Counters.Attempts)
	cost, _ := c.others(1)()
	require.InDelta(t, 0.875, cost, 1e-9, "the workers' budget checks start from all the run spent before the resume")
}
