package state

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
)

// followChunk is how much of a growing timeline one read takes.
const followChunk = 64 << 10

// TimelineFollower reads a timeline while its run appends to it: each Poll
// hands over the events whose lines are complete and remembers where it
// stopped, so a line still being written is read whole by a later Poll. A
// line that is not an event is passed over; a line longer than maxLine is
// passed over without being held.
type TimelineFollower struct {
	path    string
	maxLine int
	f       *os.File
	off     int64  // where the next complete line starts
	partial []byte // the start of a line whose newline has not come yet
	skip    bool   // the partial line is too long: drop it up to its newline
}

// FollowTimeline returns a follower of the timeline at path. The file need
// not exist yet: Poll finds no events until it does.
func FollowTimeline(path string, maxLine int) *TimelineFollower {
	return &TimelineFollower{path: path, maxLine: maxLine}
}

// Close closes the file.
func (t *TimelineFollower) Close() error {
	if t.f == nil {
		return nil
	}
	return t.f.Close()
}

// Poll calls fn for each event appended since the last Poll, in order. An
// error from fn stops it and is returned; the event that failed is not
// handed over again.
func (t *TimelineFollower) Poll(fn func(Event) error) error {
	if t.f == nil {
		f, err := OpenRecord(t.path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		t.f = f
	}
	// A resume cuts a torn last line off the timeline and appends after
	// the cut: what was kept of the torn line is gone from the file.
	if fi, err := t.f.Stat(); err == nil && fi.Size() < t.off {
		t.off, t.partial, t.skip = fi.Size(), t.partial[:0], false
	}
	if len(t.partial) > 0 {
		still := make([]byte, len(t.partial))
		if n, _ := t.f.ReadAt(still, t.off); n < len(still) || !bytes.Equal(still, t.partial) {
			t.partial = t.partial[:0]
		}
	}
	buf := make([]byte, followChunk)
	for {
		n, err := t.f.ReadAt(buf, t.off+int64(len(t.partial)))
		data := buf[:n]
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				t.keep(data)
				break
			}
			line := data[:i]
			data = data[i+1:]
			whole := append(t.partial, line...)
			skip := t.skip
			t.off += int64(len(whole)) + 1
			t.partial, t.skip = t.partial[:0], false
			if skip || len(bytes.TrimSpace(whole)) == 0 {
				continue
			}
			ev, perr := DecodeEvent(whole)
			if perr != nil {
				continue
			}
			if ferr := fn(ev); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) || n < len(buf) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// keep holds the start of an unfinished line, unless it is already longer
// than maxLine: then the follower counts its bytes and drops it at its
// newline.
func (t *TimelineFollower) keep(data []byte) {
	if t.skip {
		t.off += int64(len(data))
		return
	}
	t.partial = append(t.partial, data...)
	if t.maxLine > 0 && len(t.partial) > t.maxLine {
		t.off += int64(len(t.partial))
		t.partial, t.skip = t.partial[:0], true
	}
}
