package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

const timelineFile = "timeline.jsonl"

// The events whose data scanTimeline decodes; of the others it reads the
// heads alone.
var (
	attemptEvent = state.AttemptEvent{}.EventType()
	sandboxEvent = state.SandboxEvent{}.EventType()
)

// maxEventLine bounds one timeline line; a longer one is skipped as damaged
// rather than held in memory.
const maxEventLine = 1 << 20

// Bounds of a log tail: the last lines of the last bytes of the file.
const (
	tailBytes = 8 << 10
	tailLines = 20
)

// scanTimeline streams the timeline once, line by line, and summarises it.
// Damage (a missing file, a truncated last line from a crash mid-append, a
// line that is not JSON) becomes a warning; it is never an error.
//
// A timeline can hold hundreds of thousands of events, so only each event's
// head is decoded, and the data only of the attempt and sandbox events.
//
// onAttempt, when not nil, is handed each attempt event and its tick: the
// attempts state.json no longer lists are told only there.
func scanTimeline(path string, onAttempt func(tick int, a state.AttemptEvent)) (TimelineSummary, []string) {
	sum := TimelineSummary{ByType: map[string]int{}}
	r, err := state.OpenTimelineReader(path, maxEventLine)
	if errors.Is(err, fs.ErrNotExist) {
		return sum, []string{timelineFile + ": missing; the evidence comes from state.json alone"}
	}
	if err != nil {
		return sum, []string{fmt.Sprintf("%s: cannot read (%v); the evidence comes from state.json alone", timelineFile, err)}
	}
	defer r.Close()
	sum.Present = true

	var warns []string
	var bad []int
	var lastTS time.Time
	for r.Next() {
		ev, err := r.Head()
		switch {
		case errors.Is(err, state.ErrTornLine):
			warns = append(warns, timelineFile+": last line truncated, ignored")
		case err != nil:
			bad = append(bad, r.Line())
		default:
			sum.Events++
			sum.ByType[ev.Type]++
			sum.LastSeq, sum.LastType, sum.LastTick, lastTS = ev.Seq, ev.Type, ev.Tick, ev.TS
			switch {
			case ev.Type == attemptEvent && onAttempt != nil:
				if full, err := ev.Decode(); err == nil {
					if a, ok := full.Data.(state.AttemptEvent); ok {
						onAttempt(ev.Tick, a)
					}
				}
			case ev.Type == sandboxEvent:
				// The last one: a resume decides the sandbox again. A
				// damaged one leaves none.
				sum.sandbox = nil
				if full, err := ev.Decode(); err == nil {
					if sb, ok := full.Data.(state.SandboxEvent); ok {
						sum.sandbox = &sb
					}
				}
			}
		}
	}
	if err := r.Err(); err != nil {
		warns = append(warns, fmt.Sprintf("%s: read stopped at line %d (%v)", timelineFile, r.Line(), err))
	}
	if !lastTS.IsZero() {
		sum.LastTS = &lastTS
	}
	if len(bad) > 0 {
		warns = append(warns, fmt.Sprintf("%s: %s ignored (first: line %d)", timelineFile, stopreasons.Plural(len(bad), "damaged line"), bad[0]))
	}
	return sum, warns
}

// logTail returns the last lines of a log file of the run, reading only its
// end. rel must stay inside the run dir: it comes from state.json.
func logTail(runDir, rel string) (string, error) {
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%s: log path leaves the run directory, not read", rel)
	}
	f, err := state.OpenRecord(filepath.Join(runDir, rel))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s: missing; the output tail comes from state.json", rel)
		}
		return "", fmt.Errorf("%s: cannot read (%v); the output tail comes from state.json", rel, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%s: %v", rel, err)
	}
	start := max(info.Size()-tailBytes, 0)
	buf := make([]byte, info.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%s: %v", rel, err)
	}
	if start > 0 {
		// Drop the partial first line the cut left.
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	return strings.TrimRight(strings.Join(lines, "\n"), " \t\n"), nil
}
