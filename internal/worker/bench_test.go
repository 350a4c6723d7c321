package worker

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkRunLargeOutput streams 50 MB of 80-byte lines through Run the
// way an agent call does: to the call's log, the tail, and a line callback
// that looks at each stdout line (the supervisor's parser).
func BenchmarkRunLargeOutput(b *testing.B) {
	const size, lineLen = 50_000_000, 80
	logPath := filepath.Join(b.TempDir(), "tick-0001-implement.log")
	script := "yes " + strings.Repeat("x", lineLen-1) + " | head -c " + strconv.Itoa(size)
	b.ReportAllocs()
	b.SetBytes(size)
	for b.Loop() {
		if err := os.Remove(logPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			b.Fatal(err)
		}
		lines := 0
		res, err := Run(context.Background(), Spec{
			Argv:    []string{"sh", "-c", script},
			LogPath: logPath,
			OnStdoutLine: func(line []byte) bool {
				lines++
				return !bytes.HasPrefix(line, []byte("RUNR_STATUS: "))
			},
		})
		if err != nil || res.Bytes != size || lines != size/lineLen {
			b.Fatalf("Run: %v, %d bytes, %d lines", err, res.Bytes, lines)
		}
	}
}
