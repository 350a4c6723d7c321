package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/coverage"
	"github.com/runr-dev/runr/internal/proc"
)

// The runners' summaries are read from the verify's log, not only from the
// tail of a command's output kept in memory: a command that printed much
// after go test's "ok" line (make test: go test, then a long lint) still
// shows that tests ran, and only "[no test files]" packages in its tail do
// not make it a verify that ran none.
func TestCountTestsReadsTheLog(t *testing.T) {
	later := strings.Repeat("? example.com/m/zz [no test files]\n", 3000) // about 100 KiB
	out := "$ make test\nok  \texample.com/m/calc\t0.01s\n" + later
	log := filepath.Join(t.TempDir(), "tick-0002-verify.log")
	require.NoError(t, os.WriteFile(log, []byte(out), 0o600))
	tail := []byte(out[len(out)-proc.DefaultTailBytes:])
	checks := []CheckFacts{{Command: "make test", Process: proc.Result{Tail: tail}}}

	assert.True(t, coverage.CountTests(tail).NoneRan(), "the tail alone says no test ran")
	got := countTests(log, checks)
	assert.Equal(t, map[string]int{coverage.RunnerGo: 1}, got.Ran)
	assert.False(t, got.NoneRan())

	// Without its log, the tails are what is left.
	assert.True(t, countTests(filepath.Join(t.TempDir(), "missing.log"), checks).NoneRan())
}
