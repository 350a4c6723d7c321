package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On a terminal, --raw shows the agent's control characters instead of
// letting them act; off a terminal it copies the bytes as recorded.
func TestRawLogVisibleOnATerminal(t *testing.T) {
	runDir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(runDir, "logs"), 0o755))
	raw := "clear \x1b[2J\x1b]0;title\x07 done\r\n" + strings.Repeat("x", 70<<10) + "\n\xff end\n"
	require.NoError(t, os.WriteFile(filepath.Join(runDir, "logs", "tick-0001-implement.log"), []byte(raw), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(runDir, "logs", "tick-0002-verify.log"), []byte("verify\n"), 0o644))

	var out bytes.Buffer
	require.NoError(t, rawLog(&IOStreams{Out: &out, OutTTY: true}, runDir, "r", 1))
	assert.NotContains(t, out.String(), "\x1b")
	assert.NotContains(t, out.String(), "\x07")
	assert.Contains(t, out.String(), `clear \x1b[2J\x1b]0;title\x07 done`)
	assert.Contains(t, out.String(), `\xff end`)
	assert.Equal(t, 70<<10, strings.Count(out.String(), "x")-strings.Count(`\x1b\x1b\x07\xff`, "x"), "a line longer than the read buffer is printed whole")

	out.Reset()
	require.NoError(t, rawLog(&IOStreams{Out: &out}, runDir, "r", 1))
	assert.Equal(t, raw, out.String())

	// A tick without an agent call shows its only log; no tick: the last call.
	out.Reset()
	require.NoError(t, rawLog(&IOStreams{Out: &out}, runDir, "r", 2))
	assert.Equal(t, "verify\n", out.String())
	out.Reset()
	require.NoError(t, rawLog(&IOStreams{Out: &out}, runDir, "r", 0))
	assert.Equal(t, raw, out.String())
}
