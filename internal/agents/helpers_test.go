package agents

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// recorded is one call's stdout and exit code from testdata.
type recorded struct {
	out  []byte
	exit int
}

// load reads testdata/<dir>/<name><ext> and its .exit file.
func load(t *testing.T, dir, name, ext string) recorded {
	t.Helper()
	out, err := os.ReadFile(filepath.Join("testdata", dir, name+ext))
	require.NoError(t, err)
	code, err := os.ReadFile(filepath.Join("testdata", dir, name+".exit"))
	require.NoError(t, err)
	exit, err := strconv.Atoi(strings.TrimSpace(string(code)))
	require.NoError(t, err)
	return recorded{out: out, exit: exit}
}

// run feeds the recording line by line as the supervisor would. On abort it
// stops feeding and finishes as after a killed process group: exit -1 and
// only the output read so far.
func (r recorded) run(p Parser) (Result, bool) {
	lines := bytes.SplitAfter(r.out, []byte("\n"))
	for i, line := range lines {
		if p.Line(bytes.TrimRight(line, "\n")) {
			return p.Finish(-1, lastTail(bytes.Join(lines[:i+1], nil))), true
		}
	}
	return p.Finish(r.exit, lastTail(r.out)), false
}

func lastTail(b []byte) []byte {
	if len(b) > 4096 {
		return b[len(b)-4096:]
	}
	return b
}

func mustLookup(t *testing.T, kind string) Adapter {
	t.Helper()
	a, err := Lookup(kind)
	require.NoError(t, err)
	return a
}
