package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeHead(t *testing.T) {
	tests := []struct {
		name string
		line string
		ok   bool
		want EventHead
		ts   string // want.TS as written
	}{
		{name: "as the store writes it", ok: true,
			line: `{"seq":7,"ts":"2026-11-21T23:00:17.5Z","type":"phase_ended","tick":3,"phase":"verify","data":{"exit_code":1,"command":"go test ./..."}}`,
			want: EventHead{Seq: 7, Tick: 3, Type: "phase_ended", Phase: "verify", Data: json.RawMessage(`{"exit_code":1,"command":"go test ./..."}`)},
			ts:   "2026-11-21T23:00:17.5Z"},
		{name: "any key order, white space", ok: true,
			line: ` { "data" : [1, {"a": "}"}] , "tick" : 12 , "type" : "x" , "seq" : 9 } `,
			want: EventHead{Seq: 9, Tick: 12, Type: "x", Data: json.RawMessage(`[1, {"a": "}"}]`)}},
		{name: "braces and quotes inside data strings", ok: true,
			line: `{"seq":1,"data":{"out":"a \"}{\" b\\","n":null},"type":"t"}`,
			want: EventHead{Seq: 1, Type: "t", Data: json.RawMessage(`{"out":"a \"}{\" b\\","n":null}`)}},
		{name: "escaped type is decoded", ok: true,
			line: `{"seq":2,"type":"a\u0062c\n"}`,
			want: EventHead{Seq: 2, Type: "abc\n"}},
		{name: "null fields stay zero", ok: true,
			line: `{"seq":null,"tick":null,"type":null,"ts":null}`},
		{name: "empty object", ok: true, line: `{}`},
		{name: "negative tick", ok: true, line: `{"tick":-4}`, want: EventHead{Tick: -4}},
		{name: "later duplicate key wins", ok: true, line: `{"seq":1,"seq":2}`, want: EventHead{Seq: 2}},

		{name: "cut short inside data", line: `{"seq":7,"ts":"2026-11-21T23:00:17Z","type":"phase_ended","tick":3,"data":{"exit_co`},
		{name: "cut short inside a string", line: `{"seq":7,"type":"phase_en`},
		{name: "cut short after a comma", line: `{"seq":7,`},
		{name: "missing closing brace", line: `{"seq":7}x`},
		{name: "not an object", line: `[1,2,3]`},
		{name: "garbage", line: `hello world`},
		{name: "empty", line: ``},
		{name: "seq is a string", line: `{"seq":"7"}`},
		{name: "tick has a fraction", line: `{"tick":1.5}`},
		{name: "seq overflows", line: `{"seq":99999999999999999999}`},
		{name: "type is a number", line: `{"type":3}`},
		{name: "key without value", line: `{"seq":}`},
		{name: "unbalanced data", line: `{"data":{"a":[1,2}}`},
		{name: "ts is not a time", line: `{"seq":1,"ts":"yesterday"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got EventHead
			err := decodeHead([]byte(tt.line), &got)
			assert.Equal(t, tt.ok, err == nil, "error: %v", err)
			if tt.ok {
				if tt.ts != "" {
					want, err := time.Parse(time.RFC3339Nano, tt.ts)
					require.NoError(t, err)
					tt.want.TS = want
				}
				assert.Equal(t, tt.want, got)
			}
		})
	}
}

// writeTimeline writes text as a timeline file and returns its path.
func writeTimeline(t testing.TB, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "timeline.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// readResult is what a reader said about one line: its number and either
// the event's head or the damage.
type readResult struct {
	line   int
	head   EventHead
	damage string // "" for an event; "torn", "too long" or "corrupt"
}

func damageOf(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrTornLine):
		return "torn"
	case errors.Is(err, ErrLineTooLong):
		return "too long"
	}
	return "corrupt"
}

func readHeads(t testing.TB, r *TimelineReader) []readResult {
	t.Helper()
	var out []readResult
	for r.Next() {
		h, err := r.Head()
		h.Data = bytes.Clone(h.Data)
		out = append(out, readResult{line: r.Line(), head: h, damage: damageOf(err)})
	}
	require.NoError(t, r.Err())
	return out
}

func TestTimelineReaderLines(t *testing.T) {
	huge := strings.Repeat(`x\"}{`, 100<<10) // longer than the read buffer, braces and escapes in it
	lines := []string{
		`{"seq":1,"ts":"2026-11-21T23:00:17Z","type":"run_started","tick":0,"data":{"milestones":3}}`,
		``,
		`not an event`,
		`{"seq":3,"type":"a\"b\\\u00e9","tick":1,"phase":"verify","data":{"out":"` + huge + `"}}`,
		`{"seq":4,"type":"big","data":{"out":"` + strings.Repeat("y", 2<<20) + `"}}`,
		"  \t",
		`{"seq":5,"type":"phase_ended","tick":2}`,
		`{"seq":6,"ts":"2026-11-21T23:00`,
	}
	path := writeTimeline(t, strings.Join(lines, "\n"))
	r, err := OpenTimelineReader(path, 1<<20)
	require.NoError(t, err)
	defer r.Close()

	got := readHeads(t, r)
	require.Len(t, got, 6)
	assert.Equal(t, readResult{line: 1, head: EventHead{Seq: 1, TS: time.Date(2026, 11, 21, 23, 0, 17, 0, time.UTC),
		Type: "run_started", Data: json.RawMessage(`{"milestones":3}`)}}, got[0], "blank lines are passed over")
	assert.Equal(t, readResult{line: 3, damage: "corrupt"}, got[1])
	assert.Equal(t, 4, got[2].line)
	assert.Equal(t, "", got[2].damage)
	assert.Equal(t, `a"b\é`, got[2].head.Type)
	assert.Equal(t, `{"out":"`+huge+`"}`, string(got[2].head.Data), "a line longer than the buffer is whole")
	assert.Equal(t, readResult{line: 5, damage: "too long"}, got[3], "a line over the bound is passed over")
	assert.Equal(t, readResult{line: 7, head: EventHead{Seq: 5, Type: "phase_ended", Tick: 2}}, got[4])
	assert.Equal(t, readResult{line: 8, damage: "torn"}, got[5])
	assert.Len(t, readHeads(t, r), 0, "a finished reader stays finished")
}

func TestTimelineReaderTornAndWholeLastLine(t *testing.T) {
	tests := []struct {
		name, text string
		want       []readResult
	}{
		{"torn", `{"seq":1}` + "\n" + `{"seq":2,"type":"x`,
			[]readResult{{line: 1, head: EventHead{Seq: 1}}, {line: 2, damage: "torn"}}},
		{"corrupt last line with its newline", `{"seq":1}` + "\n" + "garbage\n",
			[]readResult{{line: 1, head: EventHead{Seq: 1}}, {line: 2, damage: "corrupt"}}},
		{"whole event without its newline", `{"seq":1}` + "\n" + `{"seq":2}`,
			[]readResult{{line: 1, head: EventHead{Seq: 1}}, {line: 2, head: EventHead{Seq: 2}}}},
		{"too long last line without its newline", `{"seq":1}` + "\n" + strings.Repeat("z", 100),
			[]readResult{{line: 1, head: EventHead{Seq: 1}}, {line: 2, damage: "too long"}}},
		{"empty", "", nil},
		{"blank lines only", "\n \n\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTimelineReader(io.NopCloser(strings.NewReader(tt.text)), 16, 64)
			assert.Equal(t, tt.want, readHeads(t, r))
		})
	}
}

func TestTimelineReaderEvent(t *testing.T) {
	path := writeTimeline(t, `{"seq":1,"type":"a","data":{"n":1,"s":"\u00e9"}}`+"\n"+
		`{"type":"no seq"}`+"\n"+`{"seq":3,"data":[1]}`+"\n"+`{"seq":4,"data":`)
	r, err := OpenTimelineReader(path, 0)
	require.NoError(t, err)
	defer r.Close()

	require.True(t, r.Next())
	ev, err := r.Event()
	require.NoError(t, err)
	assert.Equal(t, Event{Seq: 1, Data: UnknownEvent{Type: "a", Data: json.RawMessage(`{"n":1,"s":"\u00e9"}`)}}, ev)
	require.True(t, r.Next())
	_, err = r.Head()
	assert.NoError(t, err, "a head without a seq decodes")
	_, err = r.Event()
	assert.Error(t, err, "an event without a seq is corrupt")
	require.True(t, r.Next())
	_, err = r.Head()
	assert.NoError(t, err, "the head leaves data as written")
	_, err = r.Event()
	assert.Error(t, err, "data that is not an object is corrupt")
	require.True(t, r.Next())
	_, err = r.Event()
	assert.ErrorIs(t, err, ErrTornLine)
	assert.False(t, r.Next())
	assert.NoError(t, r.Err())
}

func TestTimelineReaderMissingFile(t *testing.T) {
	_, err := OpenTimelineReader(filepath.Join(t.TempDir(), "timeline.jsonl"), 0)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// errAfter returns its data, then err.
type errAfter struct {
	r   io.Reader
	err error
}

func (e *errAfter) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, e.err
	}
	return n, err
}

func TestTimelineReaderReadError(t *testing.T) {
	broken := errors.New("input/output error")
	r := newTimelineReader(io.NopCloser(&errAfter{r: strings.NewReader(`{"seq":1}` + "\n\n" + `{"seq":3`), err: broken}), 16, 0)
	require.True(t, r.Next())
	assert.False(t, r.Next())
	assert.ErrorIs(t, r.Err(), broken)
	assert.Equal(t, 3, r.Line(), "the line the error stopped at")
}

// FuzzTimelineReader checks the streaming reader, with a buffer small
// enough that lines are assembled across reads, against the plain reading:
// split the file on newlines and decode each line whole.
func FuzzTimelineReader(f *testing.F) {
	for _, s := range []string{
		`{"seq":7,"ts":"2026-11-21T23:00:17Z","type":"phase_ended","tick":3,"phase":"verify","data":{"a":[1,"]"]}}` + "\n",
		`{"type":"a\"b","seq":-1}` + "\n\n" + `{"seq":7,"type":"x`,
		"garbage\n{}\n \n" + `{"seq":2,"data":"` + strings.Repeat("é", 40) + `"}`,
		"\n\n\n",
		`{"seq":1}`,
	} {
		f.Add([]byte(s), uint8(16), uint8(64))
	}
	f.Fuzz(func(t *testing.T, text []byte, bufSize, maxLine uint8) {
		r := newTimelineReader(io.NopCloser(bytes.NewReader(text)), int(bufSize), int(maxLine))
		var got, events []readResult
		for r.Next() {
			h, err := r.Head()
			h.Data = bytes.Clone(h.Data)
			got = append(got, readResult{line: r.Line(), head: h, damage: damageOf(err)})
			ev, err := r.Event()
			events = append(events, readResult{line: r.Line(), head: EventHead{Seq: ev.Seq}, damage: damageOf(err)})
		}
		require.NoError(t, r.Err())

		var want, wantEvents []readResult
		lines := bytes.Split(text, []byte("\n"))
		for i, line := range lines {
			last := i == len(lines)-1
			if last && len(line) == 0 {
				break
			}
			if maxLine > 0 && len(line) > int(maxLine) {
				want = append(want, readResult{line: i + 1, damage: "too long"})
				wantEvents = append(wantEvents, readResult{line: i + 1, damage: "too long"})
				continue
			}
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var h EventHead
			err := decodeHead(line, &h)
			ev, everr := DecodeEvent(line)
			if last && err != nil {
				err = ErrTornLine
			}
			if last && everr != nil {
				everr = ErrTornLine
			}
			want = append(want, readResult{line: i + 1, head: h, damage: damageOf(err)})
			wantEvents = append(wantEvents, readResult{line: i + 1, head: EventHead{Seq: ev.Seq}, damage: damageOf(everr)})
		}
		assert.Equal(t, want, got, "heads")
		assert.Equal(t, wantEvents, events, "events")
	})
}

// BenchmarkTimelineHeads reads the heads of a 100,000-event timeline, as
// doctor does.
func BenchmarkTimelineHeads(b *testing.B) {
	path := largeTimeline(b, 100_000)
	b.ReportAllocs()
	for b.Loop() {
		r, err := OpenTimelineReader(path, 1<<20)
		require.NoError(b, err)
		n := 0
		for r.Next() {
			if _, err := r.Head(); err == nil {
				n++
			}
		}
		require.NoError(b, r.Err())
		require.NoError(b, r.Close())
		require.Equal(b, 100_000, n)
	}
}
