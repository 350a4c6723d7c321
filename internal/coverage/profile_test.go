package coverage

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// lines is a changed file's lines from..to, each holding code.
func lines(from, to int) []Line {
	var out []Line
	for n := from; n <= to; n++ {
		out = append(out, Line{N: n, Text: "x := 1"})
	}
	return out
}

// source is a work tree and a coverage directory holding the recorded
// profiles named.
func source(t *testing.T, profiles ...string) Source {
	t.Helper()
	s := Source{WorkTree: t.TempDir(), Dir: filepath.Join(t.TempDir(), "coverage")}
	require.NoError(t, s.Clear())
	for _, p := range profiles {
		data, err := os.ReadFile(filepath.Join("testdata", "profiles", p))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(s.Dir, p), data, 0o600))
	}
	return s
}

// The recorded profiles of the real tools, each on the same change: the
// first function was run by its test, the second, added with it, was not.
func TestJudgeRecordedProfiles(t *testing.T) {
	tests := []struct {
		name    string
		profile string
		changed Changed
		run     int
		exec    int
		missed  []stopreasons.Uncovered
	}{
		{
			// go test -coverprofile: Add (4-6) ran, Twice (8-12; its
			// closing brace is in no block) did not; the profile names
			// files by import path; the test file and README are left out.
			name: "go", profile: "go.out",
			changed: Changed{"calc/calc.go": lines(3, 13), "calc/calc_test.go": lines(1, 9), "README.md": lines(1, 3)},
			run:     3, exec: 8,
			missed: []stopreasons.Uncovered{{File: "calc/calc.go", Lines: "8-12"}},
		},
		{
			// coverage.py's lcov: add ran; twice's def line ran at import,
			// its body did not; the profile also names pytest's own files
			// outside the work tree.
			name: "python lcov", profile: "py.lcov",
			changed: Changed{"calc.py": lines(1, 8), "test_calc.py": lines(1, 5)},
			run:     6, exec: 9,
			missed: []stopreasons.Uncovered{{File: "calc.py", Lines: "6-8"}},
		},
		{
			// coverage.py's Cobertura XML, file names relative to a source
			// directory elsewhere.
			name: "python xml", profile: "py.xml",
			changed: Changed{"calc.py": lines(5, 8)},
			run:     1, exec: 4,
			missed: []stopreasons.Uncovered{{File: "calc.py", Lines: "6-8"}},
		},
		{
			// node --test's lcov reporter.
			name: "node lcov", profile: "node.lcov",
			changed: Changed{"calc.js": lines(1, 12)},
			run:     6, exec: 12,
			missed: []stopreasons.Uncovered{{File: "calc.js", Lines: "5-10"}},
		},
		{
			// A changed Go file no profile names counts as not run, since
			// the profile covers Go; its blank and brace lines are left out.
			name: "unnamed file of a profiled language", profile: "go.out",
			changed: Changed{"calc/more.go": {{N: 1, Text: "package calc"}, {N: 2, Text: ""}, {N: 3, Text: "func More() int {"}, {N: 4, Text: "\treturn 2"}, {N: 5, Text: "}"}}},
			run:     0, exec: 3,
			missed: []stopreasons.Uncovered{{File: "calc/more.go", Lines: "1,3-4"}},
		},
		{
			// A Python file beside a Go profile: no profile covers Python.
			name: "file of an unprofiled language", profile: "go.out",
			changed: Changed{"tool.py": lines(1, 4)},
			run:     0, exec: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := source(t, tt.profile)
			r := s.Read(tt.changed)
			assert.Equal(t, 1, r.Profiles, r.Notes)
			v := Judge(tt.changed, r)
			assert.Equal(t, tt.exec, v.Executable)
			assert.Equal(t, tt.run, v.Run)
			assert.Equal(t, tt.missed, v.Uncovered)
		})
	}
}

// Profiles are written by what the agent controls: each bad one ends in a
// message for the feedback, and nothing outside the work tree and the
// coverage directory is read.
func TestUntrustedProfiles(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.out")
	require.NoError(t, os.WriteFile(outside, []byte("mode: set\ncalc.go:1.1,9.1 1 1\n"), 0o600))
	changed := Changed{"calc.go": lines(1, 9)}
	tests := []struct {
		name  string
		make  func(t *testing.T, path string)
		note  string
		count bool // the profile was read
	}{
		{"symlink to a file outside", func(t *testing.T, p string) { require.NoError(t, os.Symlink(outside, p)) }, "is a symbolic link", false},
		{"malformed", func(t *testing.T, p string) { write(t, p, "mode: set\nthis is not a block\n") }, "line 2 is not a Go cover profile block", false},
		{"unknown format", func(t *testing.T, p string) { write(t, p, "hello\n") }, "is not a Go cover profile, an LCOV tracefile or Cobertura XML", false},
		{"empty", func(t *testing.T, p string) { write(t, p, "") }, "is empty", false},
		{"broken XML", func(t *testing.T, p string) { write(t, p, "<coverage><class filename='calc.go'>") }, "is not well-formed Cobertura XML", false},
		{"a line too long", func(t *testing.T, p string) { write(t, p, "TN:\nSF:"+strings.Repeat("a", maxLine+10)+"\n") }, "has a line longer than", false},
		{"XML text without a tag", func(t *testing.T, p string) { write(t, p, "<coverage>"+strings.Repeat("a", maxLine+10)) }, "without a tag", false},
		{"1 GB", func(t *testing.T, p string) {
			f, err := os.Create(p)
			require.NoError(t, err)
			require.NoError(t, f.Truncate(1<<30))
			require.NoError(t, f.Close())
		}, "larger than the 256 MiB", false},
		{"FIFO", func(t *testing.T, p string) { require.NoError(t, syscall.Mkfifo(p, 0o600)) }, "is not a regular file", false},
		{"names files outside the work tree", func(t *testing.T, p string) {
			write(t, p, "TN:\nSF:/etc/calc.go\nDA:1,1\nend_of_record\nSF:../calc.go\nDA:2,1\nend_of_record\n")
		}, "name 2 files outside the work tree", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := source(t)
			tt.make(t, filepath.Join(s.Dir, "p.out"))
			r := s.Read(changed)
			require.NotEmpty(t, r.Notes)
			assert.Contains(t, strings.Join(r.Notes, "\n"), tt.note)
			assert.Equal(t, tt.count, r.Profiles == 1)
			// No line of the outside file was taken for the work tree's.
			v := Judge(changed, r)
			assert.Zero(t, v.Run)
			assert.Contains(t, v.Feedback(0.8), tt.note)
		})
	}
}

// A coverage directory replaced by a link to a directory elsewhere is not
// read through.
func TestCoverageDirReplacedByALink(t *testing.T) {
	elsewhere := t.TempDir()
	write(t, filepath.Join(elsewhere, "p.out"), "mode: set\ncalc.go:1.1,9.1 1 1\n")
	s := source(t)
	require.NoError(t, os.RemoveAll(s.Dir))
	require.NoError(t, os.Symlink(elsewhere, s.Dir))
	r := s.Read(Changed{"calc.go": lines(1, 9)})
	assert.Zero(t, r.Profiles)
	assert.Contains(t, strings.Join(r.Notes, "\n"), "was replaced by something other than a directory")
	// Clear puts a directory of runr's back, leaving the other alone.
	require.NoError(t, s.Clear())
	fi, err := os.Lstat(s.Dir)
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	assert.FileExists(t, filepath.Join(elsewhere, "p.out"))
}

func write(t *testing.T, p, s string) {
	t.Helper()
	require.NoError(t, os.WriteFile(p, []byte(s), 0o600))
}

// Clear leaves no profile for the next verify to find, in the coverage
// directory or where the work-tree globs point, and Read finds those.
func TestClearAndWorkTreeProfiles(t *testing.T) {
	s := source(t, "node.lcov")
	s.Patterns = []string{"coverage/lcov.info"}
	require.NoError(t, os.MkdirAll(filepath.Join(s.WorkTree, "coverage"), 0o700))
	data, err := os.ReadFile(filepath.Join("testdata", "profiles", "node.lcov"))
	require.NoError(t, err)
	write(t, filepath.Join(s.WorkTree, "coverage", "lcov.info"), string(data))
	write(t, filepath.Join(s.WorkTree, "calc.js"), "kept")

	assert.True(t, IsProfile("coverage/lcov.info", s.Patterns))
	assert.False(t, IsProfile("calc.js", s.Patterns))
	assert.Equal(t, 2, s.Read(Changed{"calc.js": lines(1, 2)}).Profiles)

	require.NoError(t, s.Clear())
	assert.NoFileExists(t, filepath.Join(s.WorkTree, "coverage", "lcov.info"))
	assert.NoFileExists(t, filepath.Join(s.Dir, "node.lcov"))
	assert.DirExists(t, s.Dir)
	assert.FileExists(t, filepath.Join(s.WorkTree, "calc.js"))
	r := s.Read(Changed{"calc.js": lines(1, 2)})
	assert.Zero(t, r.Profiles)
	// No profile at all: the changed code counts as not run.
	v := Judge(Changed{"calc.js": lines(1, 2)}, r)
	assert.Equal(t, 2, v.Executable)
	assert.Contains(t, v.Feedback(0.5), "no coverage profile was read")
}

func TestRanges(t *testing.T) {
	assert.Equal(t, "12-15,20", Ranges([]int{20, 12, 13, 14, 15}))
	assert.Equal(t, "1", Ranges([]int{1, 1}))
	assert.Equal(t, "", Ranges(nil))
}

// The stop's details list at most MaxUncovered files and count the rest.
func TestUntestedIsBounded(t *testing.T) {
	v := Verdict{Executable: 300, Run: 100}
	for i := range 150 {
		v.Uncovered = append(v.Uncovered, stopreasons.Uncovered{File: filepath.Join("f", string(rune('a'+i%26)), "x.go"), Lines: "1"})
	}
	u := v.Untested(0.8)
	assert.Len(t, u.Uncovered, stopreasons.MaxUncovered)
	assert.Equal(t, 50, u.UncoveredMore)
	assert.InDelta(t, 0.3333, *u.Covered, 0.0001)
	assert.Equal(t, stopreasons.UntestedCoverage, u.Kind)
}

// A profile glob may not reach outside the work tree or the coverage
// directory.
func TestCheckPattern(t *testing.T) {
	for _, ok := range []string{"cover.out", "coverage/lcov.info", "**/coverage.xml", "$RUNR_COVERAGE_DIR/go.out", "$RUNR_COVERAGE_DIR/**/*.info"} {
		assert.NoError(t, CheckPattern(ok), ok)
	}
	for p, msg := range map[string]string{
		"/etc/passwd":             "reaches outside the work tree",
		"../other/lcov.info":      "reaches outside the work tree",
		"a/../../x":               "reaches outside the work tree",
		"$RUNR_COVERAGE_DIR/../x": "reaches outside the work tree",
		"$HOME/cover.out":         "only $RUNR_COVERAGE_DIR/ may start a profile path",
		"cover[.out":              "is not a valid glob",
	} {
		err := CheckPattern(p)
		if assert.Error(t, err, p) {
			assert.Contains(t, err.Error(), msg, p)
		}
	}
}
