package proc

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRing(t *testing.T) {
	tests := []struct {
		name   string
		size   int
		writes []string
		want   string
	}{
		{"empty", 4, nil, ""},
		{"under", 4, []string{"ab"}, "ab"},
		{"exact", 4, []string{"abcd"}, "abcd"},
		{"wraps", 4, []string{"abc", "de"}, "bcde"},
		{"wraps twice", 4, []string{"abc", "def", "gh"}, "efgh"},
		{"one large write", 4, []string{"a", "0123456789"}, "6789"},
		{"large then small", 4, []string{"0123456789", "x"}, "789x"},
		{"many small", 3, strings.Split("abcdefg", ""), "efg"},
		{"fills, then wraps", 4, []string{"ab", "cd", "e"}, "bcde"},
		{"fills past the end", 4, []string{"ab", "cdefgh"}, "efgh"},
		{"fills just past the end", 4, []string{"abc", "de", "f"}, "cdef"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ring{size: tt.size}
			for _, w := range tt.writes {
				r.write([]byte(w))
			}
			assert.Equal(t, tt.want, string(r.bytes()))
			assert.LessOrEqual(t, len(r.buf), tt.size, "the buffer stays within size")
		})
	}
}

// The ring holds the last size bytes of whatever was written, in writes of
// any sizes, and its buffer is only as large as what it holds.
func TestRingKeepsTheLastBytes(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(uint64(seed), 0))
	for range 200 {
		size := 1 + rnd.IntN(64)
		r := ring{size: size}
		var all []byte
		for range rnd.IntN(20) {
			w := make([]byte, rnd.IntN(3*size))
			for i := range w {
				w[i] = byte('a' + rnd.IntN(26))
			}
			r.write(w)
			all = append(all, w...)
			want := all[max(0, len(all)-size):]
			require.Equal(t, string(want), string(r.bytes()), "size %d after %d bytes", size, len(all))
			require.LessOrEqual(t, len(r.buf), size)
		}
	}
}

// A read buffer starts small and doubles when a read fills it, up to its
// most; a process that prints little never grows it.
func TestReadBufferGrows(t *testing.T) {
	b := newReadBuffer(readBuf)
	_, err := b.read(strings.NewReader("one line\n"))
	require.NoError(t, err)
	assert.Equal(t, firstRead, len(b.buf))

	flood := bytes.NewReader(make([]byte, 8<<20))
	var got int
	for {
		p, err := b.read(flood)
		got += len(p)
		if err != nil {
			break
		}
	}
	assert.Equal(t, 8<<20, got)
	assert.Equal(t, readBuf, len(b.buf), "grown to the most, no further")
}

func TestLineSplitter(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		chunks []string
		want   []string
	}{
		{"one line", 10, []string{"abc\n"}, []string{"abc"}},
		{"split across chunks", 10, []string{"ab", "c\nde", "f\n"}, []string{"abc", "def"}},
		{"empty lines", 10, []string{"\n\na\n"}, []string{"", "", "a"}},
		{"final line without newline", 10, []string{"a\nb"}, []string{"a", "b"}},
		{"truncated", 3, []string{"abcdef\ngh", "ijk\n"}, []string{"abc", "ghi"}},
		{"carriage return kept", 10, []string{"a\r\n"}, []string{"a\r"}},
		{"crlf split between reads", 10, []string{"a\r", "\nb\r\n"}, []string{"a\r", "b\r"}},
		{"newline starts a read", 10, []string{"ab", "\ncd\n"}, []string{"ab", "cd"}},
		{"newline ends a read", 10, []string{"ab\n", "cd\n"}, []string{"ab", "cd"}},
		{"one byte at a time", 10, strings.Split("ab\n\ncd\ne", ""), []string{"ab", "", "cd", "e"}},
		{"only newlines", 10, []string{"\n", "\n"}, []string{"", ""}},
		{"truncated in place", 3, []string{"abcdef\nxy\n"}, []string{"abc", "xy"}},
		{"giant line over many reads", 4, []string{"0123", "4567", "89", "\nz"}, []string{"0123", "z"}},
		{"cut exactly at max across reads", 4, []string{"01", "23", "\n"}, []string{"0123"}},
		{"no output", 10, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			l := &lineSplitter{max: tt.max, emit: func(b []byte) bool { got = append(got, string(b)); return true }, abort: func() {}}
			for _, c := range tt.chunks {
				// A fresh buffer per read, overwritten after it, as pump's is:
				// a line must not be read after the call that handed it over.
				buf := []byte(c)
				l.feed(buf)
				for i := range buf {
					buf[i] = '#'
				}
			}
			if l.pending {
				l.flush()
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestTail(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		lines int
		want  string
	}{
		{"last two", "a\nb\nc\n", 2, "b\nc"},
		{"last one", "a\nb\nc", 1, "c"},
		{"more than there are", "a\nb\n", 5, "a\nb"},
		{"zero", "a\nb\n", 0, ""},
		{"empty", "", 3, ""},
		{"crlf", "a\r\nb\r\n", 1, "b"},
		{"cut mid-character", "\xa9 caf\xc3\xa9\n", 1, "\uFFFD café"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Tail([]byte(tt.in), tt.lines))
		})
	}
}

// The line kept across reads never grows past max, however long a line
// without a newline goes on.
func TestLineSplitterGiantLineStaysBounded(t *testing.T) {
	var got [][]byte
	l := &lineSplitter{max: 1 << 10, emit: func(b []byte) bool { got = append(got, bytes.Clone(b)); return true }, abort: func() {}}
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for range 256 { // 16 MiB without a newline
		l.feed(chunk)
		require.LessOrEqual(t, cap(l.line), 2<<10)
	}
	l.feed([]byte("\nRUNR_STATUS: done\n"))
	require.Len(t, got, 2)
	assert.Equal(t, bytes.Repeat([]byte("x"), 1<<10), got[0])
	assert.Equal(t, "RUNR_STATUS: done", string(got[1]))
}

// With LineStarts, only the non-empty lines whose first byte it marks reach
// the callback, whole, however the reads cut them; the others cost nothing.
func TestLineSplitterStarts(t *testing.T) {
	var starts [256]bool
	starts['R'], starts[' '] = true, true
	tests := []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"in one read", []string{"xx\nRa\n\n b\nc\n"}, []string{"Ra", " b"}},
		{"marked line cut by reads", []string{"xx\nR", "UNR", "\nyy\n"}, []string{"RUNR"}},
		{"unmarked line cut by reads", []string{"xR\n", "x", "R\nR", "\n"}, []string{"R"}},
		{"truncated at max", []string{"R123456789abc\n"}, []string{"R123456789"}},
		{"last line without newline", []string{"x\n Ry"}, []string{" Ry"}},
		{"only unmarked", []string{"a\nb\n\n", "c"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			l := &lineSplitter{max: 10, starts: &starts, emit: func(b []byte) bool { got = append(got, string(b)); return true }, abort: func() {}}
			for _, c := range tt.chunks {
				l.feed([]byte(c))
			}
			if l.pending {
				l.flush()
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// After the callback said stop, no later line reaches it, in the same read or
// a later one.
func TestLineSplitterStops(t *testing.T) {
	var got []string
	aborts := 0
	l := &lineSplitter{max: 10, emit: func(b []byte) bool { got = append(got, string(b)); return string(b) != "stop" },
		abort: func() { aborts++ }}
	l.feed([]byte("a\nstop\nb\nc"))
	l.feed([]byte("d\ne"))
	assert.True(t, l.pending)
	l.flush()
	assert.Equal(t, []string{"a", "stop"}, got)
	assert.Equal(t, 1, aborts)
}

// Every byte a real process prints reaches the log in order, and every line
// the callback, however the pipe cuts the stream.
func TestRunLogAndLinesGetEveryByte(t *testing.T) {
	const size = 20 << 20
	logPath := filepath.Join(t.TempDir(), "out.log")
	spec := producer(t, size)
	spec.LogPath = logPath
	lines, bad := 0, 0
	spec.OnStdoutLine = func(line []byte) bool {
		lines++
		if !bytes.Equal(line, produceLine[:len(produceLine)-1]) {
			bad++
		}
		return true
	}
	res, err := Run(context.Background(), spec)
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode)
	assert.Equal(t, int64(size), res.Bytes)
	assert.Equal(t, size/len(produceLine), lines, "one call per complete line")
	assert.Zero(t, bad, "lines handed over intact")
	got, err := os.ReadFile(logPath)
	require.NoError(t, err)
	want := bytes.Repeat(produceLine, size/len(produceLine)+1)[:size]
	assert.True(t, bytes.Equal(want, got), "the log holds every byte in order")
	assert.Equal(t, want[size-DefaultTailBytes:], res.Tail)
}

// A real process's lines narrowed by LineStarts: the marked ones arrive,
// in order, and the log still holds every byte.
func TestRunLineStarts(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "out.log")
	var starts [256]bool
	starts['R'] = true
	script := `i=0; while [ $i -lt 3000 ]; do echo "x line $i"; echo; echo "RUNR_STATUS: $i"; i=$((i+1)); done`
	var got []string
	res, err := Run(context.Background(), Spec{
		Argv: []string{"sh", "-c", script}, LogPath: logPath, LineStarts: &starts,
		OnStdoutLine: func(line []byte) bool { got = append(got, string(line)); return true },
	})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.Len(t, got, 3000)
	var log bytes.Buffer
	for i := range 3000 {
		assert.Equal(t, fmt.Sprintf("RUNR_STATUS: %d", i), got[i])
		fmt.Fprintf(&log, "x line %d\n\nRUNR_STATUS: %d\n", i, i)
	}
	data, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.Equal(t, log.String(), string(data))
}

// BenchmarkRunLargeOutput is the output path as an agent call has it: a real
// process printing 80-byte lines, every byte to the log file, every line to a
// callback that looks for a signal as a parser does.
func BenchmarkRunLargeOutput(b *testing.B) {
	const size = 256 << 20
	logPath := filepath.Join(b.TempDir(), "out.log")
	spec := producer(b, size)
	spec.LogPath = logPath
	signals := 0
	spec.OnStdoutLine = func(line []byte) bool {
		if bytes.HasPrefix(line, []byte("RUNR_STATUS:")) {
			signals++
		}
		return true
	}
	b.ReportAllocs()
	b.SetBytes(size)
	for b.Loop() {
		if err := os.Remove(logPath); err != nil && !os.IsNotExist(err) {
			b.Fatal(err)
		}
		res, err := Run(context.Background(), spec)
		if err != nil || res.Bytes != size || res.ExitCode != 0 {
			b.Fatalf("Run: %v, exit %d, %d bytes", err, res.ExitCode, res.Bytes)
		}
	}
	if signals != 0 {
		b.Fatalf("%d signal lines in output that has none", signals)
	}
}

// A log with a cap keeps the output's first half and last half, in order,
// with a line between them that counts the bytes left out; output within
// the cap is kept whole. Writes of every size, cut at random (the seed is
// printed), give the same log.
func TestSinkLogCapKeepsHeadAndTail(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	for _, tt := range []struct {
		name     string
		cap, out int64
	}{
		{"within the cap", 100, 80},
		{"exactly the cap", 100, 100},
		{"just past the head", 100, 51},
		{"ten times the cap", 100, 1000},
		{"an odd cap", 101, 777},
		{"one write larger than the tail", 64, 5000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := make([]byte, tt.out)
			for i := range data {
				data[i] = byte('a' + rng.IntN(26))
			}
			path := filepath.Join(t.TempDir(), "tick-0001-implement.log")
			s, err := newSink(path, 64, tt.cap)
			require.NoError(t, err)
			for p := data; len(p) > 0; {
				n := 1 + rng.IntN(int(tt.cap))
				if tt.name == "one write larger than the tail" {
					n = len(p)
				}
				n = min(n, len(p))
				s.write(p[:n])
				p = p[n:]
			}
			require.NoError(t, s.close())
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			entries, _ := os.ReadDir(filepath.Dir(path))
			assert.Len(t, entries, 1, "no tail file left beside the log")
			if tt.out <= tt.cap {
				assert.Equal(t, string(data), string(got))
				assert.Zero(t, s.omitted)
				return
			}
			head, tail := tt.cap/2, tt.cap-tt.cap/2
			omitted := tt.out - head - tail
			assert.Equal(t, omitted, s.omitted)
			note := fmt.Sprintf("\n[runr: %d bytes of output left out here; the log keeps the first %d and the last %d bytes of %d (agent.log_cap, %d bytes)]\n",
				omitted, head, tail, tt.out, tt.cap)
			assert.Equal(t, string(data[:head])+note+string(data[tt.out-tail:]), string(got))
		})
	}
}
