package proc

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Waiting is not stalling: a call that prints nothing but keeps a CPU busy,
// or writes a file steadily, for three times the idle timeout runs to its
// end; one that prints nothing and sleeps is stopped as idle, and the
// result says what was last seen of it.
func TestIdleTimeoutJudgesSignsOfLife(t *testing.T) {
	const idle = 300 * time.Millisecond
	exe, err := os.Executable()
	require.NoError(t, err)
	tests := []struct {
		name string
		env  string
		idle bool
	}{
		{"busy CPU", "cpu:" + (3 * idle).String(), false},
		{"writing a file", "write:" + (3 * idle).String() + ":" + filepath.Join(t.TempDir(), "out"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), Spec{Argv: []string{exe}, Env: append(os.Environ(), quietEnv+"="+tt.env),
				IdleTimeout: idle, Timeout: time.Minute})
			require.NoError(t, err)
			assert.False(t, res.Idle, "stopped as idle after %s", res.Duration)
			assert.Equal(t, 0, res.ExitCode)
			assert.GreaterOrEqual(t, res.Duration, 3*idle)
			assert.Empty(t, res.Bytes, "it printed nothing")
		})
	}
	t.Run("asleep", func(t *testing.T) {
		before := time.Now()
		res, _, err := run(t, context.Background(), `sleep 30`, func(s *Spec) { s.IdleTimeout = idle })
		require.NoError(t, err)
		assert.True(t, res.Idle)
		// Starting shows signs of life of its own (the program loaded).
		assert.Contains(t, []string{SignStart, SignIO, SignCPU, SignProcesses}, res.LastSign)
		assert.False(t, res.LastSignAt.Before(before))
		assert.GreaterOrEqual(t, time.Since(res.LastSignAt), idle)
	})
	t.Run("blocked on a pipe after output", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "fifo")
		require.NoError(t, syscall.Mkfifo(fifo, 0o600))
		res, _, err := run(t, context.Background(), `echo started; cat `+fifo, func(s *Spec) { s.IdleTimeout = idle })
		require.NoError(t, err)
		assert.True(t, res.Idle)
		assert.NotEmpty(t, res.LastSign)
		assert.GreaterOrEqual(t, time.Since(res.LastSignAt), idle)
	})
}
