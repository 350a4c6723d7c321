package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A path beneath the working directory is named relative to it; the
// working directory itself, its parents and anything else are absolute; a
// relative path stays as given; control characters are made visible.
func TestShownPath(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	wd := filepath.Join(base, "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(wd, "sub"), 0o755))
	require.NoError(t, os.Symlink(wd, filepath.Join(base, "link")))
	t.Chdir(wd)

	for _, tc := range []struct{ path, want string }{
		{filepath.Join(wd, "TASK.md"), "TASK.md"},
		{filepath.Join(wd, ".git", "runr", "runs", "x", "logs", "tick-0001-implement.log"), filepath.Join(".git", "runr", "runs", "x", "logs", "tick-0001-implement.log")},
		{filepath.Join(base, "link", "sub", "a.txt"), filepath.Join("sub", "a.txt")}, // through a link to the working directory
		{wd, wd},
		{base, base},
		{filepath.Join(base, "other", "runr.yaml"), filepath.Join(base, "other", "runr.yaml")},
		{filepath.Join(base, "repo2", "x"), filepath.Join(base, "repo2", "x")}, // a sibling sharing the prefix
		{"given/relative.md", "given/relative.md"},
		{"", ""},
		{filepath.Join(wd, "a\x1b[2Jb"), `a\x1b[2Jb`},
	} {
		assert.Equal(t, tc.want, shownPath(tc.path), "%q", tc.path)
	}
	assert.Equal(t, filepath.Join(wd, "TASK.md"), repoPath(wd, "TASK.md"))
	assert.Equal(t, "/abs/x", repoPath(wd, "/abs/x"))
}
