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
