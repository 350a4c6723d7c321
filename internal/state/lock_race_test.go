package state

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Processes racing to take one run: exactly one wins, the others are
// refused with run_locked, and the lock file names the winner.
func TestAcquireRaceOneWinnerNamedInLockFile(t *testing.T) {
	s, st := newRun(t)
	const racers = 6
	for round := range 3 {
		helpers := make([]*helper, racers)
		for i := range helpers {
			helpers[i] = startHelper(t, "race", s.Home, st.RunID)
		}
		var winner *helper
		for _, h := range helpers {
			switch line := h.next(); line {
			case "locked":
				require.Nil(t, winner, "round %d: two processes took the lock", round)
				winner = h
			case "refused":
			default:
				t.Fatalf("round %d: helper said %q", round, line)
			}
		}
		require.NotNil(t, winner, "round %d: nobody took the lock", round)

		data, err := os.ReadFile(s.lockPath(st.RunID))
		require.NoError(t, err)
		var info LockInfo
		require.NoError(t, json.Unmarshal(data, &info), "round %d: lock file %q", round, data)
		assert.Equal(t, winner.cmd.Process.Pid, info.PID, "round %d: the lock file names the winner", round)

		for _, h := range helpers {
			require.NoError(t, h.stdin.Close())
			require.NoError(t, h.cmd.Wait(), "helper: %s", h.stderr.String())
			h.done = true
		}
	}
}

// `runr status` and `runr doctor` look at a run's lock while a runr takes
// it; their look must never make the taking fail, nor make one another see
// a holder where there is none.
func TestAcquireNotRefusedByConcurrentProbes(t *testing.T) {
	s, st := newRun(t)
	for range 2 {
		h := startHelper(t, "probe", s.Home, st.RunID)
		require.Equal(t, "probing", h.next())
	}
	deadline := time.Now().Add(2 * time.Second)
	for n := 0; n < 300 && time.Now().Before(deadline); n++ {
		held, _, err := s.Locked(st.RunID)
		require.NoError(t, err)
		require.False(t, held, "probe %d: nobody holds the run, other probes aside", n)
	}
	deadline = time.Now().Add(2 * time.Second)
	n := 0
	for ; n < 300 && time.Now().Before(deadline); n++ {
		l, err := s.Acquire(st.RunID)
		require.NoError(t, err, "acquire %d while others probe", n)
		require.NoError(t, l.Release())
	}
	require.Positive(t, n)
}
