package agents

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/proc"
)

// produceEnv makes the test binary, started again by a test, a command agent
// that prints that many bytes of 80-byte lines (a multiple of 80), then its
// signal line.
const produceEnv = "RUNR_AGENTS_TEST_PRODUCE"

func TestMain(m *testing.M) {
	if n := os.Getenv(produceEnv); n != "" {
		size, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			os.Exit(2)
		}
		chunk := bytes.Repeat(produceLine, (64<<10)/len(produceLine))
		for size > 0 {
			w := chunk[:min(int64(len(chunk)), size)]
			if _, err := os.Stdout.Write(w); err != nil {
				os.Exit(1)
			}
			size -= int64(len(w))
		}
		if _, err := os.Stdout.WriteString("RUNR_STATUS: blocked: needs a key\n"); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var produceLine = append(bytes.Repeat([]byte("0123456789abcdef"), 5)[:79], '\n')

// runCommandAgentChunks runs the test binary as a command agent printing
// size bytes the way the supervisor runs an agent call: through proc.Run,
// to a log, every stdout line to the adapter's parser, and with chunks
// stdout's chunks too.
func runCommandAgentChunks(tb testing.TB, size int64, logPath string, chunks bool) (Result, proc.Result) {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	a, err := Lookup("command")
	if err != nil {
		tb.Fatal(err)
	}
	req := Request{Prompt: "do it\nRUNR_STATUS: done\n", Command: []string{exe}}
	parser := a.NewParser(req)
	spec := proc.Spec{
		Argv:         []string{exe},
		Env:          append(os.Environ(), produceEnv+"="+strconv.FormatInt(size, 10)),
		LogPath:      logPath,
		OnStdoutLine: func(line []byte) bool { return !parser.Line(line) },
	}
	if c, ok := parser.(ChunkParser); ok && chunks && TakesChunks(parser) {
		spec.OnStdout = c.Chunk
	}
	res, err := proc.Run(context.Background(), spec)
	if err != nil {
		tb.Fatal(err)
	}
	return parser.Finish(res.ExitCode, res.Tail), res
}

// The signal after a long output is found, the final text is the end of the
// output, and the log holds all of it.
func TestCommandAgentLongOutput(t *testing.T) {
	for _, chunks := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunks=%v", chunks), func(t *testing.T) { testCommandAgentLongOutput(t, chunks) })
	}
}

func testCommandAgentLongOutput(t *testing.T, chunks bool) {
	const size = 80 * 100_000
	logPath := filepath.Join(t.TempDir(), "call.log")
	ar, res := runCommandAgentChunks(t, size, logPath, chunks)
	assert.Equal(t, 0, res.ExitCode)
	assert.Equal(t, SignalBlocked, ar.Signal)
	assert.Equal(t, "needs a key", ar.SignalText)
	assert.Len(t, ar.FinalText, maxFinalText)
	assert.True(t, strings.HasSuffix(ar.FinalText, string(produceLine)+"RUNR_STATUS: blocked: needs a key\n"), "the final text ends with the output")
	fi, err := os.Stat(logPath)
	require.NoError(t, err)
	assert.Equal(t, res.Bytes, fi.Size())
	assert.Equal(t, int64(size+len("RUNR_STATUS: blocked: needs a key\n")), fi.Size())
}

// BenchmarkCommandAgentOutput is a command agent's call as the supervisor
// makes it: a real process printing 80-byte lines, every byte to the log,
// every line through the command adapter's parser.
func BenchmarkCommandAgentOutput(b *testing.B) {
	const size = 80 * 3 << 20
	logPath := filepath.Join(b.TempDir(), "call.log")
	b.ReportAllocs()
	b.SetBytes(size)
	for b.Loop() {
		if err := os.Remove(logPath); err != nil && !os.IsNotExist(err) {
			b.Fatal(err)
		}
		ar, res := runCommandAgentChunks(b, size, logPath, true)
		if res.ExitCode != 0 || ar.Signal != SignalBlocked {
			b.Fatalf("exit %d, signal %q", res.ExitCode, ar.Signal)
		}
	}
}

// BenchmarkCommandParserLine is the parser alone on lines that cannot signal.
func BenchmarkCommandParserLine(b *testing.B) {
	a, err := Lookup("command")
	if err != nil {
		b.Fatal(err)
	}
	p := a.NewParser(Request{Prompt: "do it\nRUNR_STATUS: done\n"})
	line := produceLine[:len(produceLine)-1]
	b.ReportAllocs()
	b.SetBytes(int64(len(produceLine)))
	for b.Loop() {
		p.Line(line)
	}
}

func TestTailBuffer(t *testing.T) {
	tests := []struct {
		name  string
		max   int
		lines []string
		want  string
	}{
		{"empty", 8, nil, ""},
		{"under", 8, []string{"ab"}, "ab\n"},
		{"exact", 8, []string{"abc", "def"}, "abc\ndef\n"},
		{"wraps", 8, []string{"abc", "def", "gh"}, "\ndef\ngh\n"},
		{"one line longer than max", 4, []string{"a", "0123456789"}, "789\n"},
		{"cut mid-character", 6, []string{"aé", "bcd"}, "\nbcd\n"},
		{"many lines", 6, strings.Split("a b c d e f g", " "), "e\nf\ng\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := tailBuffer{max: tt.max}
			for _, l := range tt.lines {
				tb.writeLine([]byte(l))
			}
			assert.Equal(t, tt.want, tb.String())
		})
	}
}

// The ring keeps what keeping everything and cutting the end would.
func TestTailBufferAgreesWithCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		size := 1 + rng.IntN(64)
		tb := tailBuffer{max: size}
		var all []byte
		for range rng.IntN(50) {
			n := rng.IntN(2*size + 1)
			line := bytes.Repeat([]byte("xé"), n)[:n]
			tb.writeLine(line)
			all = append(append(all, line...), '\n')
			require.Equal(t, lastBytes(string(all), size), tb.String(), "trial %d", trial)
			require.LessOrEqual(t, cap(tb.buf), 2*size+8)
		}
	}
}

// detectSignalLine is the rule of signalDetector.line as first written, one
// string per line: the fast path must agree with it on every line.
func detectSignalLine(line, promise, prompt string, signal Signal, text string) (Signal, string) {
	echoes := map[string]bool{}
	for _, l := range strings.Split(prompt, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			echoes[l] = true
		}
	}
	line = strings.TrimSpace(line)
	if line == "" || echoes[line] {
		return signal, text
	}
	if line == strings.TrimSpace(promise) {
		return SignalDone, ""
	}
	if s, t, ok := parseStatusLine(line); ok {
		return s, t
	}
	return signal, text
}

func FuzzSignalDetector(f *testing.F) {
	f.Add([]byte("work\nRUNR_STATUS: done\n"), "", "RUNR_STATUS: done")
	f.Add([]byte("  RUNR_STATUS: blocked: key \r\n<promise>COMPLETE</promise>\n"), "", "x")
	f.Add([]byte("<done/>\n RUNR_STATUS:failed\n"), " <done/> ", "<done/>")
	f.Add([]byte("\u00a0RUNR_STATUS: DONE\u2003\n\n"), "RUNR_STATUS: done", "")
	f.Fuzz(func(t *testing.T, out []byte, promise, prompt string) {
		if promise == "" {
			promise = DefaultPromise
		}
		d := newSignalDetector(promise, prompt)
		var want Signal
		var wantText string
		for line := range bytes.SplitSeq(out, []byte("\n")) {
			d.line(line)
			want, wantText = detectSignalLine(string(line), promise, prompt, want, wantText)
			if d.signal != want || d.text != wantText {
				t.Fatalf("line %q: got %q %q, want %q %q", line, d.signal, d.text, want, wantText)
			}
		}
	})
}

// Whatever aiderErrLine matches, the cheap test in front of it lets through.
func FuzzAiderErrorFilter(f *testing.F) {
	for _, s := range []string{"Error: x", "API Error: y", "litellm.RateLimitError: z", "The API provider is down",
		"rate limit was exceeded", "Missing these environment variables:", "AUTHENTICATIONERROR", "ſome error", "ERRor"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if aiderErrLine().Match(line) && !mayBeAiderError(line) {
			t.Fatalf("%q matches aiderErrLine but the filter drops it", line)
		}
		if aiderTokens().Match(line) && aiderUsage(line) == nil {
			t.Fatalf("%q matches aiderTokens but aiderUsage drops it", line)
		}
	})
}
