package doctor

import (
	"bufio"
	"bytes"
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

// scanTimeline streams the timeline once, line by line, and summarises it.
// Damage (a missing file, a truncated last line from a crash mid-append, a
// line that is not JSON) becomes a warning; it is never an error.
//
// A timeline can hold hundreds of thousands of events, so each line is read
// by parseEventHead, which picks out the few fields doctor needs without
// decoding the rest; only the last event's timestamp is parsed.
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
	// counts avoids a string allocation per event: the lookup by
	// string(bytes) does not copy, and there are few distinct types.
	counts := map[string]*int{}
	var lastType, lastTS []byte
	br := bufio.NewReaderSize(f, 256<<10)
	var scratch []byte
	for n := 1; ; n++ {
		line, tooLong, eof, err := readLine(br, &scratch)
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
			ev, ok := parseEventHead(line)
			if !ok {
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
			c := counts[string(ev.typ)]
			if c == nil {
				c = new(int)
				counts[string(ev.typ)] = c
			}
			*c++
			sum.LastSeq, sum.LastTick = ev.seq, ev.tick
			lastType = append(lastType[:0], ev.typ...)
			lastTS = append(lastTS[:0], ev.ts...)
		}
		if eof {
			break
		}
	}
	for typ, c := range counts {
		sum.ByType[typ] = *c
	}
	sum.LastType = string(lastType)
	if ts, err := time.Parse(time.RFC3339Nano, string(lastTS)); err == nil {
		sum.LastTS = &ts
	}
	if len(bad) > 0 {
		warns = append(warns, fmt.Sprintf("%s: %d damaged line(s) ignored (first: line %d)", timelineFile, len(bad), bad[0]))
	}
	return sum, warns
}

// readLine reads one line without its newline. The line is the reader's
// own buffer, valid until the next read, unless it is longer than that
// buffer: then it is assembled in *scratch, which is kept for reuse. A line
// longer than maxEventLine is consumed but not kept (tooLong). eof is set
// when the file ended before a newline.
func readLine(br *bufio.Reader, scratch *[]byte) (line []byte, tooLong, eof bool, err error) {
	line, err = br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		buf := append((*scratch)[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = br.ReadSlice('\n')
			if tooLong {
				continue
			}
			if len(buf)+len(line) > maxEventLine {
				tooLong, buf = true, buf[:0]
			} else {
				buf = append(buf, line...)
			}
		}
		*scratch = buf
		line = buf
	}
	switch {
	case err == nil:
		return bytes.TrimSuffix(line, []byte{'\n'}), tooLong, false, nil
	case errors.Is(err, io.EOF):
		return line, tooLong, true, nil
	default:
		return line, tooLong, false, err
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
