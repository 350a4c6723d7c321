package supervisor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStoreInside: a run store under the checkout's .git (the default) is
// not inside the checkout; one anywhere else under it is, and so is the
// checkout itself.
func TestStoreInside(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "repo")
	for _, tc := range []struct {
		home string
		want bool
	}{
		{filepath.Join(repo, ".git", "runr"), false},
		{filepath.Join(repo, ".git"), false},
		{filepath.Join(filepath.Dir(repo), "store"), false},
		{filepath.Join(repo, "store"), true},
		{filepath.Join(repo, ".gitx", "runr"), true},
		{repo, true},
	} {
		assert.Equal(t, tc.want, storeInside(tc.home, repo), tc.home)
	}
	// The checkout reached through a link, as a relative --home from a
	// linked working directory names it.
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git"), 0o755))
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(repo, link))
	assert.True(t, storeInside(filepath.Join(link, "store"), repo))
	assert.False(t, storeInside(filepath.Join(link, ".git", "runr"), repo))
}

// TestTaskItemsOfEachTask: the items kept for the last task read are
// never another task's.
func TestTaskItemsOfEachTask(t *testing.T) {
	a, b := "- [ ] one\n- [ ] two\n", "- [ ] three\n"
	for range 2 {
		assert.Equal(t, []string{"one", "two"}, goals(Milestones(a)))
		assert.Equal(t, []string{"three"}, goals(Milestones(b)))
	}
}
