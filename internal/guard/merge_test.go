package guard

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSquashMergeAndTrailer(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	commitFiles(t, repo, map[string]string{"a.txt": "one\n", "b.txt": "two\n"})
	base := gitT(t, repo, "rev-parse", "HEAD")

	home := t.TempDir()
	main, w1, w2 := filepath.Join(home, "main"), filepath.Join(home, "w1"), filepath.Join(home, "w2")
	require.NoError(t, AddWorktreeAt(ctx, repo, main, "runr/r", base))
	require.NoError(t, AddWorktreeAt(ctx, repo, w1, "runr/r-m1", base))
	require.NoError(t, AddWorktreeAt(ctx, repo, w2, "runr/r-m2", base))
	commitFiles(t, w1, map[string]string{"a.txt": "one by m1\n"})
	commitFiles(t, w2, map[string]string{"a.txt": "one by m2\n"})

	conflicts, err := SquashMerge(ctx, main, "runr/r-m1")
	require.NoError(t, err)
	assert.Empty(t, conflicts)
	sha, err := CommitMilestone(ctx, main, "milestone 1", 1)
	require.NoError(t, err)

	// The second edits the same line: a conflict, named, then undone.
	conflicts, err = SquashMerge(ctx, main, "runr/r-m2")
	require.NoError(t, err)
	assert.Equal(t, []string{"a.txt"}, conflicts)
	require.NoError(t, ResetTo(ctx, main, "HEAD"))
	got, err := os.ReadFile(filepath.Join(main, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "one by m1\n", string(got))

	merged, err := MergedMilestones(ctx, main, base)
	require.NoError(t, err)
	assert.Equal(t, map[int]string{1: sha}, merged)
	assert.Contains(t, gitT(t, main, "log", "-1", "--format=%B"), "Runr-Milestone: 1")

	// Requeued on the new head, the milestone merges on top.
	require.NoError(t, ResetTo(ctx, w2, sha))
	commitFiles(t, w2, map[string]string{"a.txt": "one by m1 and m2\n"})
	conflicts, err = SquashMerge(ctx, main, "runr/r-m2")
	require.NoError(t, err)
	assert.Empty(t, conflicts)
	_, err = CommitMilestone(ctx, main, "milestone 2", 2)
	require.NoError(t, err)
	merged, err = MergedMilestones(ctx, main, base)
	require.NoError(t, err)
	assert.Len(t, merged, 2)
	assert.Equal(t, sha, merged[1])
}
