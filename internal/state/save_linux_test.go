package state

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/runr-dev/runr/internal/stopreasons"
)

func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	return fi.Sys().(*syscall.Stat_t).Ino
}

// saveTicks saves st once for each tick from first to last.
func saveTicks(t *testing.T, s *Store, st *State, first, last int) {
	t.Helper()
	for tick := first; tick <= last; tick++ {
		st.Tick = tick
		require.NoError(t, s.Save(st))
	}
}

// lockedRun is a run whose lock the test holds, as a running runr does.
func lockedRun(t *testing.T) (*Store, *State) {
	t.Helper()
	s, st := newRun(t)
	l, err := s.Acquire(st.RunID)
	require.NoError(t, err)
	t.Cleanup(func() { l.Release() })
	return s, st
}

// oldSpare is where an older runr kept the state.json it had replaced, to
// write the next save into: a run it was running when killed may still hold
// one.
func oldSpare(path string) string {
	return filepath.Join(filepath.Dir(path), tempPrefix+stateFile+"-spare")
}

// Every save of a live run leaves a whole state.json and nothing else: no
// temporary file, and no previous state kept for the next save.
func TestSaveLeavesNoTemporaryFile(t *testing.T) {
	s, st := lockedRun(t)
	path := s.StatePath(st.RunID)
	for tick := 1; tick <= 8; tick++ {
		st.Tick = tick
		require.NoError(t, s.Save(st))
		got, err := LoadFile(path)
		require.NoError(t, err)
		assert.Equal(t, tick, got.Tick)
		assert.Empty(t, temps(t, filepath.Dir(path)), "tick %d", tick)
	}
	left, err := s.LeftoverTemps()
	require.NoError(t, err)
	assert.Empty(t, left)
}

// A file someone has open is never written again: a reader that opened
// state.json keeps reading the state it opened, however many saves come
// after, while the saves go on in new files.
func TestSaveLeavesAnOpenStateAlone(t *testing.T) {
	s, st := lockedRun(t)
	path := s.StatePath(st.RunID)
	saveTicks(t, s, st, 1, 3)
	held, err := os.Open(path)
	require.NoError(t, err)
	defer held.Close()
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	heldIno := inodeOf(t, path)

	for tick := 4; tick <= 9; tick++ {
		st.Tick = tick
		require.NoError(t, s.Save(st))
		assert.NotEqual(t, heldIno, inodeOf(t, path), "tick %d: the open file became state.json again", tick)
		got, err := LoadFile(path)
		require.NoError(t, err)
		assert.Equal(t, tick, got.Tick)
	}
	var after bytes.Buffer
	_, err = held.Seek(0, 0)
	require.NoError(t, err)
	_, err = after.ReadFrom(held)
	require.NoError(t, err)
	assert.Equal(t, string(before), after.String(), "the open file was written")
}

// Whatever is planted at the name of an older runr's spare (a symlink, a
// second name of another file, a file of its own kept open to watch what
// runr writes) is never written: the save goes to a new file, and the
// planted file keeps its content.
func TestSaveNeverWritesThroughThePlantedSpare(t *testing.T) {
	for _, plant := range []string{"symlink", "hardlink", "file"} {
		t.Run(plant, func(t *testing.T) {
			s, st := lockedRun(t)
			path := s.StatePath(st.RunID)
			saveTicks(t, s, st, 1, 3)
			spare := oldSpare(path)
			require.NoFileExists(t, spare, "a save keeps no spare")
			outside := filepath.Join(t.TempDir(), "bashrc")
			require.NoError(t, os.WriteFile(outside, []byte("export PATH=/usr/bin\n"), 0o644))
			switch plant {
			case "symlink":
				require.NoError(t, os.Symlink(outside, spare))
			case "hardlink":
				require.NoError(t, os.Link(outside, spare))
			case "file":
				require.NoError(t, os.WriteFile(spare, []byte("export PATH=/usr/bin\n"), 0o644))
				f, err := os.Open(spare)
				require.NoError(t, err)
				defer f.Close()
				outside = "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
			}
			planted := inodeOf(t, spare)

			st.Tick = 4
			require.NoError(t, s.Save(st))
			got, err := LoadFile(path)
			require.NoError(t, err)
			assert.Equal(t, 4, got.Tick)
			assert.NotEqual(t, planted, inodeOf(t, path), "the planted file became state.json")
			data, err := os.ReadFile(outside)
			require.NoError(t, err)
			assert.Equal(t, "export PATH=/usr/bin\n", string(data), "written through the planted spare")
		})
	}
}

// The spare an older runr left in a run it was running when killed is a
// leftover like any other temporary file: doctor lists it, status's sweep
// removes it once it is old, and so does the next runr to take the run. A
// stopped run has none.
func TestOldSpareIsALeftover(t *testing.T) {
	s, st := newRun(t)
	saveTicks(t, s, st, 1, 3)
	spare := oldSpare(s.StatePath(st.RunID))
	plantSpare := func() {
		t.Helper()
		data, err := os.ReadFile(s.StatePath(st.RunID))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(spare, data, 0o644))
	}
	plantSpare()
	temps, err := s.LeftoverTemps()
	require.NoError(t, err)
	assert.Equal(t, []string{spare}, temps, "doctor lists the old spare")
	s.Sweep(time.Now())
	require.FileExists(t, spare, "a fresh spare outlives the sweep")
	s.Sweep(time.Now().Add(StaleAfter + time.Minute))
	require.NoFileExists(t, spare, "an old one does not")

	plantSpare()
	l, err := s.Acquire(st.RunID)
	require.NoError(t, err)
	defer l.Release()
	assert.NoFileExists(t, spare, "taking the run removes what its last holder left")
	st.Tick = 7
	require.NoError(t, s.Save(st))
	st.RunStatus = stopreasons.RunStatus(stopreasons.Timeout)
	st.StopReason = NewStopReason(stopreasons.Timeout, 0, "time is up")
	require.NoError(t, s.Save(st))
	assert.NoFileExists(t, spare)
	got, err := s.Load(st.RunID)
	require.NoError(t, err)
	assert.Equal(t, stopreasons.Timeout, got.StopReason.Code)
}

// Readers racing the saves, which alternate a large and a small state so
// that each save both grows and cuts the file, see whole states only.
func TestStateReaderSeesWholeFilesWhileTheSizeChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	raceReader(t, path, bytes.Repeat([]byte("a"), 256<<10), bytes.Repeat([]byte("b"), 12<<10), 200,
		func(data []byte) error { return WriteAtomic(path, data) })
}

// Pages of an old state that a reader handed on without keeping the file
// open (spliced into a pipe) keep the state they held, however many saves
// come after.
func TestSpliceOfAnOldStateStaysWhole(t *testing.T) {
	s, st := lockedRun(t)
	path := s.StatePath(st.RunID)
	saveTicks(t, s, st, 1, 3)
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pr.Close()
	defer pw.Close()
	_, err = unix.FcntlInt(pw.Fd(), unix.F_SETPIPE_SZ, 1<<20)
	require.NoError(t, err)
	f, err := os.Open(path)
	require.NoError(t, err)
	n, err := unix.Splice(int(f.Fd()), nil, int(pw.Fd()), nil, len(want), 0)
	require.NoError(t, err)
	require.Equal(t, len(want), int(n))
	require.NoError(t, f.Close())

	st.LastErrorSignature = strings.Repeat("a later state ", 100)
	saveTicks(t, s, st, 4, 9)
	got := make([]byte, len(want))
	_, err = io.ReadFull(pr, got)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "the spliced pages changed under the reader")
}

// A FIFO where a directory to sync should be is an error at once, not an
// open that never returns.
func TestSyncDirRefusesAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "run")
	require.NoError(t, unix.Mkfifo(fifo, 0o644))
	done := make(chan error, 1)
	go func() { done <- syncDir(fifo) }()
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("syncDir still blocked on a FIFO after 10 s")
	}
}
