package guard

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRepositoryInfo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))

	top, err := TopLevel(ctx, filepath.Join(dir, "a", "b"))
	require.NoError(t, err)
	assert.Equal(t, dir, top)

	common, err := CommonDir(ctx, filepath.Join(dir, "a"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, ".git"), common)

	head, err := Head(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, head, "no commits yet")

	commitFiles(t, dir, map[string]string{"f": "f"})
	head, err = Head(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, gitT(t, dir, "rev-parse", "HEAD"), head)
}

func TestOutsideRepository(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	outside := t.TempDir()

	_, err := TopLevel(ctx, outside)
	require.ErrorIs(t, err, ErrNotRepository)
	assert.Contains(t, err.Error(), outside)
	assert.Contains(t, err.Error(), "git init")

	_, err = CommonDir(ctx, outside)
	assert.ErrorIs(t, err, ErrNotRepository)
	_, err = Head(ctx, outside)
	assert.ErrorIs(t, err, ErrNotRepository)

	_, err = TopLevel(ctx, filepath.Join(outside, "missing"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing")
}

func TestIsIgnored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{".gitignore": "*.log\n"})
	writeFile(t, dir, "tracked.log", "forced\n")
	gitT(t, dir, "add", "--force", "tracked.log")
	gitT(t, dir, "commit", "--quiet", "-m", "force a tracked log")

	for path, want := range map[string]bool{"x.log": true, "deep/y.log": true, "x.txt": false, "tracked.log": false} {
		got, err := IsIgnored(ctx, dir, path)
		require.NoError(t, err)
		assert.Equal(t, want, got, path)
	}
	_, err := IsIgnored(ctx, t.TempDir(), "x")
	assert.Error(t, err)
}

func TestGitCancelled(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Changes(ctx, dir)
	assert.ErrorIs(t, err, context.Canceled)
}
