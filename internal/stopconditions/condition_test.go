package stopconditions

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConditions(t *testing.T) {
	repo := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "out"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "out", "new.txt"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "old.txt"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "NOTES.md"), []byte("status: DONE\n"), 0o644))

	base := func(edit func(*Snapshot)) *Snapshot {
		s := &Snapshot{RepoDir: repo, StartFiles: map[string]bool{"old.txt": true}}
		if edit != nil {
			edit(s)
		}
		return s
	}
	verify := func(passed ...bool) func(*Snapshot) {
		return func(s *Snapshot) {
			for i, p := range passed {
				s.Verify = append(s.Verify, Check{Command: []string{"go test ./...", "make lint", "go vet ./..."}[i], Passed: p})
			}
		}
	}

	tests := []struct {
		name     string
		cond     Condition
		snap     *Snapshot
		met      bool
		progress float64
		message  string
	}{
		{"max_iterations below", maxIterations{count: 10}, base(func(s *Snapshot) { s.Iteration = 4 }), false, 0.4, "4 iterations (limit 10)"},
		{"max_iterations reached", maxIterations{count: 10}, base(func(s *Snapshot) { s.Iteration = 10 }), true, 1, "10 iterations (limit 10)"},
		{"max_iterations beyond", maxIterations{count: 10}, base(func(s *Snapshot) { s.Iteration = 12 }), true, 1, "12 iterations (limit 10)"},
		{"max_duration below", maxDuration{d: 10 * time.Minute}, base(func(s *Snapshot) { s.Elapsed = 150 * time.Second }), false, 0.25, "2m30s elapsed (limit 10m)"},
		{"max_duration reached", maxDuration{d: 10 * time.Minute}, base(func(s *Snapshot) { s.Elapsed = 10 * time.Minute }), true, 1, "10m elapsed (limit 10m)"},
		{"test_failure_streak below", testFailureStreak{count: 3}, base(func(s *Snapshot) { s.TestFailStreak = 1 }), false, 1.0 / 3, "1 failed verify run in a row (limit 3)"},
		{"test_failure_streak reached", testFailureStreak{count: 3}, base(func(s *Snapshot) { s.TestFailStreak = 3 }), true, 1, "3 failed verify runs in a row (limit 3)"},
		{"all_tests_pass no verify yet", allTestsPass{}, base(nil), false, 0, "no verify run yet"},
		{"all_tests_pass some failed", allTestsPass{}, base(verify(true, false)), false, 0.5, "1 of 2 verify commands passed"},
		{"all_tests_pass all passed", allTestsPass{}, base(verify(true, true, true)), true, 1, "3 of 3 verify commands passed"},
		{"specific_tests_pass one missing", specificTestsPass{tests: []string{"go test ./...", "go vet ./..."}}, base(verify(true, true)),
			false, 0.5, `1 of 2 named verify commands passed; not passed: "go vet ./..."`},
		{"specific_tests_pass one failed", specificTestsPass{tests: []string{"make lint"}}, base(verify(true, false)),
			false, 0, `0 of 1 named verify commands passed; not passed: "make lint"`},
		{"specific_tests_pass all passed", specificTestsPass{tests: []string{"make lint", "go test ./..."}}, base(verify(true, true, false)),
			true, 1, "2 of 2 named verify commands passed"},
		{"no_progress below", noProgress{iterations: 4}, base(func(s *Snapshot) { s.NoProgress = 3 }), false, 0.75, "3 iterations without progress (limit 4)"},
		{"no_progress reached", noProgress{iterations: 4}, base(func(s *Snapshot) { s.NoProgress = 4 }), true, 1, "4 iterations without progress (limit 4)"},
		{"file_created new", fileCreated{path: "out/new.txt"}, base(nil), true, 1, "out/new.txt was created"},
		{"file_created existed at start", fileCreated{path: "old.txt"}, base(nil), false, 0, "old.txt already existed when the run started"},
		{"file_created missing", fileCreated{path: "out/none.txt"}, base(nil), false, 0, "out/none.txt does not exist yet"},
		{"file_contains yes", fileContains{path: "NOTES.md", content: "DONE"}, base(nil), true, 1, `NOTES.md contains "DONE"`},
		{"file_contains no", fileContains{path: "NOTES.md", content: "FAILED"}, base(nil), false, 0, `NOTES.md does not contain "FAILED"`},
		{"file_contains missing file", fileContains{path: "none.md", content: "x"}, base(nil), false, 0, "none.md cannot be read: no such file or directory"},
		{"output_pattern text met", outputPattern{pattern: "ALL GREEN"}, base(func(s *Snapshot) { s.LastOutput = "...\nALL GREEN\n" }), true, 1, `the agent's output matched "ALL GREEN"`},
		{"output_pattern text is not a regex", outputPattern{pattern: "a.c"}, base(func(s *Snapshot) { s.LastOutput = "abc" }), false, 0, `the agent's output did not match "a.c"`},
		{"output_pattern regex met", outputPattern{pattern: `(?m)^DONE \d+$`, re: regexp.MustCompile(`(?m)^DONE \d+$`)},
			base(func(s *Snapshot) { s.LastOutput = "x\nDONE 42\ny" }), true, 1, `the agent's output matched "(?m)^DONE \\d+$"`},
		{"output_pattern regex not met", outputPattern{pattern: `^DONE$`, re: regexp.MustCompile(`^DONE$`)},
			base(func(s *Snapshot) { s.LastOutput = "NOT DONE" }), false, 0, `the agent's output did not match "^DONE$"`},
		{"on_error no error", onError{}, base(nil), false, 0, "no error this tick"},
		{"on_error any error", onError{}, base(func(s *Snapshot) { s.LastError = &ErrorEvent{Source: SourceVerify, Text: "\nFAIL pkg/a\nmore"} }),
			true, 1, "verify error: FAIL pkg/a"},
		{"on_error pattern matches", onError{re: regexp.MustCompile(`(?i)out of memory`)},
			base(func(s *Snapshot) { s.LastError = &ErrorEvent{Source: SourceAgent, Text: "fatal: Out Of Memory"} }), true, 1, `agent error matched "(?i)out of memory"`},
		{"on_error pattern does not match", onError{re: regexp.MustCompile(`panic`)},
			base(func(s *Snapshot) { s.LastError = &ErrorEvent{Source: SourceAgent, Text: "exit 1"} }), false, 0, `agent error did not match "panic"`},
		{"user_signal none", userSignal{}, base(nil), false, 0, "no stop requested"},
		{"user_signal requested", userSignal{}, base(func(s *Snapshot) { s.StopRequested = true }), true, 1, "a stop was requested with runr stop"},
		{"never", never{}, base(func(s *Snapshot) { s.StopRequested, s.Iteration = true, 1000 }), false, 0, "never met"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.cond.Evaluate(tt.snap)
			assert.Equal(t, tt.met, got.Met, "met")
			assert.InDelta(t, tt.progress, got.Progress, 1e-9, "progress")
			assert.Equal(t, tt.message, got.Message)
		})
	}
}

func TestCompositions(t *testing.T) {
	half := maxIterations{count: 10}       // 5 of 10 in the snapshot below
	quarter := testFailureStreak{count: 4} // 1 of 4
	met := noProgress{iterations: 2}       // 2 of 2
	s := &Snapshot{Iteration: 5, TestFailStreak: 1, NoProgress: 2, LastOutput: "build ok\nwarning: deprecated API"}

	tests := []struct {
		name     string
		cond     Condition
		met      bool
		progress float64
		message  string
	}{
		{"any: none met, max progress", anyOf{conditions: []Condition{quarter, half}}, false, 0.5, "max_iterations: 5 iterations (limit 10)"},
		{"any: one met", anyOf{conditions: []Condition{half, met, quarter}}, true, 1, "no_progress: 2 iterations without progress (limit 2)"},
		{"all: mean progress", all{conditions: []Condition{half, quarter, met}}, false, (0.5 + 0.25 + 1) / 3,
			"1 of 3 conditions met; not yet max_iterations: 5 iterations (limit 10)"},
		{"all: every one met", all{conditions: []Condition{met, anyOf{conditions: []Condition{half, met}}}}, true, 1, "2 of 2 conditions met"},
		{"all of any", all{conditions: []Condition{anyOf{conditions: []Condition{never{}, quarter}}, anyOf{conditions: []Condition{half, never{}}}}},
			false, (0.25 + 0.5) / 2, "0 of 2 conditions met; not yet any: test_failure_streak: 1 failed verify run in a row (limit 4)"},
		{"not of a pattern that matches", not{condition: outputPattern{pattern: "warning"}}, false, 0, `not output_pattern: the agent's output matched "warning"`},
		{"not of a pattern that does not match", not{condition: outputPattern{pattern: "error"}}, true, 1, `not output_pattern: the agent's output did not match "error"`},
		{"not of a half-way count", not{condition: half}, true, 1, "not max_iterations: 5 iterations (limit 10)"},
		{"all with not: success when output clean and count reached",
			all{conditions: []Condition{met, not{condition: outputPattern{pattern: "error:"}}}}, true, 1, "2 of 2 conditions met"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.cond.Evaluate(s)
			assert.Equal(t, tt.met, got.Met, "met")
			assert.InDelta(t, tt.progress, got.Progress, 1e-9, "progress")
			assert.Equal(t, tt.message, got.Message)
		})
	}
}

func TestDecodedConditionsEvaluate(t *testing.T) {
	conds, err := decodeYAML(t, "stop.success", `
- type: all
  conditions:
    - type: all_tests_pass
    - type: not
      condition: {type: output_pattern, pattern: 'TODO|FIXME', regex: true}
`)
	require.NoError(t, err)
	s := &Snapshot{Verify: []Check{{Command: "go test ./...", Passed: true}}, LastOutput: "done"}
	assert.True(t, conds[0].Evaluate(s).Met)
	s.LastOutput = "left a FIXME in main.go"
	assert.False(t, conds[0].Evaluate(s).Met)
}
