package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
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

// TestWorktreeRecordedAtOnce: a --worktree run records its worktree and
// branch as soon as it makes them, so that a crash before its first call
// leaves a state whose resume takes the worktree instead of making the
// branch again (which git refuses).
func TestWorktreeRecordedAtOnce(t *testing.T) {
	r := newRun(t, "- [ ] one\n")
	r.flags.Worktree = true
	sup := r.supervisor()
	st := sup.newState(state.NewRunID(time.Now().UTC()), time.Now().UTC())
	lock, err := r.store.CreateRunLocked(st, sup.cfg.Raw)
	require.NoError(t, err)
	defer lock.Release()
	sup.st, sup.lock = st, lock
	require.NoError(t, sup.openRunFiles())
	defer sup.release()
	require.Nil(t, sup.ensureWorktree(context.Background()))

	// What a crash at this instant leaves on disk.
	crashed, err := r.store.Load(st.RunID)
	require.NoError(t, err)
	assert.Equal(t, st.Worktree, crashed.Worktree)
	assert.Equal(t, "runr/"+st.RunID, crashed.Branch)
	again := r.supervisor()
	again.st = crashed
	assert.Nil(t, again.ensureWorktree(context.Background()), "the resume takes the worktree")
	assert.Equal(t, st.Worktree, again.dir)
}
