package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"time"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// EventHead is an event with its data left as written. A reader that counts
// or lists events decodes only this; Event (or EventHead.Decode) decodes the
// data as well.
type EventHead struct {
	Seq   int64           `json:"seq"`
	TS    time.Time       `json:"ts"`
	Type  string          `json:"type"`
	Tick  int             `json:"tick"`
	Phase string          `json:"phase,omitempty"`
	Data  json.RawMessage `json:"data,omitempty"`
}

// Damage found on a line of the timeline. Any other error from Head or Event
// is the line's own corruption (not JSON, or a field of the wrong type).
var (
	// ErrTornLine is a last line without its newline that does not decode:
	// an append that a crash cut short.
	ErrTornLine = errors.New("last line cut short")
	// ErrLineTooLong is a line longer than the reader's bound, passed over
	// without being held in memory.
	ErrLineTooLong = errors.New("line too long")
)

// readBufSize is the reader's buffer: a line that fits is decoded where it
// lies, without a copy.
const readBufSize = 256 << 10

// TimelineReader reads a timeline.jsonl as a stream, one line at a time: it
// holds one line in memory, never the whole file, so a timeline of any length
// costs the same memory. Like bufio.Scanner: call Next until it returns
// false, then Err.
//
// A line that is not an event is reported, not fatal: the caller decides
// whether damage in the middle of the file matters.
type TimelineReader struct {
	f       io.Closer
	br      *bufio.Reader
	maxLine int
	scratch []byte // a line longer than the buffer, assembled
	head    EventHead
	dataBuf []byte // the memory of head.Data, kept when a line has none
	no      int
	line    []byte // the current line, valid until the next read
	torn    bool   // the current line is the last and has no newline
	tooLong bool   // the current line was passed over, line is nil
	err     error
	done    bool
}

// OpenTimelineReader opens the timeline at path for reading. A line longer
// than maxLine bytes is skipped with ErrLineTooLong rather than held
// (maxLine 0: no bound). It is opened by OpenRecord: a missing file is
// fs.ErrNotExist; a symlink, a FIFO or a directory is state_corrupt.
func OpenTimelineReader(path string, maxLine int) (*TimelineReader, error) {
	f, err := OpenRecord(path)
	if err != nil {
		return nil, err
	}
	return newTimelineReader(f, readBufSize, maxLine), nil
}

func newTimelineReader(f io.ReadCloser, bufSize, maxLine int) *TimelineReader {
	return &TimelineReader{f: f, br: bufio.NewReaderSize(f, bufSize), maxLine: maxLine}
}

// Close closes the file.
func (r *TimelineReader) Close() error { return r.f.Close() }

// Next moves to the next line that is not blank. It returns false at the
// end of the file or on a read error (see Err).
func (r *TimelineReader) Next() bool {
	r.line, r.torn, r.tooLong = nil, false, false
	for !r.done {
		line, tooLong, eof, err := r.readLine()
		if err != nil {
			r.no++
			r.err, r.done = err, true
			return false
		}
		if eof {
			r.done = true
			if len(line) == 0 && !tooLong {
				return false
			}
		}
		r.no++
		if !tooLong && len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		// Every event is written with its newline in one write, so a line
		// without one may be a write that did not finish.
		r.line, r.tooLong, r.torn = line, tooLong, eof
		return true
	}
	return false
}

// Line is the number of the line Next last read (1-based, blank lines
// counted), or of the line a read error stopped at.
func (r *TimelineReader) Line() int { return r.no }

// Head decodes the current line's event but not its data, or says why the
// line is not an event. Its Data is valid only until the next call to Next
// or Head: copy it to keep it.
func (r *TimelineReader) Head() (EventHead, error) {
	if r.tooLong {
		return EventHead{}, ErrLineTooLong
	}
	h := &r.head
	h.Data = r.dataBuf
	err := decodeHead(r.line, h)
	if cap(h.Data) > cap(r.dataBuf) {
		r.dataBuf = h.Data[:0]
	}
	if err != nil {
		return EventHead{}, r.damage(err)
	}
	return *h, nil
}

// Event decodes the current line's event, data included, or says why the
// line is not an event. An event without a seq, or whose data is not an
// object, is corrupt too: the store never writes one.
func (r *TimelineReader) Event() (Event, error) {
	if r.tooLong {
		return Event{}, ErrLineTooLong
	}
	ev, err := DecodeEvent(r.line)
	if err != nil {
		return Event{}, r.damage(err)
	}
	return ev, nil
}

func (r *TimelineReader) damage(err error) error {
	if r.torn {
		return ErrTornLine
	}
	return err
}

// Err is the read error that ended the stream, nil at the end of the file.
func (r *TimelineReader) Err() error { return r.err }

// readLine reads one line without its newline. The line is the reader's own
// buffer, valid until the next read, unless it is longer than that buffer:
// then it is assembled in scratch, which is kept for reuse. A line longer
// than maxLine is consumed but not kept (tooLong, line nil). eof is set when
// the file ended before a newline.
func (r *TimelineReader) readLine() (line []byte, tooLong, eof bool, err error) {
	line, err = r.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		buf := append(r.scratch[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = r.br.ReadSlice('\n')
			if !tooLong {
				buf = append(buf, line...)
			}
			if r.maxLine > 0 && len(buf) > r.maxLine+1 { // +1: the newline
				tooLong, buf = true, buf[:0]
			}
		}
		r.scratch = buf
		line = buf
	}
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		eof = true
	default:
		return nil, false, false, err
	}
	if !eof && !tooLong {
		line = line[:len(line)-1]
	}
	if tooLong || r.maxLine > 0 && len(line) > r.maxLine {
		return nil, true, eof, nil
	}
	return line, false, eof, nil
}

// decodeHead decodes one line into h, reusing the memory h.Data holds: a
// reader decodes thousands of lines into one EventHead. Data left out is nil.
func decodeHead(line []byte, h *EventHead) error {
	*h = EventHead{Data: h.Data[:0]}
	err := json.Unmarshal(line, h)
	if len(h.Data) == 0 {
		h.Data = nil
	}
	return err
}

// ScanTimeline calls fn for each event of the timeline at path, in order,
// reading it as a stream. A missing file has no events. A last line that is
// truncated or corrupt (a write in progress or cut short by a crash) is
// skipped; a corrupt line followed by valid ones is state_corrupt, naming the
// line. An error from fn stops the scan and is returned as is.
func ScanTimeline(path string, fn func(Event) error) error {
	r, err := OpenTimelineReader(path, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return stopreasons.Wrap(stopreasons.StateCorrupt, err, "cannot read timeline %s", path)
	}
	defer r.Close()

	var (
		badLine int // a corrupt line, forgiven only if nothing follows it
		badErr  error
	)
	for r.Next() {
		if badErr != nil {
			return stopreasons.Wrap(stopreasons.StateCorrupt, badErr,
				"timeline %s: line %d is corrupt", path, badLine)
		}
		ev, err := r.Event()
		if err != nil {
			badLine, badErr = r.Line(), err
			continue
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil {
		return stopreasons.Wrap(stopreasons.StateCorrupt, err, "read timeline %s", path)
	}
	return nil
}
