package guard

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDriverOverridesFollowTheConfig: the overrides are read from git once
// and kept while the config files they came from stay as they were; a
// driver added to the config, or to a file it includes that did not exist
// yet, is seen at the next ask, and so is a new core.excludesFile.
func TestDriverOverridesFollowTheConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	over, _, err := driverOverrides(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, over)
	again, _, err := driverOverrides(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, over, again)

	gitT(t, dir, "config", "filter.evil.clean", "touch pwned")
	over, _, err = driverOverrides(ctx, dir)
	require.NoError(t, err)
	assert.Contains(t, over, [2]string{"filter.evil.clean", ""})

	inc := filepath.Join(t.TempDir(), "more.cfg")
	gitT(t, dir, "config", "include.path", inc)
	_, _, err = driverOverrides(ctx, dir)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(inc, []byte("[diff \"x\"]\n\ttextconv = touch pwned\n"), 0o644))
	over, _, err = driverOverrides(ctx, dir)
	require.NoError(t, err)
	assert.Contains(t, over, [2]string{"diff.x.textconv", ""}, "a driver in an include that appeared after the first read")

	x, err := coreExcludesFile(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, x)
	gitT(t, dir, "config", "core.excludesFile", "/tmp/some-excludes")
	x, err = coreExcludesFile(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, "/tmp/some-excludes", x)
}

// TestDriverOverridesSeeAnotherRepositoryDir: an agent that points git at
// another config through .git/commondir (or a worktree's .git file)
// without touching the config files read before is seen at the next ask:
// the driver that config defines is overridden.
func TestDriverOverridesSeeAnotherRepositoryDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	over, _, err := driverOverrides(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, over)

	// A copy of .git whose config names a filter, and commondir pointing there.
	other := filepath.Join(t.TempDir(), "other.git")
	require.NoError(t, os.CopyFS(other, os.DirFS(filepath.Join(dir, ".git"))))
	require.NoError(t, os.WriteFile(filepath.Join(other, "config"), []byte("[core]\n\trepositoryformatversion = 0\n[filter \"evil\"]\n\tclean = touch pwned\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".git", "commondir"), []byte(other+"\n"), 0o644))
	over, _, err = driverOverrides(ctx, dir)
	require.NoError(t, err)
	assert.Contains(t, over, [2]string{"filter.evil.clean", ""}, "the config git reads now is read again")
}
