package state

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

func newRun(t *testing.T) (*Store, *State) {
	t.Helper()
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	st := &State{RunID: NewRunID(time.Now()), RunStatus: stopreasons.RunRunning, Phase: PhaseImplement}
	require.NoError(t, s.Create(st))
	return s, st
}

func parseCount(t *testing.T, line, prefix string) int {
	t.Helper()
	rest, ok := strings.CutPrefix(line, prefix+" ")
	require.True(t, ok, "helper line %q, want %q N", line, prefix)
	n, err := strconv.Atoi(rest)
	require.NoError(t, err)
	return n
}

// A process saving state.json in a tight loop is SIGKILLed at varied
// moments; every time, state.json must parse and its tick must be at least
// the last one the process reported saved, and never go backwards.
func TestSaveSurvivesSIGKILL(t *testing.T) {
	s, st := newRun(t)
	st.LastErrorSignature = "sig-0" // the helper names the signature after the tick
	require.NoError(t, s.Save(st))
	path := s.StatePath(st.RunID)
	const trials = 60
	prev, saves := 0, 0
	for trial := range trials {
		h := startHelper(t, "saveloop", s.Home, st.RunID)
		ready := parseCount(t, h.next(), "ready")
		require.GreaterOrEqual(t, ready, prev, "trial %d: the helper loaded an older tick", trial)

		// Let it get through a varying number of saves (none, for some
		// trials) before the kill, which lands wherever the loop then is.
		reported := ready
		for reported < ready+trial%7 {
			reported = parseCount(t, h.next(), "saved")
		}
		h.kill()
		saves += reported - ready

		got, err := LoadFile(path)
		require.NoError(t, err, "trial %d: state.json unreadable after SIGKILL", trial)
		require.GreaterOrEqual(t, got.Tick, reported, "trial %d: a reported save was lost", trial)
		require.GreaterOrEqual(t, got.Tick, prev, "trial %d: tick went backwards", trial)
		assert.Equal(t, "sig-"+strconv.Itoa(got.Tick), got.LastErrorSignature, "trial %d: fields from different saves", trial)
		prev = got.Tick
	}
	require.Positive(t, saves)

	// Whatever temporary files the kills left are reported, and only those.
	temps, err := s.LeftoverTemps()
	require.NoError(t, err)
	for _, p := range temps {
		assert.Contains(t, p, string(os.PathSeparator)+".tmp-state.json-")
	}
}

func TestLockHeldByLiveProcessThenTakenOverAfterSIGKILL(t *testing.T) {
	s, st := newRun(t)
	h := startHelper(t, "hold", s.Home, st.RunID)
	require.Equal(t, "locked", h.next())
	pid := h.cmd.Process.Pid

	_, err := s.Acquire(st.RunID)
	require.Error(t, err)
	assert.Equal(t, stopreasons.RunLocked, stopreasons.CodeOf(err))
	assert.Contains(t, err.Error(), "runr process "+strconv.Itoa(pid))
	assert.Contains(t, err.Error(), "runr stop "+st.RunID)

	held, info, err := s.Locked(st.RunID)
	require.NoError(t, err)
	assert.True(t, held)
	assert.Equal(t, pid, info.PID)
	host, _ := os.Hostname()
	assert.Equal(t, host, info.Host)
	assert.False(t, info.StartedAt.IsZero())
	assert.Equal(t, stopreasons.RunRunning, s.DisplayStatus(st))

	h.kill()

	held, _, err = s.Locked(st.RunID)
	require.NoError(t, err)
	assert.False(t, held, "the kernel releases the lock of a dead holder")
	assert.Equal(t, stopreasons.RunCrashed, s.DisplayStatus(st))

	l, err := s.Acquire(st.RunID)
	require.NoError(t, err, "a dead holder's lock is taken over")
	held, info, err = s.Locked(st.RunID)
	require.NoError(t, err)
	assert.True(t, held)
	assert.Equal(t, os.Getpid(), info.PID)
	assert.Equal(t, stopreasons.RunRunning, s.DisplayStatus(st))

	require.NoError(t, l.Release())
	require.NoError(t, l.Release(), "a second release is harmless")
	held, _, err = s.Locked(st.RunID)
	require.NoError(t, err)
	assert.False(t, held)
}

func TestLockReleasedByHolderIsFree(t *testing.T) {
	s, st := newRun(t)
	h := startHelper(t, "hold", s.Home, st.RunID)
	require.Equal(t, "locked", h.next())
	require.NoError(t, h.stdin.Close())
	require.NoError(t, h.cmd.Wait(), "helper: %s", h.stderr.String())
	h.done = true

	held, info, err := s.Locked(st.RunID)
	require.NoError(t, err)
	assert.False(t, held)
	assert.Zero(t, info)
	data, err := os.ReadFile(s.lockPath(st.RunID))
	require.NoError(t, err)
	assert.Empty(t, data, "a released lock carries no stale holder")
}
