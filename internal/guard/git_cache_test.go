package guard

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// TestLocateRemembersTheGitFiles: what Locate found stands in for the
// snapshot's own git process while the files through which git found the
// repository are unchanged, for the directory asked about and for the root;
// a config that moves the work tree, or a .git file rewritten, makes it
// stale.
func TestLocateRemembersTheGitFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	_, ok := recall(sub)
	assert.False(t, ok, "nothing located yet")

	top, common, err := Locate(ctx, sub)
	require.NoError(t, err)
	assert.Equal(t, dir, top)
	assert.Equal(t, filepath.Join(dir, ".git"), common)
	asked, err := locateAll(ctx, dir)
	require.NoError(t, err)
	for _, d := range []string{sub, dir} {
		got, ok := recall(d)
		require.True(t, ok, d)
		assert.Equal(t, asked, got, d)
	}

	gitT(t, dir, "config", "core.worktree", t.TempDir())
	_, ok = recall(dir)
	assert.False(t, ok, "the config changed")

	wt := filepath.Join(t.TempDir(), "wt")
	gitT(t, dir, "config", "--unset", "core.worktree")
	commitFiles(t, dir, map[string]string{"a.txt": "a"})
	gitT(t, dir, "worktree", "add", "-q", "--detach", wt)
	_, _, err = Locate(ctx, wt)
	require.NoError(t, err)
	_, ok = recall(wt)
	require.True(t, ok)
	other := newRepo(t, true)
	require.NoError(t, os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+filepath.Join(other, ".git")+"\n"), 0o644))
	_, ok = recall(wt)
	assert.False(t, ok, "the worktree's .git file was rewritten")
}

// TestPrivateTempOutsideTheTree: runr's own temporary files about a tree
// go to the system's temporary directory, unless that lies inside the
// tree, where a status read beside them would list them: then into the
// git dir.
func TestPrivateTempOutsideTheTree(t *testing.T) {
	top := newRepo(t, true)
	gitDir := filepath.Join(top, ".git")
	inside := filepath.Join(top, ".tmp")
	require.NoError(t, os.Mkdir(inside, 0o755))
	// The tree reached through a link: TMPDIR names it so.
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(top, link))
	for _, tc := range []struct {
		tmpdir, want string
	}{
		{t.TempDir(), ""},
		{inside, gitDir},
		{top, gitDir},
		{filepath.Join(link, ".tmp"), gitDir},
	} {
		t.Setenv("TMPDIR", tc.tmpdir)
		d, err := privateTemp(top, gitDir)
		require.NoError(t, err)
		want := tc.want
		if want == "" {
			want = tc.tmpdir
		}
		assert.Equal(t, want, filepath.Dir(d), "TMPDIR=%s", tc.tmpdir)
		require.NoError(t, os.Remove(d))
	}

	// What a runr killed while it took a snapshot left in the git dir goes
	// with the next one there; a recent one (another runr's, under way)
	// stays.
	t.Setenv("TMPDIR", inside)
	old := filepath.Join(gitDir, "runr-guard-123")
	recent := filepath.Join(gitDir, "runr-guard-456")
	for _, d := range []string{old, recent} {
		require.NoError(t, os.Mkdir(d, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(d, "index"), []byte("copy"), 0o600))
	}
	long := time.Now().Add(-2 * staleTemp)
	require.NoError(t, os.Chtimes(old, long, long))
	d, err := privateTemp(top, gitDir)
	require.NoError(t, err)
	defer os.RemoveAll(d)
	assert.NoDirExists(t, old)
	assert.DirExists(t, recent)
}

// TestPrefetchReadsTheConfig: after Prefetch's read, a status in the
// tree finds the drivers it needs kept: the config read is not repeated.
func TestPrefetchReadsTheConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	gitT(t, dir, "config", "filter.evil.clean", "touch pwned")
	Prefetch(ctx, dir)()
	drivers.Lock()
	c, ok := drivers.dirs[dir]
	drivers.Unlock()
	require.True(t, ok, "the config was read")
	assert.Contains(t, c.over, [2]string{"filter.evil.clean", ""})
	assert.True(t, c.fresh())
}
