package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

func TestWatchTakesNoArgument(t *testing.T) {
	called := false
	require.NoError(t, execute(t, NewCmdWatch(testFactory(), func(o *WatchOptions) error {
		called = true
		assert.False(t, o.InTTY, "a test's stdin is no terminal")
		return nil
	})))
	assert.True(t, called)
	assert.Error(t, execute(t, NewCmdWatch(testFactory(), func(*WatchOptions) error { return nil }), "latest"))
}

// Off a terminal runr watch is a usage error naming what to use instead,
// before it opens the store.
func TestWatchNeedsATerminal(t *testing.T) {
	for _, c := range []struct {
		name          string
		outTTY, inTTY bool
	}{{"neither", false, false}, {"stdout piped", false, true}, {"stdin piped", true, false}} {
		t.Run(c.name, func(t *testing.T) {
			opened := false
			opts := &WatchOptions{IO: &IOStreams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, OutTTY: c.outTTY}, InTTY: c.inTTY}
			opts.Store = func() (*state.Store, error) { opened = true; return nil, nil }
			err := watchRun(opts)
			require.Error(t, err)
			assert.Equal(t, stopreasons.UsageError, stopreasons.CodeOf(err))
			assert.Equal(t, 64, exitCode(err))
			assert.Contains(t, err.Error(), "'runr status'")
			assert.Contains(t, err.Error(), "'runr logs <id> --follow'")
			assert.False(t, opened)
		})
	}
}
