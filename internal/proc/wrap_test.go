package proc

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunWrap: the wrapper runs with the program's found path and
// arguments after its own, past the gate, with the program's pid kept
// through the wrapper's exec.
func TestRunWrap(t *testing.T) {
	var out strings.Builder
	var proc Proc
	res, err := Run(context.Background(), Spec{
		Argv:    []string{"sh", "-c", `echo "$FOO $0 $$"`},
		Wrap:    []string{"/usr/bin/env", "FOO=wrapped"},
		Stdout:  &out,
		OnStart: func(p Proc) error { proc = p; return nil },
	})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", res.Tail)
	f := strings.Fields(out.String())
	require.Len(t, f, 3)
	assert.Equal(t, "wrapped", f[0])
	sh, err := LookPath("sh", "", nil)
	require.NoError(t, err)
	assert.Equal(t, sh, f[1], "the program as found")
	assert.Equal(t, strconv.Itoa(proc.PID), f[2], "env execs the program in the recorded process")
}

// TestRunWrapProgramNotFound: a missing program is ErrNotFound, as
// without a wrapper, and the wrapper never runs.
func TestRunWrapProgramNotFound(t *testing.T) {
	_, err := Run(context.Background(), Spec{Argv: []string{"no-such-program-runr"}, Wrap: []string{"/usr/bin/env"}})
	assert.ErrorIs(t, err, ErrNotFound)
}

// TestRunNamespaces: the process starts in a user namespace of its own
// with its uid mapped to itself.
func TestRunNamespaces(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	var out strings.Builder
	res, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", "cat /proc/self/uid_map; readlink /proc/self/ns/mnt"},
		Namespaces: true, Stdout: &out, OnStart: func(Proc) error { return nil }})
	if errors.Is(err, ErrNamespaces) {
		t.Skipf("this machine refuses user namespaces: %v", err)
	}
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", res.Tail)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	uid := strconv.Itoa(os.Getuid())
	assert.Equal(t, []string{uid, uid, "1"}, strings.Fields(lines[0]))
	own, err := os.Readlink("/proc/self/ns/mnt")
	require.NoError(t, err)
	assert.NotEqual(t, own, lines[1], "a mount namespace of its own")
}
