package supervisor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunTempsTakeOnlyTheirOwn: run "a"'s leftover directories are its
// own (runr-a- and MkdirTemp's digits), never those of run "a-b" or of
// another program, and RemoveRunTemps leaves the others alone.
func TestRunTempsTakeOnlyTheirOwn(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"runr-a-123", "runr-a-b-456", "runr-a-", "runr-a-12x", "runr-ab-789"} {
		require.NoError(t, os.Mkdir(filepath.Join(base, d), 0o700))
	}
	require.NoError(t, os.WriteFile(filepath.Join(base, "runr-a-999"), nil, 0o600)) // a file, not a dir
	assert.Equal(t, []string{filepath.Join(base, "runr-a-123")}, runTemps(base, "a"))
	assert.Equal(t, []string{filepath.Join(base, "runr-a-b-456")}, runTemps(base, "a-b"))

	t.Setenv("TMPDIR", base)
	RemoveRunTemps("a")
	assert.NoDirExists(t, filepath.Join(base, "runr-a-123"))
	for _, d := range []string{"runr-a-b-456", "runr-a-", "runr-a-12x", "runr-ab-789"} {
		assert.DirExists(t, filepath.Join(base, d))
	}
}
