package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

const day = 24 * time.Hour

// addRun creates a run: stopped that long ago, or, with a negative ago,
// running (a crashed run when no process holds it) last written now.
func addRun(t *testing.T, s *Store, ago time.Duration) string {
	t.Helper()
	// Ids of one second sort by created_at; distinct created_at keep the
	// order of creation whatever the clock's resolution.
	st := &State{RunID: NewRunID(time.Now()), RunStatus: stopreasons.RunRunning, Phase: PhaseImplement}
	require.NoError(t, s.Create(st))
	if ago >= 0 {
		at := time.Now().Add(-ago)
		st.RunStatus, st.Phase, st.StoppedAt = stopreasons.RunCompleted, PhaseStopped, &at
		st.StopReason = &StopReason{Stop: stopreasons.Stop{Code: stopreasons.Complete}}
		require.NoError(t, s.Save(st))
	}
	return st.RunID
}

func byID(items []PruneItem) map[string]PruneItem {
	m := map[string]PruneItem{}
	for _, it := range items {
		m[it.RunID] = it
	}
	return m
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func TestPruneRemovesStoppedRunsOlderThanTheAgeAndNeverALiveOne(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	old := addRun(t, s, 40*day)
	young := addRun(t, s, day)
	crashed := addRun(t, s, -1)
	l, err := s.Acquire(crashed) // its runr took it, then died
	require.NoError(t, err)
	require.NoError(t, l.Release())
	live := addRun(t, s, -1)
	h := startHelper(t, "hold", s.Home, live)
	require.Equal(t, "locked", h.next())
	require.NoError(t, s.WriteClaim(Claim{RunID: old, Checkout: "/x", PID: 1}))

	items, err := s.Prune(PruneRules{OlderThan: 30 * day}, nil)
	require.NoError(t, err)
	got := byID(items)
	require.Len(t, items, 4, "one item per run")
	assert.True(t, got[old].Removed)
	assert.Equal(t, stopreasons.RunCompleted, got[old].Status)
	assert.InDelta(t, float64(40*day), float64(got[old].Age), float64(time.Minute))
	assert.False(t, exists(s.RunDir(old)), "the old run's directory is gone")
	assert.False(t, exists(s.claimPath(old)), "and its claim")

	assert.False(t, got[young].Removed)
	assert.Contains(t, got[young].Kept, "stopped 1d ago, within 30d")
	assert.False(t, got[crashed].Removed, "a crashed run younger than the age stays")
	assert.Equal(t, stopreasons.RunCrashed, got[crashed].Status)
	assert.Contains(t, got[crashed].Kept, "last updated")
	assert.False(t, got[live].Removed)
	assert.Contains(t, got[live].Kept, "live")

	// A month later the crashed run is covered too; the live one never is.
	items, err = s.Prune(PruneRules{OlderThan: 30 * day, Now: time.Now().Add(31 * day)}, nil)
	require.NoError(t, err)
	got = byID(items)
	assert.True(t, got[young].Removed)
	assert.True(t, got[crashed].Removed, "a crashed run counts as stopped once the age covers its last update")
	assert.False(t, got[live].Removed)
	assert.Equal(t, stopreasons.RunRunning, got[live].Status)
	assert.True(t, exists(s.StatePath(live)), "the live run is untouched")
	ids, err := s.List()
	require.NoError(t, err)
	assert.Equal(t, []string{live}, ids)
}

// A run whose runr has created it and not yet taken its lock is not a
// crashed run, even for --older-than 0.
func TestPruneLeavesARunBeingStarted(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	starting := addRun(t, s, -1)
	items, err := s.Prune(PruneRules{}, nil)
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.Equal(t, "created moments ago; its runr is starting it", items[0].Kept)
	assert.True(t, exists(s.StatePath(starting)))
	// Left that way for long, it is a crashed run like another.
	items, err = s.Prune(PruneRules{Now: time.Now().Add(2 * StaleAfter)}, nil)
	require.NoError(t, err)
	assert.True(t, items[0].Removed)
}

func TestPruneKeepsTheNewestRuns(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	var ids []string
	for range 4 {
		ids = append(ids, addRun(t, s, 50*day))
	}
	items, err := s.Prune(PruneRules{OlderThan: day, Keep: 2}, nil)
	require.NoError(t, err)
	got := byID(items)
	assert.True(t, got[ids[0]].Removed)
	assert.True(t, got[ids[1]].Removed)
	assert.Equal(t, "among the 2 newest runs (--keep 2)", got[ids[2]].Kept)
	assert.Equal(t, "among the 2 newest runs (--keep 2)", got[ids[3]].Kept)
	left, err := s.List()
	require.NoError(t, err)
	assert.Equal(t, ids[2:], left)
}

func TestPruneDryRunRemovesNothing(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	old := addRun(t, s, 40*day)
	require.NoError(t, os.Mkdir(s.WorktreePath(old), 0o755))
	var hooked []string
	items, err := s.Prune(PruneRules{OlderThan: 30 * day, DryRun: true}, func(id, wt string, dry bool) (string, error) {
		assert.True(t, dry)
		hooked = append(hooked, id+" "+wt)
		return "", nil
	})
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.True(t, items[0].Removed, "would be removed")
	assert.Equal(t, []string{old + " " + s.WorktreePath(old)}, hooked, "the hook is asked, with the worktree")
	assert.True(t, exists(s.StatePath(old)))
	assert.True(t, exists(s.WorktreePath(old)))
}

func TestPruneHookKeepsTheRunWhole(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	dirty := addRun(t, s, 40*day)
	broken := addRun(t, s, 40*day)
	plain := addRun(t, s, 40*day)
	require.NoError(t, os.Mkdir(s.WorktreePath(dirty), 0o755))
	items, err := s.Prune(PruneRules{OlderThan: 30 * day}, func(id, wt string, dry bool) (string, error) {
		assert.False(t, dry)
		// The hook runs holding the run's lock: no resume can start now.
		held, _, err := s.Locked(id)
		assert.NoError(t, err)
		assert.True(t, held, "the run is locked while its worktree is removed")
		switch id {
		case dirty:
			assert.Equal(t, s.WorktreePath(dirty), wt)
			return "its worktree has uncommitted changes", nil
		case broken:
			return "", errors.New("git failed")
		}
		assert.Empty(t, wt)
		return "", nil
	})
	require.NoError(t, err)
	got := byID(items)
	assert.Equal(t, "its worktree has uncommitted changes", got[dirty].Kept)
	assert.EqualError(t, got[broken].Err, "git failed")
	assert.True(t, got[plain].Removed)
	assert.True(t, exists(s.StatePath(dirty)))
	assert.True(t, exists(s.StatePath(broken)))
	held, _, err := s.Locked(dirty)
	require.NoError(t, err)
	assert.False(t, held, "the lock is released for a run that is kept")
}

// Nothing outside the store is touched through a symlink planted in it, a
// run being created is left alone, and an unreadable run is kept.
func TestPruneNeverFollowsSymlinks(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	outside := t.TempDir()
	precious := filepath.Join(outside, "precious.txt")
	require.NoError(t, os.WriteFile(precious, []byte("keep me"), 0o644))

	old := addRun(t, s, 40*day)
	require.NoError(t, os.Symlink(outside, filepath.Join(s.RunDir(old), "logs", "evil-dir")))
	require.NoError(t, os.Symlink(precious, filepath.Join(s.RunDir(old), "evil-file")))
	// A symlink in place of a run directory, and one in place of a worktree.
	fake := NewRunID(time.Now().Add(-50 * day))
	require.NoError(t, os.Symlink(outside, s.RunDir(fake)))
	linked := addRun(t, s, 40*day)
	require.NoError(t, os.Symlink(outside, s.WorktreePath(linked)))
	// A run being created right now, by a live process.
	creating := filepath.Join(s.Home, runsDir, fmt.Sprintf("%s%s-%d", creatingDir, NewRunID(time.Now()), os.Getpid()))
	require.NoError(t, os.Mkdir(creating, 0o755))
	// A run whose state.json is damaged.
	damaged := addRun(t, s, 40*day)
	require.NoError(t, os.WriteFile(s.StatePath(damaged), []byte("{not json"), 0o644))

	items, err := s.Prune(PruneRules{OlderThan: 30 * day}, func(id, wt string, dry bool) (string, error) {
		assert.NotEqual(t, linked, id, "the hook never sees a symlinked worktree")
		return "", nil
	})
	require.NoError(t, err)
	got := byID(items)
	assert.True(t, got[old].Removed)
	assert.False(t, exists(s.RunDir(old)))
	assert.Contains(t, got[linked].Kept, "not a directory runr made")
	assert.True(t, exists(s.StatePath(linked)))
	assert.Contains(t, got[damaged].Kept, "cannot be read")
	assert.True(t, exists(s.StatePath(damaged)))
	assert.NotContains(t, got, fake, "a symlink is not a run")

	b, err := os.ReadFile(precious)
	require.NoError(t, err, "the symlinks' target survives")
	assert.Equal(t, "keep me", string(b))
	assert.True(t, exists(s.RunDir(fake)), "the planted symlink is not a run to remove")
	assert.True(t, exists(creating), "a run being created is not touched")

	// runs/ itself replaced by a symlink: nothing is pruned through it.
	runs := filepath.Join(s.Home, runsDir)
	require.NoError(t, os.Rename(runs, runs+".real"))
	require.NoError(t, os.Symlink(runs+".real", runs))
	_, err = s.Prune(PruneRules{}, nil)
	assert.Equal(t, stopreasons.StateCorrupt, stopreasons.CodeOf(err))
	assert.True(t, exists(filepath.Join(runs+".real", damaged, stateFile)))
}

func TestPruneFinishesAnInterruptedRemoval(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	// A removal whose runr died (no such pid) and one under way (this pid).
	dead := filepath.Join(s.Home, runsDir, pruningDir+NewRunID(time.Now())+"-999999999")
	alive := filepath.Join(s.Home, runsDir, fmt.Sprintf("%s%s-%d", pruningDir, NewRunID(time.Now()), os.Getpid()))
	for _, d := range []string{dead, alive} {
		require.NoError(t, os.MkdirAll(filepath.Join(d, "logs"), 0o755))
	}
	_, err = s.Prune(PruneRules{DryRun: true}, nil)
	require.NoError(t, err)
	assert.True(t, exists(dead), "a dry run removes nothing")
	_, err = s.Prune(PruneRules{}, nil)
	require.NoError(t, err)
	assert.False(t, exists(dead))
	assert.True(t, exists(alive))
}

func TestFormatAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                     "0s",
		90 * time.Second:                      "1m30s",
		36 * time.Hour:                        "1d12h",
		30 * day:                              "30d",
		2*day + 23*time.Hour:                  "2d23h",
		2*day + 23*time.Hour + 40*time.Minute: "3d",
	} {
		assert.Equal(t, want, FormatAge(d), "%v", d)
	}
}
