package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

func scanAll(t *testing.T, path string) []Event {
	t.Helper()
	var evs []Event
	require.NoError(t, ScanTimeline(path, func(e Event) error {
		evs = append(evs, e)
		return nil
	}))
	return evs
}

func seqs(evs []Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

// appendEvents appends an event of each type, the i-th with the number i in
// its data: a tick's milestone, or an unknown type's "n".
func appendEvents(t *testing.T, s *Store, id string, types ...string) {
	t.Helper()
	tl, err := s.OpenTimeline(id)
	require.NoError(t, err)
	for i, typ := range types {
		var data EventData = UnknownEvent{Type: typ, Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
		if typ == "tick" {
			data = TickEvent{Milestone: i}
		}
		require.NoError(t, tl.Append(i, PhaseVerify, data))
	}
	require.NoError(t, tl.Close())
}

func appendRaw(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(text)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestTimelineSeqContinuesAcrossReopen(t *testing.T) {
	s, st := newRun(t)
	path := s.TimelinePath(st.RunID)
	assert.Empty(t, scanAll(t, path), "a missing timeline has no events")

	appendEvents(t, s, st.RunID, "run_started", "tick", "tick")
	appendEvents(t, s, st.RunID, "resumed", "tick")

	evs := scanAll(t, path)
	assert.Equal(t, []int64{1, 2, 3, 4, 5}, seqs(evs))
	assert.Equal(t, "resumed", evs[3].Type())
	assert.Equal(t, UnknownEvent{Type: "resumed", Data: json.RawMessage(`{"n":0}`)}, evs[3].Data)
	assert.Equal(t, PhaseVerify, evs[3].Phase)
	assert.Equal(t, 1, evs[4].Tick)
	assert.Equal(t, TickEvent{Milestone: 1}, evs[4].Data)
	assert.False(t, evs[0].TS.IsZero())
	for i := 1; i < len(evs); i++ {
		assert.False(t, evs[i].TS.Before(evs[i-1].TS))
	}

	tl, err := s.OpenTimeline(st.RunID)
	require.NoError(t, err)
	require.NoError(t, tl.Close())
	assert.Error(t, tl.Append(0, "", UnknownEvent{Type: "late"}), "append after close")
}

func TestTimelineTruncatedOrCorruptLastLine(t *testing.T) {
	tests := []struct {
		name string
		tail string
	}{
		{"truncated write", `{"seq":4,"ts":"2026-11-21T23:00`},
		{"corrupt line", "\x00\x00\x00\x00\n"},
		{"event without seq", "{}\n"},
		{"several bad lines", "garbage\n{\"seq\":\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, st := newRun(t)
			path := s.TimelinePath(st.RunID)
			appendEvents(t, s, st.RunID, "a", "b", "c")
			appendRaw(t, path, tt.tail)

			if strings.Count(tt.tail, "\n") <= 1 {
				assert.Equal(t, []int64{1, 2, 3}, seqs(scanAll(t, path)), "the bad last line is skipped")
			}

			// Reopening cuts the bad tail off and numbering goes on from 3.
			appendEvents(t, s, st.RunID, "d")
			evs := scanAll(t, path)
			assert.Equal(t, []int64{1, 2, 3, 4}, seqs(evs))
			assert.Equal(t, "d", evs[3].Type())
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, 4, strings.Count(string(data), "\n"))
		})
	}
}

func TestTimelineCorruptMiddleLine(t *testing.T) {
	s, st := newRun(t)
	path := s.TimelinePath(st.RunID)
	appendEvents(t, s, st.RunID, "a")
	appendRaw(t, path, "not an event\n\n")
	appendRaw(t, path, `{"seq":3,"ts":"2026-11-21T23:00:17Z","type":"c","tick":0}`+"\n")

	var seen []int64
	err := ScanTimeline(path, func(e Event) error {
		seen = append(seen, e.Seq)
		return nil
	})
	require.Error(t, err)
	assert.Equal(t, stopreasons.StateCorrupt, stopreasons.CodeOf(err))
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "line 2")
	assert.Equal(t, []int64{1}, seen, "events before the corrupt line are delivered")
}

func TestTimelineLongEventsAndCallbackError(t *testing.T) {
	s, st := newRun(t)
	path := s.TimelinePath(st.RunID)
	big := strings.Repeat("x", 200<<10) // longer than the reader's and the tail search's buffers
	tl, err := s.OpenTimeline(st.RunID)
	require.NoError(t, err)
	out := json.RawMessage(`{"out":"` + big + `"}`)
	require.NoError(t, tl.Append(1, PhaseImplement, UnknownEvent{Type: "a", Data: out}))
	require.NoError(t, tl.Append(2, PhaseImplement, UnknownEvent{Type: "b", Data: out}))
	require.NoError(t, tl.Close())
	appendRaw(t, path, `{"seq":3,"data":{"out":"`+big) // a long write cut short

	appendEvents(t, s, st.RunID, "c")
	evs := scanAll(t, path)
	require.Equal(t, []int64{1, 2, 3}, seqs(evs))
	assert.Equal(t, UnknownEvent{Type: "b", Data: out}, evs[1].Data)

	stop := errors.New("enough")
	calls := 0
	err = ScanTimeline(path, func(Event) error {
		calls++
		return stop
	})
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 1, calls)
}

func TestOpenTimelineRefusesBadRuns(t *testing.T) {
	s, _ := newRun(t)
	_, err := s.OpenTimeline("../x")
	assert.Equal(t, stopreasons.UsageError, stopreasons.CodeOf(err))
	_, err = s.OpenTimeline("20000101T000000Z-000000")
	assert.Equal(t, stopreasons.RunNotFound, stopreasons.CodeOf(err))
	_, err = os.Stat(filepath.Join(s.Home, "runs", "20000101T000000Z-000000"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing is created for an unknown run")
}

// largeTimeline writes a timeline of n events as the store writes them and
// returns its path.
func largeTimeline(b *testing.B, n int) string {
	b.Helper()
	s, err := Open(b.TempDir())
	require.NoError(b, err)
	st := &State{RunID: NewRunID(time.Now())}
	require.NoError(b, s.Create(st))
	tl, err := s.OpenTimeline(st.RunID)
	require.NoError(b, err)
	for i := range n {
		// The same bytes as the benchmark always read, so that its timings
		// compare across versions.
		data := UnknownEvent{Type: "attempt", Data: json.RawMessage(fmt.Sprintf(`{"duration_ms":%d,"outcome":"failed","signature":"go test: TestX"}`, i))}
		require.NoError(b, tl.Append(i, PhaseVerify, data))
	}
	require.NoError(b, tl.Close())
	return s.TimelinePath(st.RunID)
}

// An event that could only be written in part (the disk was full) must not
// leave its fragment in the file: later events would join onto it, and the
// corrupt line in the middle would make the whole timeline unreadable.
func TestTimelineAppendAfterFailedWrite(t *testing.T) {
	s, st := newRun(t)
	h := startHelper(t, "diskfull", s.Home, st.RunID)
	err := h.cmd.Wait()
	h.done = true
	require.NoError(t, err, "helper: %s", h.stderr.String())

	evs := scanAll(t, s.TimelinePath(st.RunID))
	types := make([]string, len(evs))
	for i, e := range evs {
		types[i] = e.Type()
	}
	assert.Equal(t, []string{"before", "after"}, types)
	assert.Equal(t, []int64{1, 2}, seqs(evs))
}
