package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A process whose start is recorded does nothing before OnStart returned:
// when the record fails (as when runr dies there, which closes the gate
// the same way) the program never runs.
func TestOnStartGatesTheProgram(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	script := "touch " + marker
	errRecord := errors.New("disk full")
	var seen Proc
	_, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", script}, OnStart: func(p Proc) error {
		seen = p
		return errRecord
	}})
	require.ErrorIs(t, err, errRecord)
	assert.NoFileExists(t, marker, "the program ran though its start was not recorded")
	assert.False(t, GroupAlive(seen.PGID), "the gated process is gone")

	// Recorded, it runs as it would without the gate: same pid, arguments
	// and exit status.
	var pid int
	res, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", script + "; echo $$; exit 3"}, OnStart: func(p Proc) error {
		pid = p.PID
		_, statErr := os.Stat(marker)
		assert.True(t, os.IsNotExist(statErr), "the program ran before OnStart returned")
		return nil
	}})
	require.NoError(t, err)
	assert.FileExists(t, marker)
	assert.Equal(t, 3, res.ExitCode)
	assert.Contains(t, string(res.Tail), strconv.Itoa(pid))
}

// `sh -c SCRIPT` behind the gate runs in the gate's own shell: the script
// sees the same $0, arguments and line numbers as without the gate, and
// fd 3 (the gate's pipe) is closed before it runs.
func TestGatedShellScriptRunsAsWithoutTheGate(t *testing.T) {
	script := `echo "0=$0 n=$# args=$*"; echo "fd3: $(ls /proc/self/fd/3 2>/dev/null || echo closed)"; nosuchcommand-xyz`
	for _, argv := range [][]string{
		{"sh", "-c", script},
		{"sh", "-c", script, "name", "a b", "c"},
	} {
		plain, err := Run(context.Background(), Spec{Argv: argv})
		require.NoError(t, err)
		gated, err := Run(context.Background(), Spec{Argv: argv, OnStart: func(Proc) error { return nil }})
		require.NoError(t, err)
		assert.Equal(t, string(plain.Tail), string(gated.Tail), "argv %q", argv)
		assert.Equal(t, plain.ExitCode, gated.ExitCode)
		assert.Contains(t, string(gated.Tail), "fd3: closed")
		assert.Contains(t, string(gated.Tail), ": 1: nosuchcommand-xyz", "the script's line numbers are its own")
	}
}

// Only a program asked for as sh runs in the gate's own shell: another
// name for the same file (a multi-call binary) is another program.
func TestGateShellShortcutOnlyForSh(t *testing.T) {
	_, ok := shellScript(gateShell, []string{"sh", "-c", "true"})
	assert.True(t, ok)
	_, ok = shellScript(gateShell, []string{"/bin/sh", "-c", "true"})
	assert.True(t, ok)
	_, ok = shellScript(gateShell, []string{"ash", "-c", "true"})
	assert.False(t, ok)
	_, ok = shellScript(gateShell, []string{"sh", "-e", "-c", "true"})
	assert.False(t, ok)
	_, ok = shellScript("/usr/bin/env", []string{"sh", "-c", "true"})
	assert.False(t, ok)
}
