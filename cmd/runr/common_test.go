package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
}

func realpath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return r
}

func TestDefaultHomeIsInTheGitCommonDir(t *testing.T) {
	root := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", root)
	repo := filepath.Join(root, "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "sub", "deeper"), 0o755))
	git(t, repo, "init", "-q")
	git(t, repo, "commit", "-q", "--allow-empty", "-m", "init")
	want := filepath.Join(realpath(t, filepath.Join(repo, ".git")), "runr")

	for _, dir := range []string{repo, filepath.Join(repo, "sub", "deeper")} {
		home, err := defaultHome(dir)
		require.NoError(t, err, dir)
		assert.True(t, filepath.IsAbs(home), home)
		assert.Equal(t, want, filepath.Join(realpath(t, filepath.Dir(home)), "runr"), dir)
	}

	// Every worktree of a repository shares one run store.
	wt := filepath.Join(root, "wt")
	git(t, repo, "worktree", "add", "-q", wt)
	home, err := defaultHome(wt)
	require.NoError(t, err)
	assert.Equal(t, want, filepath.Join(realpath(t, filepath.Dir(home)), "runr"))

	outside := filepath.Join(root, "plain")
	require.NoError(t, os.Mkdir(outside, 0o755))
	_, err = defaultHome(outside)
	require.Error(t, err)
	assert.Equal(t, stopreasons.EnvironmentInvalid, stopreasons.CodeOf(err))
	assert.Contains(t, err.Error(), "not inside a git repository")
	assert.Contains(t, err.Error(), outside)
}
