package coverage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The files under testdata/runners are output recorded from the real
// runners (go 1.26, pytest 7.2 with coverage.py 6.5, node 20, cargo 1.95):
// a passing run with tests, and one that ran none.
func TestCountTestsOnRecordedOutput(t *testing.T) {
	tests := []struct {
		file   string
		runner string
		ran    int
	}{
		{"go-pass.txt", RunnerGo, 1},    // one package with tests, one without test files
		{"go-none.txt", RunnerGo, 0},    // go test -run NoSuchTest ./...
		{"go-nofiles.txt", RunnerGo, 0}, // a package without test files
		{"pytest-pass.txt", RunnerPytest, 1},
		{"pytest-full.txt", RunnerPytest, 1},
		{"pytest-deselected.txt", RunnerPytest, 0}, // -k that matches nothing
		{"pytest-empty.txt", RunnerPytest, 0},      // "no tests ran"
		{"node-pass.txt", RunnerNode, 1},           // spec reporter, with the coverage report
		{"node-plain.txt", RunnerNode, 1},          // tap reporter
		{"node-empty.txt", RunnerNode, 0},          // node --test in a directory without a test file
		{"node-empty-spec.txt", RunnerNode, 0},
		{"cargo-pass.txt", RunnerCargo, 1},
		{"cargo-none.txt", RunnerCargo, 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("testdata", "runners", tt.file))
			require.NoError(t, err)
			got := CountTests(out)
			assert.Equal(t, map[string]int{tt.runner: tt.ran}, got.Ran)
			assert.Equal(t, tt.ran == 0, got.NoneRan())
		})
	}
}

// Summary lines of runners not installed here, as their documentation
// shows them, and the mixes a verify with several commands prints.
func TestCountTestsSummaryLines(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		ran     map[string]int
		noneRan bool
	}{
		{"jest", "Test Suites: 1 passed, 1 total\nTests:       1 failed, 2 passed, 3 total\n", map[string]int{RunnerJest: 3}, false},
		{"jest skipped only", "Tests:       2 skipped, 2 total\n", map[string]int{RunnerJest: 0}, true},
		{"jest none", "No tests found, exiting with code 0\n", map[string]int{RunnerJest: 0}, true},
		{"vitest", " Test Files  1 passed (1)\n      Tests  4 passed (4)\n", map[string]int{RunnerVitest: 4}, false},
		{"vitest none", "No test files found, exiting with code 0\n", map[string]int{RunnerVitest: 0}, true},
		{"plain", "3 passed, 0 failed\n", map[string]int{RunnerPlain: 3}, false},
		{"plain none", "0 passed, 0 failed\n", map[string]int{RunnerPlain: 0}, true},
		{"colours", "\x1b[32mok\x1b[0m  \texample.com/m\t0.01s\n", map[string]int{RunnerGo: 1}, false},
		{"one runner ran tests, another none", "ok  \tm/a\t0.1s\n# tests 0\n", map[string]int{RunnerGo: 1, RunnerNode: 0}, false},
		{"nothing recognised", "all good\n", map[string]int{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CountTests([]byte(tt.out))
			assert.Equal(t, tt.ran, got.Ran)
			assert.Equal(t, tt.noneRan, got.NoneRan())
		})
	}
}
