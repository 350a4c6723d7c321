package doctor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const timelineFile = "timeline.jsonl"

// maxEventLine bounds one timeline line; a longer one is skipped as damaged
// rather than held in memory.
const maxEventLine = 1 << 20

// Bounds of a log tail: the last lines of the last bytes of the file.
const (
	tailBytes = 8 << 10
	tailLines = 20
)

// timelineEvent is the part of an event doctor needs; Data is left unparsed.
type timelineEvent struct {
	Seq  int64     `json:"seq"`
	TS   time.Time `json:"ts"`
	Type string    `json:"type"`
	Tick int       `json:"tick"`
}

// scanTimeline streams the timeline once, line by line, and summarises it.
// Damage (a missing file, a truncated last line from a crash mid-append, a
// line that is not JSON) becomes a warning; it is never an error.
func scanTimeline(path string) (TimelineSummary, []string) {
	sum := TimelineSummary{ByType: map[string]int{}}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return sum, []string{timelineFile + ": missing; the evidence comes from state.json alone"}
	}
	if err != nil {
		return sum, []string{fmt.Sprintf("%s: cannot read (%v); the evidence comes from state.json alone", timelineFile, err)}
	}
	defer f.Close()
	sum.Present = true

	var warns []string
	var bad []int
	br := bufio.NewReaderSize(f, 64<<10)
	var line []byte
	for n := 1; ; n++ {
		var tooLong, eof bool
		line, tooLong, eof, err = readLine(br, line[:0])
		if err != nil {
			warns = append(warns, fmt.Sprintf("%s: read stopped at line %d (%v)", timelineFile, n, err))
			break
		}
		if eof && len(line) == 0 {
			break
		}
		switch {
		case tooLong:
			bad = append(bad, n)
		case len(bytes.TrimSpace(line)) == 0:
		default:
			var ev timelineEvent
			if json.Unmarshal(line, &ev) != nil {
				if eof {
					// A line without its newline at the end is an append
					// that a crash cut short.
					warns = append(warns, timelineFile+": last line truncated, ignored")
				} else {
					bad = append(bad, n)
				}
				break
			}
			sum.Events++
			sum.ByType[ev.Type]++
			sum.LastSeq, sum.LastType, sum.LastTick = ev.Seq, ev.Type, ev.Tick
			if !ev.TS.IsZero() {
				ts := ev.TS
				sum.LastTS = &ts
			}
		}
		if eof {
			break
		}
	}
	if len(bad) > 0 {
		warns = append(warns, fmt.Sprintf("%s: %d damaged line(s) ignored (first: line %d)", timelineFile, len(bad), bad[0]))
	}
	return sum, warns
}

// readLine reads one line into buf without its newline. A line longer than
// maxEventLine is consumed but not kept (tooLong). eof is set when the file
// ended before a newline.
func readLine(br *bufio.Reader, buf []byte) (line []byte, tooLong, eof bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > maxEventLine {
				tooLong, buf = true, buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(buf, []byte{'\n'}), tooLong, false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return buf, tooLong, true, nil
		default:
			return buf, tooLong, false, err
		}
	}
}

// logTail returns the last lines of a log file of the run, reading only its
// end. rel must stay inside the run dir: it comes from state.json.
func logTail(runDir, rel string) (string, error) {
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%s: log path leaves the run directory, not read", rel)
	}
	f, err := os.Open(filepath.Join(runDir, rel))
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
