package proc

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	dir := "/proc/self/fd"
	if runtime.GOOS == "darwin" {
		dir = "/dev/fd"
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	return len(entries)
}

// A thousand calls, through every kind of ending (normal exit, a log file,
// stdin from a reader, a timeout, an abort, a program that cannot start),
// leave the number of open descriptors where it was.
func TestRunLeaksNoDescriptors(t *testing.T) {
	logPath := t.TempDir() + "/tick.log"
	kinds := []Spec{
		{Argv: []string{"true"}},
		{Argv: []string{"sh", "-c", "echo out; echo err >&2"}, LogPath: logPath},
		{Argv: []string{"cat"}, Stdin: strings.NewReader("prompt\n")},
		{Argv: []string{"sh", "-c", "echo stop; exec sleep 5"}, OnStdoutLine: func([]byte) bool { return false }},
		{Argv: []string{"sleep", "5"}, Timeout: time.Millisecond},
		{Argv: []string{"runr-no-such-program"}},
	}
	// Warm up: the first calls open descriptors that stay (the poller's epoll
	// instance and its wakeup pipe).
	for _, spec := range kinds {
		_, _ = Run(context.Background(), spec)
	}
	before := openFDs(t)
	for i := range 1000 {
		spec := kinds[i%len(kinds)]
		res, err := Run(context.Background(), spec)
		if spec.Argv[0] == "runr-no-such-program" {
			require.ErrorIs(t, err, ErrNotFound)
			continue
		}
		require.NoError(t, err, "call %d: %v", i, spec.Argv)
		if spec.Timeout > 0 {
			require.True(t, res.TimedOut, "call %d", i)
		}
	}
	assert.Equal(t, before, openFDs(t), "open descriptors after 1,000 calls")
}

// Output on stderr alone is output: a process that only writes there is not
// idle.
func TestRunStderrOnlyIsNotIdle(t *testing.T) {
	res, _, err := run(t, context.Background(), `i=0; while [ $i -lt 20 ]; do echo tick $i >&2; sleep 0.05; i=$((i+1)); done`, func(s *Spec) {
		s.IdleTimeout = 500 * time.Millisecond
		s.OnStdoutLine = func([]byte) bool { return true }
	})
	require.NoError(t, err)
	assert.False(t, res.Idle)
	assert.Equal(t, 0, res.ExitCode)
	assert.Contains(t, string(res.Tail), "tick 19\n")
}

// A log that fails mid-run (a full disk) is reported, but the process is
// still drained to its end, never blocked on a full pipe, and its tail kept.
func TestRunLogWriteFailsMidRun(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	res, _, err := run(t, context.Background(), `head -c 1000000 /dev/zero | tr '\0' x; echo; echo the end`, func(s *Spec) {
		s.LogPath = "/dev/full"
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/dev/full")
	assert.Equal(t, 0, res.ExitCode, "the process ran to its end")
	assert.Equal(t, int64(1000000+1+len("the end\n")), res.Bytes)
	assert.True(t, strings.HasSuffix(string(res.Tail), "\nthe end\n"))
}

// A process that exits on its own during the grace period after SIGTERM is
// not killed, and its own exit status is reported.
func TestRunExitsDuringGrace(t *testing.T) {
	res, _, err := run(t, context.Background(), `trap 'echo bye; exit 7' TERM; echo ready; while :; do sleep 0.01; done`, func(s *Spec) {
		s.KillGrace = 20 * time.Second
		s.OnStdoutLine = func(line []byte) bool { return string(line) != "ready" }
	})
	require.NoError(t, err)
	assert.True(t, res.Aborted)
	assert.False(t, res.Killed, "it left before the grace ran out")
	assert.Equal(t, 7, res.ExitCode)
	assert.Contains(t, string(res.Tail), "bye\n")
	assert.Less(t, res.Duration, 15*time.Second, "Run did not wait out the grace")
}
