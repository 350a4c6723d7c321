package doctor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// Each thing in runr's own environment that would turn a run's git calls
// elsewhere, or fail it halfway, is environment_invalid naming it.
func TestRunEnvProblem(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	path := "PATH=" + os.Getenv("PATH")
	for _, c := range []struct {
		env  []string
		want string // "" for no problem
	}{
		{[]string{path}, ""},
		{[]string{path, "TMPDIR=" + dir}, ""},
		{[]string{path, "TMPDIR="}, ""},
		{[]string{path, "GIT_DIR="}, ""},
		{[]string{path, "TMPDIR=" + filepath.Join(dir, "missing")}, "does not exist"},
		{[]string{path, "TMPDIR=" + file}, "is not a directory"},
		{[]string{path, "GIT_DIR=/elsewhere/.git"}, "GIT_DIR is set"},
		{[]string{path, "GIT_WORK_TREE=/elsewhere"}, "GIT_WORK_TREE is set"},
		{[]string{path, "GIT_INDEX_FILE=/elsewhere/index"}, "GIT_INDEX_FILE is set"},
		{[]string{"PATH=" + dir}, "git is not installed or not on PATH"},
	} {
		err := RunEnvProblem(c.env)
		if c.want == "" {
			assert.NoError(t, err, "%v", c.env)
			continue
		}
		require.Error(t, err, "%v", c.env)
		assert.Equal(t, stopreasons.EnvironmentInvalid, stopreasons.CodeOf(err), "%v", c.env)
		assert.Contains(t, err.Error(), c.want, "%v", c.env)
	}
}
