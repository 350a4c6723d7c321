package coverage

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadProfile: whatever a verify writes as a profile, reading it never
// panics, and it marks only changed lines of changed files.
func FuzzReadProfile(f *testing.F) {
	for _, name := range []string{"go.out", "py.lcov", "py.xml", "node.lcov"} {
		data, err := os.ReadFile(filepath.Join("testdata", "profiles", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("mode: set\ncalc.go:1.1,0.0 1 1\n"))
	f.Add([]byte("SF:/abs/calc.go\nDA:-1,1\nend_of_record\n"))
	f.Add([]byte("<coverage><sources><source>/x</source></sources><class filename='../calc.go'><line number='2' hits='x'/></class></coverage>"))
	changed := Changed{"calc.go": {{N: 1, Text: "a"}, {N: 2, Text: "b"}}, "calc.py": {{N: 5, Text: "c"}}}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := Source{WorkTree: t.TempDir(), Dir: t.TempDir()}
		if err := os.WriteFile(filepath.Join(s.Dir, "p"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		r := s.Read(changed)
		for file, seen := range r.lines {
			if _, ok := changed[file]; !ok {
				t.Fatalf("marked %q, which did not change", file)
			}
			for n := range seen {
				if n != 1 && n != 2 && n != 5 {
					t.Fatalf("marked line %d of %s, which did not change", n, file)
				}
			}
		}
		v := Judge(changed, r)
		if v.Run > v.Executable || v.Covered() < 0 || v.Covered() > 1 {
			t.Fatalf("verdict %+v", v)
		}
	})
}
