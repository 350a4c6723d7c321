package coverage

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadLCOV reads a 32 MiB LCOV profile whose every line is about
// the changed file: the worst case of a large profile, since every line is
// parsed and marked.
func BenchmarkReadLCOV(b *testing.B) {
	s := Source{WorkTree: b.TempDir(), Dir: b.TempDir()}
	f, err := os.Create(filepath.Join(s.Dir, "big.lcov"))
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString("TN:\nSF:calc.go\n")
	size := int64(0)
	for size < 32<<20 {
		n, _ := w.WriteString("DA:1,1\n")
		size += int64(n)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	changed := Changed{"calc.go": {{N: 1, Text: "package calc"}}}
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		if r := s.Read(changed); r.Profiles != 1 {
			b.Fatal(r.Notes)
		}
	}
}
