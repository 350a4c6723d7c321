package state

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

func TestCreateRunWritesStateAndConfigTogether(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	st := &State{RunID: NewRunID(time.Now()), RunStatus: stopreasons.RunRunning, Phase: PhaseImplement}
	require.NoError(t, s.CreateRun(st, map[string]any{"verify": map[string]any{"commands": []string{"true"}}}))
	assert.FileExists(t, s.StatePath(st.RunID))
	assert.FileExists(t, filepath.Join(s.RunDir(st.RunID), "config.json"))
	assert.DirExists(t, filepath.Join(s.RunDir(st.RunID), "logs"))
	hidden, err := filepath.Glob(filepath.Join(s.Home, runsDir, creatingDir+"*"))
	require.NoError(t, err)
	assert.Empty(t, hidden, "no creation directory is left")

	err = s.CreateRun(&State{RunID: st.RunID}, nil)
	assert.Equal(t, stopreasons.RunLocked, stopreasons.CodeOf(err), "an existing run is never replaced: %v", err)
	got, err := s.Load(st.RunID)
	require.NoError(t, err)
	assert.Equal(t, stopreasons.RunRunning, got.RunStatus)
}

func TestLoadRefusesImpossibleValues(t *testing.T) {
	s, st := newRun(t)
	st.Milestones = []Milestone{{Goal: "a", Status: MilestonePending}, {Goal: "b", Status: MilestonePending}}
	for _, c := range []struct {
		edit func(*State)
		want string
	}{
		{func(st *State) { st.MilestoneIndex = 99 }, "milestone_index 99 is beyond the 2 milestones"},
		{func(st *State) { st.MilestoneIndex = -1 }, "milestone_index -1 is beyond the 2 milestones"},
		{func(st *State) { st.ElapsedMS = -5 }, "elapsed_ms -5 is negative"},
		{func(st *State) { st.Counters.Edges = map[string]int{"verify": -2} }, "counters.edges.verify -2 is negative"},
		{func(st *State) { st.Counters.Noop = -3 }, "counters.noop -3 is negative"},
		{func(st *State) { st.Counters.TestFailStreak = -1 }, "counters.test_failure_streak -1 is negative"},
		{func(st *State) { st.Counters.Attempts = -4 }, "counters.attempts -4 is negative"},
		{func(st *State) { st.Milestones[1].Retries = -1 }, "milestones[1].retries -1 is negative"},
		{func(st *State) { st.ResumeFrom = &ResumeFrom{Milestone: 0, Phase: PhaseVerify} }, "resume_from.milestone 0 is outside"},
		{func(st *State) { st.ResumeFrom = &ResumeFrom{Milestone: 1, Phase: "nap"} }, `resume_from.phase "nap"`},
		{func(st *State) { st.Phase = "nap" }, `phase "nap" is not a phase`},
		{func(st *State) { st.RunStatus = "sleeping" }, `run_status "sleeping"`},
	} {
		bad := *st
		bad.Milestones = append([]Milestone(nil), st.Milestones...)
		c.edit(&bad)
		require.NoError(t, s.Save(&bad))
		_, err := s.Load(st.RunID)
		assert.Equal(t, stopreasons.StateCorrupt, stopreasons.CodeOf(err), c.want)
		assert.ErrorContains(t, err, c.want)
		assert.ErrorContains(t, err, "state.json")
	}
	// The index reaches the number of milestones once all are approved.
	done := *st
	done.MilestoneIndex = 2
	require.NoError(t, s.Save(&done))
	_, err := s.Load(st.RunID)
	assert.NoError(t, err)
}

func TestSweepRemovesOnlyDeadOrOldCreations(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	runs := filepath.Join(s.Home, runsDir)
	mine := filepath.Join(runs, fmt.Sprintf("%s20260101T000000Z-aaaaaa-%d", creatingDir, os.Getpid()))
	gone := filepath.Join(runs, fmt.Sprintf("%s20260101T000000Z-bbbbbb-%d", creatingDir, dead.Process.Pid))
	old := filepath.Join(runs, fmt.Sprintf("%s20260101T000000Z-cccccc-%d", creatingDir, os.Getpid()))
	for _, d := range []string{mine, gone, old} {
		require.NoError(t, os.MkdirAll(filepath.Join(d, logsDir), 0o755))
	}
	past := time.Now().Add(-2 * StaleAfter)
	require.NoError(t, os.Chtimes(old, past, past))
	removed := s.Sweep(time.Now())
	assert.ElementsMatch(t, []string{gone, old}, removed)
	assert.DirExists(t, mine, "a creation under way is left alone")
}

func TestSymlinkedStoreFilesAreStateCorrupt(t *testing.T) {
	s, st := newRun(t)
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("keep\n"), 0o644))
	plant := func(path string) {
		t.Helper()
		os.Remove(path)
		require.NoError(t, os.Symlink(victim, path))
	}
	check := func(what string, err error) {
		t.Helper()
		assert.Equal(t, stopreasons.StateCorrupt, stopreasons.CodeOf(err), "%s: %v", what, err)
		assert.ErrorContains(t, err, "is a symlink", what)
		data, rerr := os.ReadFile(victim)
		require.NoError(t, rerr)
		assert.Equal(t, "keep\n", string(data), "%s wrote through the symlink", what)
	}

	plant(s.StatePath(st.RunID))
	_, err := s.Load(st.RunID)
	check("Load", err)
	check("Save", s.Save(st))

	plant(s.TimelinePath(st.RunID))
	_, err = s.OpenTimeline(st.RunID)
	check("OpenTimeline", err)

	plant(s.lockPath(st.RunID))
	_, err = s.Acquire(st.RunID)
	check("Acquire", err)

	prompt := filepath.Join(s.RunDir(st.RunID), "prompts", "tick-0001.md")
	require.NoError(t, os.MkdirAll(filepath.Dir(prompt), 0o755))
	plant(prompt)
	check("WriteFileNoFollow", WriteFileNoFollow(prompt, []byte("prompt")))

	log := s.LogPath(st.RunID, 1, PhaseImplement)
	plant(log)
	check("CheckNoSymlink", CheckNoSymlink(log))
	_, err = OpenAppendNoFollow(log)
	check("OpenAppendNoFollow", err)
}

func TestOpenReadCreatesNothing(t *testing.T) {
	home := filepath.Join(t.TempDir(), "store")
	s, err := OpenRead(home)
	require.NoError(t, err)
	assert.NoDirExists(t, home)
	ids, err := s.List()
	require.NoError(t, err)
	assert.Empty(t, ids)
}
