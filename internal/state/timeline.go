package state

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// Timeline appends events to a run's timeline.jsonl. Only the holder of the
// run's lock opens one for appending.
type Timeline struct {
	mu   sync.Mutex
	f    *os.File
	path string
	seq  int64
	// cutTo is the size to cut the file back to before the next write, when
	// a failed write left part of an event behind and cutting it off failed
	// too; -1 when the file ends with a whole event.
	cutTo int64
}

// TimelinePath is the timeline.jsonl of run id.
func (s *Store) TimelinePath(id string) string {
	return filepath.Join(s.RunDir(id), timelineFile)
}

// OpenTimeline opens the timeline of run id for appending. Numbering
// continues from the last event already in the file. A partial or corrupt
// tail, left by a crash in the middle of a write, is cut off first, so that
// new events never join onto it and the file stays one valid event per line.
func (s *Store) OpenTimeline(id string) (*Timeline, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	if err := s.mustExist(id); err != nil {
		return nil, err
	}
	path := s.TimelinePath(id)
	// Not following a symlink: cutting a damaged tail off would otherwise
	// truncate whatever file a planted link points to.
	f, err := openNoFollow(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, wrapIO(err, "open timeline %s", path)
	}
	seq, end, err := lastEvent(f)
	if err == nil {
		err = truncateTail(f, end)
	}
	if err != nil {
		f.Close()
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "read timeline %s", path)
	}
	return &Timeline{f: f, path: path, seq: seq, cutTo: -1}, nil
}

func truncateTail(f *os.File, end int64) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == end {
		return nil
	}
	return f.Truncate(end)
}

// lastEvent finds the last valid event of the file by reading backwards, so
// opening a long timeline does not read all of it. It returns that event's
// seq and the offset just after its line (0, 0 for a file without one).
func lastEvent(f *os.File) (seq int64, end int64, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	end = fi.Size()
	if end == 0 {
		return 0, 0, nil
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, end-1); err != nil {
		return 0, 0, err
	}
	if last[0] != '\n' {
		// Every event is written with its newline in one write, so a line
		// without one is a write that did not finish.
		if end, err = lineStart(f, end); err != nil {
			return 0, 0, err
		}
	}
	for end > 0 {
		start, err := lineStart(f, end-1)
		if err != nil {
			return 0, 0, err
		}
		line := make([]byte, end-1-start)
		if _, err := f.ReadAt(line, start); err != nil {
			return 0, 0, err
		}
		if ev, err := DecodeEvent(line); err == nil {
			return ev.Seq, end, nil
		}
		end = start
	}
	return 0, 0, nil
}

// lineStart returns the offset of the first byte after the last '\n' before
// pos (0 if there is none).
func lineStart(f *os.File, pos int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for pos > 0 {
		n := int64(len(buf))
		if n > pos {
			n = pos
		}
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return pos + int64(i) + 1, nil
		}
	}
	return 0, nil
}

// Append writes one event. Each event is a single write(2) of one line, so
// a concurrent reader or a crash sees whole lines and at most a partial last
// one. A write that fails part way (a full disk) has its fragment cut off,
// now or before the next event, so that later events never join onto it.
// Events are not synced one by one: losing the last few to a power cut is
// acceptable, state.json is the durable record.
func (t *Timeline) Append(tick int, phase string, data EventData) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return stopreasons.Errorf(stopreasons.InternalError, "append to closed timeline %s", t.path)
	}
	ev := Event{Seq: t.seq + 1, TS: time.Now().UTC(), Tick: tick, Phase: phase, Data: data}
	line, err := EncodeEvent(ev)
	if err != nil {
		return stopreasons.Wrap(stopreasons.InternalError, err, "encode %s event for %s", ev.Type(), t.path)
	}
	if t.cutTo >= 0 {
		if err := t.f.Truncate(t.cutTo); err != nil {
			return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "cut a partial event off timeline %s", t.path)
		}
		t.cutTo = -1
	}
	if n, err := t.f.Write(append(line, '\n')); err != nil {
		if n > 0 {
			t.cutPartial(int64(n))
		}
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "append to timeline %s", t.path)
	}
	t.seq = ev.Seq
	return nil
}

// cutPartial removes the last n bytes, the part of an event a failed write
// left, or remembers to remove them before the next write.
func (t *Timeline) cutPartial(n int64) {
	fi, err := t.f.Stat()
	if err != nil {
		return // fstat of an open file fails only on a broken file system
	}
	t.cutTo = fi.Size() - n
	if t.f.Truncate(t.cutTo) == nil {
		t.cutTo = -1
	}
}

// Close syncs and closes the timeline.
func (t *Timeline) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return nil
	}
	syncErr := t.f.Sync()
	closeErr := t.f.Close()
	t.f = nil
	if err := errors.Join(syncErr, closeErr); err != nil {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "close timeline %s", t.path)
	}
	return nil
}
